//! Yandex native completion body → OpenAI `chat.completion`, and Yandex
//! error bodies → [`ErrorClass`].
//!
//! Runs when a non-streaming attempt comes back; the stream decoder reuses
//! the per-line pieces (status, tool calls, usage). The result lacks `id`,
//! `created` and `model`, which the gateway stamps (Yandex has no id).

use serde_json::{json, Value};

use crate::providers::gigachat::shared::{arguments_string, as_count, malformed, new_call_id, snippet, usage};
use crate::providers::translate::{ErrorClass, TranslateError};

pub(super) const FORMAT: &str = "yandex";

/// Translates a 2xx native completion body (`{"result":{"alternatives":…}}`)
/// into an OpenAI `chat.completion`.
///
/// `ALTERNATIVE_STATUS_CONTENT_FILTER` is an `Upstream`/`ContentFilter`
/// error, so the runner tries the next model; an `{"error":…}` body is an
/// `Upstream` error classified like an HTTP error.
pub fn from_yandex(body: &[u8]) -> Result<Value, TranslateError> {
    let parsed: Value =
        serde_json::from_slice(body).map_err(|e| malformed(FORMAT, format!("response is not JSON: {e}")))?;
    let result = result_of(&parsed, body)?;
    let alternatives = alternatives(result)?;

    let mut choices = Vec::with_capacity(alternatives.len());
    for (index, alternative) in alternatives.iter().enumerate() {
        let message = alternative.get("message").unwrap_or(&Value::Null);
        let text = message.get("text").and_then(Value::as_str).unwrap_or("");
        let calls = tool_calls(message)?;
        let status = alternative.get("status").and_then(Value::as_str);
        // A non-final status in a whole response means it was cut short.
        let finish = match finish_reason(status, !calls.is_empty())? {
            Some(reason) => reason,
            None if status == Some(PARTIAL) => "length",
            None => "stop",
        };
        let mut out = json!({"role": "assistant", "content": text, "refusal": null});
        if !calls.is_empty() {
            if text.is_empty() {
                out["content"] = Value::Null;
            }
            out["tool_calls"] = calls.into();
        }
        choices.push(json!({
            "index": index,
            "message": out,
            "logprobs": null,
            "finish_reason": finish,
        }));
    }
    let mut completion = json!({"object": "chat.completion", "choices": choices});
    if let Some(u) = result.get("usage").and_then(map_usage) {
        completion["usage"] = u;
    }
    Ok(completion)
}

const PARTIAL: &str = "ALTERNATIVE_STATUS_PARTIAL";

/// The `result` object of a body or stream line; an `error` object becomes
/// an `Upstream` error. A body without the wrapper but with `alternatives`
/// is accepted as is.
pub(super) fn result_of<'a>(parsed: &'a Value, raw: &[u8]) -> Result<&'a Value, TranslateError> {
    if let Some(error) = parsed.get("error").filter(|e| !e.is_null()) {
        // Inside a 2xx body the HTTP status was 200; without an `httpCode`
        // the gRPC code decides.
        let status = as_count(error.get("httpCode")).and_then(|s| u16::try_from(s).ok()).unwrap_or(200);
        let (class, message) = classify_error(status, raw);
        return Err(TranslateError::Upstream { class, message });
    }
    match parsed.get("result") {
        Some(result) if result.is_object() => Ok(result),
        _ if parsed.get("alternatives").is_some() => Ok(parsed),
        _ => Err(malformed(FORMAT, "body without `result`")),
    }
}

pub(super) fn alternatives(result: &Value) -> Result<&Vec<Value>, TranslateError> {
    result
        .get("alternatives")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(FORMAT, "result without `alternatives`"))
}

/// Maps a final alternative status to an OpenAI finish reason (reference
/// §9.2); `None` while the alternative is still being generated (`PARTIAL`,
/// `UNSPECIFIED`, missing). An unknown status reads as final `stop`: newer
/// statuses are expected to be final ones, and waiting forever for a
/// different one would turn a good stream into a broken body.
pub(super) fn finish_reason(status: Option<&str>, has_calls: bool) -> Result<Option<&'static str>, TranslateError> {
    let reason = match status {
        None | Some("ALTERNATIVE_STATUS_UNSPECIFIED") | Some(PARTIAL) => return Ok(None),
        Some("ALTERNATIVE_STATUS_CONTENT_FILTER") => {
            return Err(TranslateError::Upstream {
                class: ErrorClass::ContentFilter,
                message: "Yandex refused the content (ALTERNATIVE_STATUS_CONTENT_FILTER)".into(),
            })
        }
        Some("ALTERNATIVE_STATUS_TRUNCATED_FINAL") => "length",
        Some("ALTERNATIVE_STATUS_TOOL_CALLS") => "tool_calls",
        _ if has_calls => "tool_calls",
        Some(_) => "stop",
    };
    Ok(Some(reason))
}

/// The OpenAI `tool_calls` of a Yandex message, with made-up ids and
/// JSON-string arguments.
pub(super) fn tool_calls(message: &Value) -> Result<Vec<Value>, TranslateError> {
    let Some(list) = message.pointer("/toolCallList/toolCalls").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    list.iter()
        .map(|call| {
            let function = call.get("functionCall").unwrap_or(&Value::Null);
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed(FORMAT, "functionCall without `name`"))?;
            Ok(json!({
                "id": new_call_id(),
                "type": "function",
                "function": {"name": name, "arguments": arguments_string(function.get("arguments"))},
            }))
        })
        .collect()
}

/// Yandex usage (int64 counters as strings) → OpenAI usage.
pub(super) fn map_usage(u: &Value) -> Option<Value> {
    let prompt = as_count(u.get("inputTextTokens"))?;
    let completion = as_count(u.get("completionTokens")).unwrap_or(0);
    let mut usage = usage(prompt, completion, as_count(u.get("totalTokens")));
    if let Some(reasoning) = as_count(u.pointer("/completionTokensDetails/reasoningTokens")) {
        usage.insert("completion_tokens_details".into(), json!({ "reasoning_tokens": reasoning }));
    }
    Some(Value::Object(usage))
}

/// Classifies a Yandex error (an HTTP status with its body, or an error
/// object inside a stream, passed with its `httpCode`).
///
/// The body is grpc-gateway's `{"error":{grpcCode,httpCode,message,…}}`; the
/// plain `{code,message}` form and OpenAI's shape are read too. Definite HTTP
/// statuses decide first; for the rest the gRPC code does. 401 and 403 are
/// both `AuthRejected`: a 403 means the service account lacks
/// `ai.languageModels.user`, a provider-wide setup fault (reference §9.5).
/// Over-long prompts have no machine-readable code and stay
/// `InvalidRequest` (messages are not matched).
pub fn classify_error(status: u16, body: &[u8]) -> (ErrorClass, String) {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().map(|p| match p.get("error") {
        Some(e) if e.is_object() => e,
        _ => p,
    });
    let detail = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(|m| snippet(m.as_bytes()))
        .unwrap_or_else(|| snippet(body));
    let grpc = error.and_then(|e| e.get("grpcCode").or_else(|| e.get("code"))).and_then(Value::as_u64);
    let class = match status {
        401 | 403 => ErrorClass::AuthRejected,
        402 => ErrorClass::QuotaExhausted,
        404 => ErrorClass::NotFound,
        413 => ErrorClass::ContextLength,
        429 => ErrorClass::RateLimited,
        408 | 409 | 500..=599 => ErrorClass::Upstream,
        _ => match grpc {
            Some(8) => ErrorClass::RateLimited,
            Some(7 | 16) => ErrorClass::AuthRejected,
            Some(5) => ErrorClass::NotFound,
            Some(12) => ErrorClass::CapabilityMismatch,
            Some(3 | 9 | 11) => ErrorClass::InvalidRequest,
            Some(1 | 2 | 4 | 10 | 13 | 14 | 15) => ErrorClass::Upstream,
            _ if (400..500).contains(&status) => ErrorClass::InvalidRequest,
            _ => ErrorClass::Upstream,
        },
    };
    (class, format!("Yandex {status}: {detail}"))
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
