//! Gemini `GenerateContentResponse` → OpenAI `chat.completion`, and
//! Gemini's error bodies → [`ErrorClass`] (round3.md §2.3, §2.6).
//!
//! The stream decoder reads every chunk through the same pieces
//! ([`Candidate`], [`Usage`], [`finish_reason`]): a streamed chunk is a
//! whole response holding only the new parts.

use serde_json::{json, Value};
use std::time::Duration;

use crate::providers::classify::class_of_status as by_status;
use crate::providers::translate::{ErrorClass, TranslateError};

/// The format name carried by [`TranslateError::Malformed`].
pub(crate) const FORMAT: &str = "gemini";

pub(crate) fn malformed(detail: impl Into<String>) -> TranslateError {
    TranslateError::Malformed { format: FORMAT, detail: detail.into() }
}

/// Translates a 2xx `generateContent` body into an OpenAI `chat.completion`
/// without `id`, `created` and `model`. A blocked prompt (no candidates,
/// `promptFeedback.blockReason`), an answer the safety filters stopped
/// before any text, and a malformed function call are errors the runner
/// moves on from.
pub fn from_gemini(body: &[u8]) -> Result<Value, TranslateError> {
    let body: Value = serde_json::from_slice(body).map_err(|e| malformed(format!("response is not JSON: {e}")))?;
    check_in_band(&body)?;
    let mut candidate = Candidate::default();
    candidate.read(&body, &mut Counter::default())?;
    let finish = candidate.finish.as_deref().ok_or_else(|| malformed("the candidate has no finishReason"))?;
    let reason = finish_reason(finish, !candidate.calls.is_empty(), !candidate.text.is_empty())?;
    let content = if candidate.text.is_empty() && !candidate.calls.is_empty() {
        Value::Null
    } else {
        Value::from(candidate.text)
    };
    let mut message = json!({ "role": "assistant", "content": content, "refusal": null });
    if !candidate.calls.is_empty() {
        // A whole message's calls carry no stream `index`.
        for call in &mut candidate.calls {
            if let Some(call) = call.as_object_mut() {
                call.remove("index");
            }
        }
        message["tool_calls"] = Value::Array(candidate.calls);
    }
    let mut out = json!({
        "object": "chat.completion",
        "choices": [{ "index": 0, "message": message, "logprobs": null, "finish_reason": reason }],
    });
    if let Some(usage) = Usage::read(&body) {
        out["usage"] = usage.to_openai();
    }
    Ok(out)
}

/// An error object in a 2xx body or stream chunk, or a prompt the safety
/// filters blocked (HTTP 200, no candidates, `promptFeedback.blockReason`).
pub(crate) fn check_in_band(body: &Value) -> Result<(), TranslateError> {
    if let Some(err) = body.get("error").filter(|e| e.is_object()) {
        let (class, message) = classify_value(None, err);
        return Err(TranslateError::Upstream { class, message });
    }
    let no_candidates = body.get("candidates").and_then(Value::as_array).is_none_or(Vec::is_empty);
    if let Some(reason) = body.get("promptFeedback").and_then(|f| f.get("blockReason")).and_then(Value::as_str) {
        if no_candidates {
            return Err(TranslateError::Upstream {
                class: ErrorClass::ContentFilter,
                message: format!("the prompt was blocked: {reason}"),
            });
        }
    }
    Ok(())
}

/// Numbers the tool calls of one answer (a stream's chunks share it).
#[derive(Debug, Default, Clone)]
pub(crate) struct Counter(pub(crate) u64);

/// What one response (or stream chunk) said in its first candidate.
#[derive(Debug, Default)]
pub(crate) struct Candidate {
    /// Its text parts, thoughts left out.
    pub(crate) text: String,
    /// Its `functionCall` parts as OpenAI tool calls (with `index`).
    pub(crate) calls: Vec<Value>,
    /// Its `finishReason`, when it has one.
    pub(crate) finish: Option<String>,
}

impl Candidate {
    /// Reads the first candidate of `body`; a chunk without candidates
    /// (usage only) reads as empty.
    pub(crate) fn read(&mut self, body: &Value, calls: &mut Counter) -> Result<(), TranslateError> {
        let Some(candidate) = body.get("candidates").and_then(Value::as_array).and_then(|c| c.first()) else {
            return Ok(());
        };
        let parts = candidate.get("content").and_then(|c| c.get("parts"));
        let parts = match parts {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(parts)) => parts,
            Some(_) => return Err(malformed("content.parts is not an array")),
        };
        for part in parts {
            // Thought summaries have no place in an OpenAI message.
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                self.text.push_str(text);
            } else if let Some(call) = part.get("functionCall") {
                self.calls.push(tool_call(call, calls)?);
            }
        }
        self.finish = candidate.get("finishReason").and_then(Value::as_str).map(str::to_owned);
        Ok(())
    }
}

/// A `functionCall` part → an OpenAI tool call. Gemini's API gives an `id`
/// only sometimes; without one a `call_…` id is made up (a tool result
/// comes back matched by name, see `request.rs`).
fn tool_call(call: &Value, counter: &mut Counter) -> Result<Value, TranslateError> {
    let name = call.get("name").and_then(Value::as_str).ok_or_else(|| malformed("functionCall without a name"))?;
    let arguments = call.get("args").filter(|a| !a.is_null()).map_or_else(|| "{}".to_owned(), Value::to_string);
    let index = counter.0;
    counter.0 += 1;
    let id = match call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()) {
        Some(id) => id.to_owned(),
        None => format!("call_{:016x}{index}", fastrand::u64(..)),
    };
    Ok(json!({ "index": index, "id": id, "type": "function", "function": { "name": name, "arguments": arguments } }))
}

/// Gemini `finishReason` → OpenAI `finish_reason` (round3.md §2.3).
/// `STOP` also ends a turn of function calls, so `calls` decides. A safety
/// stop with nothing said is an error (the next model may answer); a
/// malformed or unexpected call is the model failing.
pub(crate) fn finish_reason(reason: &str, calls: bool, said: bool) -> Result<&'static str, TranslateError> {
    let filtered = matches!(
        reason,
        "SAFETY"
            | "RECITATION"
            | "BLOCKLIST"
            | "PROHIBITED_CONTENT"
            | "SPII"
            | "IMAGE_SAFETY"
            | "IMAGE_PROHIBITED_CONTENT"
            | "IMAGE_RECITATION"
    );
    match reason {
        _ if filtered && !said && !calls => Err(TranslateError::Upstream {
            class: ErrorClass::ContentFilter,
            message: format!("the answer was stopped: {reason}"),
        }),
        _ if filtered => Ok("content_filter"),
        "MAX_TOKENS" => Ok("length"),
        "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" | "TOO_MANY_TOOL_CALLS" => {
            Err(TranslateError::Upstream { class: ErrorClass::Upstream, message: format!("finishReason {reason}") })
        }
        _ if calls => Ok("tool_calls"),
        // STOP, OTHER, LANGUAGE, new reasons: the answer did end.
        _ => Ok("stop"),
    }
}

/// `usageMetadata` (cumulative in a stream: the last one wins).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    prompt: u64,
    candidates: u64,
    thoughts: u64,
    tool_prompt: u64,
    cached: u64,
}

impl Usage {
    pub(crate) fn read(body: &Value) -> Option<Self> {
        let u = body.get("usageMetadata").and_then(Value::as_object)?;
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        Some(Self {
            prompt: n("promptTokenCount"),
            candidates: n("candidatesTokenCount"),
            thoughts: n("thoughtsTokenCount"),
            tool_prompt: n("toolUsePromptTokenCount"),
            cached: n("cachedContentTokenCount"),
        })
    }

    /// OpenAI `usage`: Gemini's total is prompt + tool-use prompt +
    /// candidates + thoughts, and candidates leave thoughts out, so
    /// thoughts count as completion (and reasoning) tokens and the tool-use
    /// prompt as prompt (round3.md §2.3).
    pub(crate) fn to_openai(self) -> Value {
        let prompt = self.prompt.saturating_add(self.tool_prompt);
        let completion = self.candidates.saturating_add(self.thoughts);
        json!({
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt.saturating_add(completion),
            "prompt_tokens_details": { "cached_tokens": self.cached },
            "completion_tokens_details": { "reasoning_tokens": self.thoughts },
        })
    }
}

/// Classifies a non-2xx Gemini answer (round3.md §2.6); a body that is not
/// Google's error JSON by status alone.
pub fn classify_error(status: u16, body: &[u8]) -> (ErrorClass, String) {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) if v.get("error").is_some_and(Value::is_object) => classify_value(Some(status), &v["error"]),
        _ => (by_status(status), format!("HTTP {status}")),
    }
}

/// Classifies Google's `error` object: `code` (the HTTP status), `status`
/// (the gRPC name), `details` (`ErrorInfo.reason`, `QuotaFailure`).
pub(crate) fn classify_value(status: Option<u16>, err: &Value) -> (ErrorClass, String) {
    let grpc = err.get("status").and_then(Value::as_str).unwrap_or("");
    let text = err.get("message").and_then(Value::as_str).unwrap_or("");
    let status = status.or_else(|| err.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok()));
    let details = err.get("details").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let reason = |r: &str| details.iter().any(|d| d.get("reason").and_then(Value::as_str) == Some(r));
    // `…PerDay…` quotas (the free tier's requests per day) clear at
    // midnight Pacific, `…PerMinute…` ones in seconds (round3.md §2.6).
    let daily = details
        .iter()
        .filter_map(|d| d.get("violations").and_then(Value::as_array))
        .flatten()
        .filter_map(|v| v.get("quotaId").and_then(Value::as_str))
        .any(|q| q.contains("PerDay"));
    let lower = text.to_ascii_lowercase();
    let class = match (status, grpc) {
        // An invalid key is a 400 with reason API_KEY_INVALID, not a 401.
        _ if reason("API_KEY_INVALID") || grpc == "UNAUTHENTICATED" => ErrorClass::AuthRejected,
        (Some(429), _) | (_, "RESOURCE_EXHAUSTED") if daily => ErrorClass::QuotaExhausted,
        (Some(429), _) | (_, "RESOURCE_EXHAUSTED") => ErrorClass::RateLimited,
        // Billing must be enabled, or the free tier is not offered here.
        (_, "FAILED_PRECONDITION") => ErrorClass::Forbidden,
        // The wording of a prompt over the context window is not in the
        // reference: "The input token count (N) exceeds the maximum number
        // of tokens allowed (M)." is what is commonly reported (unverified).
        (Some(400), _) | (_, "INVALID_ARGUMENT")
            if lower.contains("exceeds the maximum number of tokens") || lower.contains("input token count") =>
        {
            ErrorClass::ContextLength
        }
        (_, "PERMISSION_DENIED") => ErrorClass::Forbidden,
        (_, "NOT_FOUND") => ErrorClass::NotFound,
        (_, "INTERNAL" | "UNAVAILABLE" | "DEADLINE_EXCEEDED") => ErrorClass::Upstream,
        (Some(s), _) => by_status(s),
        (None, _) => ErrorClass::Upstream,
    };
    let message = if grpc.is_empty() { text.to_owned() } else { format!("{grpc}: {text}") };
    (class, message)
}

/// The wait of a `RetryInfo` detail (`"retryDelay": "34.4s"`, a protobuf
/// Duration in seconds).
pub fn retry_delay(body: &[u8]) -> Option<Duration> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let details = v.get("error")?.get("details")?.as_array()?;
    let delay = details.iter().find_map(|d| d.get("retryDelay").and_then(Value::as_str))?;
    let secs: f64 = delay.strip_suffix('s')?.parse().ok()?;
    (secs.is_finite() && (0.0..=86_400.0 * 7.0).contains(&secs)).then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
