//! Gemini API (generativelanguage v1beta) bodies, SSE streams and errors
//! as round3.md §2.3–§2.6 shows them: `candidates[].content.parts`,
//! `finishReason`, cumulative `usageMetadata`, no `[DONE]`, Google's error
//! JSON with `details`.

use crate::reply::{Reply, Step};
use bytes::Bytes;
use serde_json::{json, Value};

/// The suffixes of the whole and streamed calls (`/models/{m}:…`).
pub const PATHS: [&str; 2] = [":generateContent", ":streamGenerateContent"];

/// The API root's path, as a `base_url` ends.
pub const ROOT: &str = "/v1beta";

/// Usage as Gemini reports it (thoughts apart from candidates).
pub fn usage(prompt: u64, candidates: u64, thoughts: u64) -> Value {
    json!({"promptTokenCount": prompt, "candidatesTokenCount": candidates, "thoughtsTokenCount": thoughts,
           "totalTokenCount": prompt + candidates + thoughts})
}

/// A response with one candidate of `parts`.
pub fn response(parts: Value, finish: Option<&str>, usage_metadata: Value) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    json!({"candidates": [candidate], "usageMetadata": usage_metadata,
           "modelVersion": "gemini-2.5-flash", "responseId": "resp-fake"})
}

/// A 200 answering `text`.
pub fn text(text: &str) -> Reply {
    Reply::json(response(json!([{"text": text}]), Some("STOP"), usage(21, 7, 12)))
}

/// A 200 with one function call (no id, as the API mostly sends them).
pub fn function_call(name: &str, args: Value) -> Reply {
    let parts = json!([{"functionCall": {"name": name, "args": args}, "thoughtSignature": "EskgCsYgAdHtim9fake"}]);
    Reply::json(response(parts, Some("STOP"), usage(40, 10, 0)))
}

fn sse(v: &Value) -> Step {
    Step::Bytes(Bytes::from(format!("data: {v}\r\n\r\n")))
}

fn stream_of(events: Vec<Value>) -> Reply {
    let mut reply = Reply::sse_raw(&[]);
    for e in events {
        reply = reply.then(sse(&e));
    }
    reply
}

/// The events of a streamed text answer: one per piece, the last with
/// `finishReason`; the stream then simply ends.
pub fn stream_events(pieces: &[&str]) -> Vec<Value> {
    let n = pieces.len();
    pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let last = i + 1 == n;
            response(json!([{"text": p}]), last.then_some("STOP"), usage(21, i as u64 + 1, 0))
        })
        .collect()
}

/// A streamed text answer.
pub fn stream(pieces: &[&str]) -> Reply {
    stream_of(stream_events(pieces))
}

/// A streamed function call (whole in one part).
pub fn function_call_stream(name: &str, args: Value) -> Reply {
    stream_of(vec![response(json!([{"functionCall": {"name": name, "args": args}}]), Some("STOP"), usage(40, 10, 0))])
}

/// Google's error JSON.
pub fn error(code: u16, status: &str, message: &str, details: Value) -> Reply {
    let body = json!({"error": {"code": code, "message": message, "status": status, "details": details}});
    Reply::raw(code, "application/json", body.to_string())
}

/// The free tier's per-minute 429 with its `RetryInfo`.
pub fn rate_limited(quota_id: &str, retry_delay: &str) -> Reply {
    error(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details.",
        json!([{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaId": quota_id}]},
               {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}]),
    )
}

/// An invalid key: 400 with reason `API_KEY_INVALID` (not a 401).
pub fn invalid_key() -> Reply {
    error(
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
        json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]),
    )
}

/// A blocked prompt: HTTP 200, no candidates, `promptFeedback.blockReason`.
pub fn blocked_prompt() -> Reply {
    Reply::json(json!({"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": [
        {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}]},
        "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8}}))
}

/// `GET /models`: `(id, inputTokenLimit, methods)` entries and a page token.
pub fn models(entries: &[(&str, u64, &[&str])], next_page: Option<&str>) -> Reply {
    let models: Vec<Value> = entries
        .iter()
        .map(|(id, limit, methods)| {
            json!({"name": format!("models/{id}"), "version": "001", "displayName": id, "inputTokenLimit": limit,
                   "outputTokenLimit": 65536, "supportedGenerationMethods": methods})
        })
        .collect();
    let mut body = json!({"models": models});
    if let Some(token) = next_page {
        body["nextPageToken"] = json!(token);
    }
    Reply::json(body)
}
