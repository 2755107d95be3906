//! Bedrock `Converse` response → OpenAI `chat.completion`, and Bedrock's
//! errors → [`ErrorClass`] (round3.md §3.3, §3.6). The stream decoder
//! shares the stop-reason, usage and exception mappings.

use http::HeaderMap;
use serde_json::{json, Value};

use crate::providers::classify::class_of_status as by_status;
use crate::providers::translate::{ErrorClass, TranslateError};

/// The format name carried by [`TranslateError::Malformed`].
pub(crate) const FORMAT: &str = "bedrock";

pub(crate) fn malformed(detail: impl Into<String>) -> TranslateError {
    TranslateError::Malformed { format: FORMAT, detail: detail.into() }
}

/// Translates a 2xx Converse body into an OpenAI `chat.completion`
/// without `id`, `created` and `model`.
pub fn from_converse(body: &[u8]) -> Result<Value, TranslateError> {
    let body: Value = serde_json::from_slice(body).map_err(|e| malformed(format!("response is not JSON: {e}")))?;
    let blocks = body
        .get("output")
        .and_then(|o| o.get("message"))
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("response has no output.message.content array"))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in blocks {
        if let Some(t) = block.get("text").and_then(Value::as_str) {
            text.push_str(t);
        } else if let Some(call) = block.get("toolUse") {
            calls.push(tool_call(call)?);
        }
        // reasoningContent, citations, images: no place in an OpenAI message.
    }
    let stop = body.get("stopReason").and_then(Value::as_str).ok_or_else(|| malformed("response has no stopReason"))?;
    let reason = finish_reason(stop, !text.is_empty() || !calls.is_empty())?;
    let content = if text.is_empty() && !calls.is_empty() { Value::Null } else { Value::from(text) };
    let mut message = json!({ "role": "assistant", "content": content, "refusal": null });
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    let mut out = json!({
        "object": "chat.completion",
        "choices": [{ "index": 0, "message": message, "logprobs": null, "finish_reason": reason }],
    });
    if let Some(usage) = body.get("usage").filter(|u| u.is_object()) {
        out["usage"] = usage_to_openai(usage);
    }
    Ok(out)
}

fn tool_call(call: &Value) -> Result<Value, TranslateError> {
    let id = call.get("toolUseId").and_then(Value::as_str).ok_or_else(|| malformed("toolUse without toolUseId"))?;
    let name = call.get("name").and_then(Value::as_str).ok_or_else(|| malformed("toolUse without name"))?;
    let arguments = call.get("input").filter(|i| !i.is_null()).map_or_else(|| "{}".to_owned(), Value::to_string);
    Ok(json!({ "id": id, "type": "function", "function": { "name": name, "arguments": arguments } }))
}

/// Converse `stopReason` → OpenAI `finish_reason` (round3.md §3.3). A
/// guardrail or filter stop with nothing said is a content-filter failure
/// (the next model may answer); a malformed output is the model failing.
pub(crate) fn finish_reason(stop: &str, said: bool) -> Result<&'static str, TranslateError> {
    match stop {
        "max_tokens" | "model_context_window_exceeded" => Ok("length"),
        "tool_use" => Ok("tool_calls"),
        "guardrail_intervened" | "content_filtered" if !said => {
            Err(TranslateError::Upstream { class: ErrorClass::ContentFilter, message: format!("stopReason {stop}") })
        }
        "guardrail_intervened" | "content_filtered" => Ok("content_filter"),
        "malformed_model_output" | "malformed_tool_use" => {
            Err(TranslateError::Upstream { class: ErrorClass::Upstream, message: format!("stopReason {stop}") })
        }
        // end_turn, stop_sequence, and new reasons: the message did end.
        _ => Ok("stop"),
    }
}

/// Converse `usage` → OpenAI `usage`. Whether `inputTokens` includes the
/// cache's reads and writes is not in the reference; it is taken to leave
/// them out, as Anthropic's `input_tokens` (the models behind most cached
/// Converse calls) does, so they are added: unverified.
pub(crate) fn usage_to_openai(usage: &Value) -> Value {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    let cached = n("cacheReadInputTokens");
    let prompt = n("inputTokens").saturating_add(cached).saturating_add(n("cacheWriteInputTokens"));
    let completion = n("outputTokens");
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt.saturating_add(completion),
        "prompt_tokens_details": { "cached_tokens": cached },
    })
}

/// Classifies a non-2xx Bedrock answer: the exception's name from
/// `x-amzn-ErrorType` (the part before `:`), else the body's `__type`
/// (after `#`) or `code`; its text from `message`.
pub fn classify_error(status: u16, headers: &HeaderMap, body: &[u8]) -> (ErrorClass, String) {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let from_body = |k: &str| parsed.as_ref().and_then(|v| v.get(k)).and_then(Value::as_str);
    let name = headers
        .get("x-amzn-errortype")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(':').next().unwrap_or(v))
        .or_else(|| from_body("__type").map(|t| t.rsplit('#').next().unwrap_or(t)))
        .or_else(|| from_body("code"))
        .unwrap_or("");
    let text = from_body("message").or_else(|| from_body("Message")).unwrap_or("");
    let class = exception_class(name, text).unwrap_or_else(|| by_status(status));
    let message = if name.is_empty() { format!("HTTP {status}: {text}") } else { format!("{name}: {text}") };
    (class, message)
}

/// An exception's class by its name (HTTP errors and stream exceptions
/// alike; stream exception names start lower-case).
pub(crate) fn exception_class(name: &str, text: &str) -> Option<ErrorClass> {
    let lower = text.to_ascii_lowercase();
    let class = match name.trim_end_matches("Exception").to_ascii_lowercase().as_str() {
        "throttling" => ErrorClass::RateLimited,
        // Not transient on this model: a limit the account must raise.
        "servicequotaexceeded" => ErrorClass::QuotaExhausted,
        "validation"
            if ["too long", "too many input tokens", "context window", "context length", "input length"]
                .iter()
                .any(|w| lower.contains(w)) =>
        {
            ErrorClass::ContextLength
        }
        // A model without tool use or structured output: the next one may
        // have it. (The wording is not in the reference: guessed from the
        // field names such an error would name.)
        "validation"
            if ["outputconfig", "textformat", "structured output", "tool use", "tooluse", "toolconfig"]
                .iter()
                .any(|w| lower.contains(w))
                && lower.contains("support") =>
        {
            ErrorClass::CapabilityMismatch
        }
        "validation" => ErrorClass::InvalidRequest,
        // The model is not enabled for the account, or not in the region.
        "accessdenied" => ErrorClass::Forbidden,
        // Wrong or expired credentials, a bad signature: the whole
        // provider is unusable (names from AWS's common errors, not the
        // reference).
        "unrecognizedclient"
        | "invalidsignature"
        | "expiredtoken"
        | "incompletesignature"
        | "missingauthenticationtoken" => ErrorClass::AuthRejected,
        "resourcenotfound" => ErrorClass::NotFound,
        // The SDKs retry these: transient.
        "modelnotready" | "modeltimeout" | "modelerror" | "modelstreamerror" | "internalserver"
        | "serviceunavailable" => ErrorClass::Upstream,
        _ => return None,
    };
    Some(class)
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
