//! Anthropic Messages response → OpenAI `chat.completion`, and Anthropic
//! error bodies → [`ErrorClass`].
//!
//! Runs after a non-streaming attempt returns: a 2xx body goes through
//! [`from_anthropic`] and on to the client (after the gateway stamps `id`,
//! `created` and `model`); any other status goes through [`classify_error`]
//! so the cascade runner knows whether to fall through, mark the model dead
//! or hand the error back to the client (SPEC §6, reference §4.4, §9.5).
//! The stream decoder reuses the finish-reason, usage and error mappings.

use serde_json::{json, Map, Value};

use crate::providers::translate::{ErrorClass, TranslateError};

/// The format name carried by [`TranslateError::Malformed`].
pub(crate) const FORMAT: &str = "anthropic";

pub(crate) fn malformed(detail: impl Into<String>) -> TranslateError {
    TranslateError::Malformed { format: FORMAT, detail: detail.into() }
}

/// Translates a 2xx Anthropic `message` body into an OpenAI
/// `chat.completion` object without `id`, `created` and `model`.
///
/// An error body that arrived with a 2xx status is returned as
/// [`TranslateError::Upstream`].
pub fn from_anthropic(body: &[u8]) -> Result<Value, TranslateError> {
    let body: Value = serde_json::from_slice(body).map_err(|e| malformed(format!("response is not JSON: {e}")))?;
    if body.get("type").and_then(Value::as_str) == Some("error") {
        let (class, message) = classify_value(None, &body);
        return Err(TranslateError::Upstream { class, message });
    }
    let blocks =
        body.get("content").and_then(Value::as_array).ok_or_else(|| malformed("response has no `content` array"))?;

    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => tool_calls.push(tool_call(block)?),
            // Thinking, redacted thinking and server-tool blocks have no
            // place in an OpenAI message; dropping them is the documented
            // choice (reference §4.5).
            _ => {}
        }
    }
    let content = if text.is_empty() && !tool_calls.is_empty() { Value::Null } else { Value::from(text) };
    let mut message = json!({ "role": "assistant", "content": content, "refusal": null });
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    let stop_reason = body.get("stop_reason").and_then(Value::as_str);
    let mut out = json!({
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason(stop_reason),
        }],
    });
    if let Some(usage) = body.get("usage").and_then(Value::as_object) {
        out["usage"] = UsageTally::from_anthropic(usage).to_openai();
    }
    Ok(out)
}

/// `tool_use` block → OpenAI tool call; `input` is re-encoded as the JSON
/// string OpenAI clients expect, the id passes through unchanged (§9.4).
fn tool_call(block: &Value) -> Result<Value, TranslateError> {
    let id = block.get("id").and_then(Value::as_str).ok_or_else(|| malformed("tool_use block without id"))?;
    let name = block.get("name").and_then(Value::as_str).ok_or_else(|| malformed("tool_use block without name"))?;
    let arguments = block.get("input").map_or_else(|| "{}".to_owned(), Value::to_string);
    Ok(json!({ "id": id, "type": "function", "function": { "name": name, "arguments": arguments } }))
}

/// Anthropic `stop_reason` → OpenAI `finish_reason` (reference §9.2).
/// Unknown or missing reasons become `stop`: the message did end, and new
/// reasons should not break clients.
pub(crate) fn finish_reason(stop_reason: Option<&str>) -> &'static str {
    match stop_reason {
        Some("max_tokens" | "model_context_window_exceeded") => "length",
        Some("tool_use") => "tool_calls",
        Some("refusal") => "content_filter",
        _ => "stop",
    }
}

/// Token counts as Anthropic reports them, kept apart so a stream can update
/// them field by field (`message_delta` counts are cumulative, §4.3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct UsageTally {
    pub(crate) input: u64,
    pub(crate) cache_creation: u64,
    pub(crate) cache_read: u64,
    pub(crate) output: u64,
}

impl UsageTally {
    pub(crate) fn from_anthropic(usage: &Map<String, Value>) -> Self {
        let mut tally = Self::default();
        tally.update(usage);
        tally
    }

    /// Overwrites every count the object carries; absent counts stay.
    pub(crate) fn update(&mut self, usage: &Map<String, Value>) {
        let read = |key: &str, into: &mut u64| {
            if let Some(n) = usage.get(key).and_then(Value::as_u64) {
                *into = n;
            }
        };
        read("input_tokens", &mut self.input);
        read("cache_creation_input_tokens", &mut self.cache_creation);
        read("cache_read_input_tokens", &mut self.cache_read);
        read("output_tokens", &mut self.output);
    }

    /// OpenAI `usage` (reference §9.3): Anthropic's `input_tokens` leaves out
    /// cached tokens, OpenAI's `prompt_tokens` includes them.
    pub(crate) fn to_openai(self) -> Value {
        let prompt = self.input.saturating_add(self.cache_creation).saturating_add(self.cache_read);
        json!({
            "prompt_tokens": prompt,
            "completion_tokens": self.output,
            "total_tokens": prompt.saturating_add(self.output),
            "prompt_tokens_details": { "cached_tokens": self.cache_read },
        })
    }
}

/// Classifies an Anthropic error response (reference §4.4, §9.5). Bodies
/// that are not Anthropic JSON (a proxy's HTML, an empty 502) are classified
/// by status alone. The message is meant for the attempt log.
pub fn classify_error(status: u16, body: &[u8]) -> (ErrorClass, String) {
    match serde_json::from_slice::<Value>(body) {
        Ok(value) if value.get("error").is_some_and(Value::is_object) => classify_value(Some(status), &value),
        _ => (class_from_status(Some(status)), format!("HTTP {status}: {}", snippet(body))),
    }
}

/// Classifies a parsed `{"type":"error","error":{...}}` object. `status` is
/// `None` for errors that arrive inside a 2xx stream or body.
pub(crate) fn classify_value(status: Option<u16>, body: &Value) -> (ErrorClass, String) {
    let error = body.get("error");
    let kind = error.and_then(|e| e.get("type")).and_then(Value::as_str).unwrap_or("");
    let text = error.and_then(|e| e.get("message")).and_then(Value::as_str).unwrap_or("");
    let code =
        error.and_then(|e| e.get("details")).and_then(|d| d.get("error_code")).and_then(Value::as_str).unwrap_or("");
    let message = if kind.is_empty() { text.to_owned() } else { format!("{kind}: {text}") };
    let lower = text.to_ascii_lowercase();

    let class = if code == "enforced_spend_limit_reached" || kind == "billing_error" || status == Some(402) {
        // A monthly cap or unpaid bill: retrying within hours is pointless.
        ErrorClass::QuotaExhausted
    } else if lower.contains("prompt is too long") || lower.contains("exceed context limit") {
        // Anthropic signals context overflow only in the message (§9.5);
        // the second form is its "input length and `max_tokens` exceed
        // context limit" variant.
        ErrorClass::ContextLength
    } else {
        match kind {
            "overloaded_error" | "api_error" | "timeout_error" => ErrorClass::Upstream,
            "rate_limit_error" => ErrorClass::RateLimited,
            "authentication_error" => ErrorClass::AuthRejected,
            "permission_error" => ErrorClass::Forbidden,
            "not_found_error" => ErrorClass::NotFound,
            // Anthropic uses invalid_request_error for several 4xx codes, so
            // a telling status still wins (e.g. 429 with this type).
            "invalid_request_error" | "request_too_large" => match class_from_status(status) {
                ErrorClass::Upstream => ErrorClass::InvalidRequest,
                other => other,
            },
            _ => class_from_status(status),
        }
    };
    (class, message)
}

/// 5xx, 529, and an error without a status (inside a 2xx stream) are
/// upstream failures; 408/409 too (the SDK retries them).
fn class_from_status(status: Option<u16>) -> ErrorClass {
    status.map_or(ErrorClass::Upstream, crate::providers::classify::class_of_status)
}

/// The start of a non-JSON body on one line, for the attempt log.
fn snippet(body: &[u8]) -> String {
    const MAX_CHARS: usize = 200;
    let text = String::from_utf8_lossy(body);
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        return "(empty body)".to_owned();
    }
    if one_line.chars().count() <= MAX_CHARS {
        return one_line;
    }
    let cut: String = one_line.chars().take(MAX_CHARS).collect();
    format!("{cut}…")
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
