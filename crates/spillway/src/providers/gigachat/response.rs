//! GigaChat v1 response body → OpenAI `chat.completion`, and GigaChat error
//! bodies → [`ErrorClass`].
//!
//! Runs when a non-streaming attempt comes back. The result lacks `id`,
//! `created` and `model`: the gateway stamps those (GigaChat has no id, and
//! the client must see the model ref, not `GigaChat:2.0.28.2`).

use serde_json::{json, Map, Value};

use super::shared::{arguments_string, as_count, malformed, new_call_id, snippet, usage};
use crate::providers::translate::{ErrorClass, TranslateError};

const FORMAT: &str = "gigachat";

/// Translates a 2xx GigaChat chat body into an OpenAI `chat.completion`.
///
/// A `blacklist` finish (the censorship filter answered with a canned text)
/// is an `Upstream`/`ContentFilter` error rather than a `content_filter`
/// answer, so the runner tries the next model instead of returning the
/// canned refusal; `error` is an `Upstream` failure.
pub fn from_gigachat(body: &[u8]) -> Result<Value, TranslateError> {
    let parsed: Value =
        serde_json::from_slice(body).map_err(|e| malformed(FORMAT, format!("response is not JSON: {e}")))?;
    let choices = parsed
        .get("choices")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(FORMAT, "response without `choices`"))?;

    let mut out_choices = Vec::with_capacity(choices.len());
    for (position, choice) in choices.iter().enumerate() {
        let message = choice
            .get("message")
            .filter(|m| m.is_object())
            .ok_or_else(|| malformed(FORMAT, "choice without `message`"))?;
        let content = message.get("content").and_then(Value::as_str).unwrap_or("");
        let function_call = message.get("function_call").filter(|f| f.is_object());
        let finish =
            finish_reason(choice.get("finish_reason").and_then(Value::as_str), function_call.is_some(), content)?;

        let mut out = Map::new();
        out.insert("role".into(), "assistant".into());
        out.insert("refusal".into(), Value::Null);
        match function_call {
            Some(call) => {
                let name = call
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed(FORMAT, "function_call without `name`"))?;
                // OpenAI clients expect null content next to tool calls;
                // GigaChat sends "" there.
                let content = if content.is_empty() { Value::Null } else { content.into() };
                out.insert("content".into(), content);
                out.insert(
                    "tool_calls".into(),
                    json!([{
                        "id": new_call_id(),
                        "type": "function",
                        "function": {"name": name, "arguments": arguments_string(call.get("arguments"))},
                    }]),
                );
            }
            None => {
                out.insert("content".into(), content.into());
            }
        }
        out_choices.push(json!({
            "index": choice.get("index").and_then(Value::as_u64).unwrap_or(position as u64),
            "message": out,
            "logprobs": null,
            "finish_reason": finish,
        }));
    }

    let mut completion = json!({"object": "chat.completion", "choices": out_choices});
    if let Some(u) = parsed.get("usage").and_then(map_usage) {
        completion["usage"] = u;
    }
    Ok(completion)
}

/// Maps a GigaChat finish reason to OpenAI's (reference §9.2). An unknown or
/// missing reason reads as `stop` (or `tool_calls` when a call is present):
/// the body itself was complete, and OpenAI clients reject unknown values.
pub(super) fn finish_reason(reason: Option<&str>, has_call: bool, text: &str) -> Result<&'static str, TranslateError> {
    match reason {
        Some("blacklist") => Err(TranslateError::Upstream {
            class: ErrorClass::ContentFilter,
            message: format!("GigaChat refused the topic (blacklist): {}", snippet(text.as_bytes())),
        }),
        Some("error") => Err(TranslateError::Upstream {
            class: ErrorClass::Upstream,
            message: "GigaChat finished the generation with `error`".into(),
        }),
        _ if has_call => Ok("tool_calls"),
        Some("length") => Ok("length"),
        Some("function_call") => Ok("tool_calls"),
        _ => Ok("stop"),
    }
}

/// GigaChat usage → OpenAI usage; `precached_prompt_tokens` are the prompt
/// tokens served from cache, OpenAI's `cached_tokens`.
pub(super) fn map_usage(u: &Value) -> Option<Value> {
    let prompt = as_count(u.get("prompt_tokens"))?;
    let completion = as_count(u.get("completion_tokens")).unwrap_or(0);
    let mut usage = usage(prompt, completion, as_count(u.get("total_tokens")));
    if let Some(cached) = as_count(u.get("precached_prompt_tokens")) {
        usage.insert("prompt_tokens_details".into(), json!({ "cached_tokens": cached }));
    }
    Some(Value::Object(usage))
}

/// Classifies a non-2xx GigaChat chat response (reference §5.4, §9.5).
///
/// The body is `{"status":..,"message":..}` when GigaChat itself answered;
/// proxies may send HTML, so anything else is classified by status alone and
/// quoted (shortened) in the message. 413 means the prompt is too large for
/// the model, which a model with a larger context may still take, so it is
/// `ContextLength`; 422 is GigaChat's validation error, the client's
/// problem. GigaChat has no machine-readable code for an over-long prompt, and
/// messages are not matched, so such a 400/422 stays `InvalidRequest`.
pub fn classify_error(status: u16, body: &[u8]) -> (ErrorClass, String) {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let detail = parsed
        .as_ref()
        .and_then(|v| v.get("message"))
        .and_then(Value::as_str)
        .map(|m| snippet(m.as_bytes()))
        .unwrap_or_else(|| snippet(body));
    let class = match status {
        401 => ErrorClass::AuthRejected,
        402 => ErrorClass::QuotaExhausted,
        403 => ErrorClass::Forbidden,
        404 => ErrorClass::NotFound,
        413 => ErrorClass::ContextLength,
        429 => ErrorClass::RateLimited,
        // Request timeout and conflict are transient, like a 5xx.
        408 | 409 => ErrorClass::Upstream,
        400..=499 => ErrorClass::InvalidRequest,
        _ => ErrorClass::Upstream,
    };
    (class, format!("GigaChat {status}: {detail}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::gigachat::test_support::{fixture, validate_response};

    #[test]
    fn text_answer() {
        let out = from_gigachat(&fixture("gigachat/response_text.json")).unwrap();
        validate_response(&out);
        assert_eq!(out["choices"][0]["message"]["content"], "Привет! Чем могу помочь?");
        assert_eq!(out["choices"][0]["finish_reason"], "stop");
        assert_eq!(out["usage"]["prompt_tokens"], 12);
        assert_eq!(out["usage"]["total_tokens"], 22);
        assert_eq!(out["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
        assert!(out.get("id").is_none());
    }

    #[test]
    fn function_call_becomes_tool_call() {
        let out = from_gigachat(&fixture("gigachat/response_function_call.json")).unwrap();
        validate_response(&out);
        let message = &out["choices"][0]["message"];
        assert_eq!(out["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(message["content"], Value::Null);
        let call = &message["tool_calls"][0];
        assert!(call["id"].as_str().unwrap().starts_with("call_"));
        assert_eq!(call["function"]["name"], "get_weather");
        let args: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args, json!({"city": "Москва"}));
    }

    #[test]
    fn blacklist_is_a_content_filter_error() {
        let err = from_gigachat(&fixture("gigachat/response_blacklist.json")).unwrap_err();
        assert!(matches!(err, TranslateError::Upstream { class: ErrorClass::ContentFilter, .. }));
        let body = br#"{"choices":[{"index":0,"finish_reason":"error","message":{"role":"assistant","content":""}}]}"#;
        assert!(matches!(from_gigachat(body), Err(TranslateError::Upstream { class: ErrorClass::Upstream, .. })));
    }

    #[test]
    fn broken_bodies_are_malformed() {
        for body in [&b"<html>"[..], b"{}", br#"{"choices":[{"index":0}]}"#] {
            assert!(matches!(from_gigachat(body), Err(TranslateError::Malformed { .. })));
        }
    }

    #[test]
    fn classifies_errors() {
        let cases = [
            (400, ErrorClass::InvalidRequest),
            (401, ErrorClass::AuthRejected),
            (402, ErrorClass::QuotaExhausted),
            (403, ErrorClass::Forbidden),
            (404, ErrorClass::NotFound),
            (413, ErrorClass::ContextLength),
            (422, ErrorClass::InvalidRequest),
            (429, ErrorClass::RateLimited),
            (500, ErrorClass::Upstream),
            (503, ErrorClass::Upstream),
        ];
        for (status, class) in cases {
            let body = format!(r#"{{"status":{status},"message":"No such model"}}"#);
            let (got, message) = classify_error(status, body.as_bytes());
            assert_eq!(got, class, "status {status}");
            assert_eq!(message, format!("GigaChat {status}: No such model"));
        }
        let (class, message) = classify_error(502, b"<html>Bad Gateway</html>");
        assert_eq!(class, ErrorClass::Upstream);
        assert!(message.contains("Bad Gateway"));
        let body = fixture("gigachat/error_404.json");
        assert_eq!(classify_error(404, &body).0, ErrorClass::NotFound);
    }
}
