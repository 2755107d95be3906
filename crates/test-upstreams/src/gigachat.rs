//! GigaChat v1 bodies, SSE streams and OAuth answers, shaped exactly as the
//! wire-format reference (§5.1, §5.2, §5.4) shows them: no ids,
//! `object: "chat.completion"` on chunks, usage in the finish chunk, function
//! arguments as JSON objects, expiries in Unix milliseconds.

use crate::reply::{Reply, Step};
use bytes::Bytes;
use serde_json::{json, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The chat path of the v1 contract.
pub const CHAT_PATH: &str = "/api/v1/chat/completions";
/// The OAuth path.
pub const OAUTH_PATH: &str = "/api/v2/oauth";

fn usage() -> Value {
    json!({"prompt_tokens": 138, "completion_tokens": 21, "total_tokens": 159, "precached_prompt_tokens": 0})
}

/// A completion body with one message and a finish reason.
pub fn completion(message: Value, finish: &str) -> Value {
    json!({"choices": [{"index": 0, "finish_reason": finish, "message": message}],
           "created": 1_706_016_586, "model": "GigaChat-2-Max", "object": "chat.completion",
           "usage": usage()})
}

/// A 200 answering `text`.
pub fn text(text: &str) -> Reply {
    Reply::json(completion(json!({"role": "assistant", "content": text}), "stop"))
}

/// A 200 with a function call (arguments as an object).
pub fn function_call(name: &str, arguments: Value) -> Reply {
    Reply::json(completion(
        json!({"role": "assistant", "content": "",
               "function_call": {"name": name, "arguments": arguments},
               "functions_state_id": "77d3fb14-0000-4000-8000-000000000000"}),
        "function_call",
    ))
}

/// A 200 refused by the censorship filter (a canned text).
pub fn blacklist() -> Reply {
    Reply::json(completion(
        json!({"role": "assistant", "content": "Не люблю менять тему разговора, но вот сейчас тот самый случай."}),
        "blacklist",
    ))
}

/// An error body `{"status":…,"message":…}`.
pub fn error(status: u16, message: &str) -> Reply {
    Reply::raw(status, "application/json", json!({"status": status, "message": message}).to_string())
}

fn data(v: &Value) -> String {
    format!("data: {v}\n\n")
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    let mut c = json!({"choices": [{"delta": delta, "index": 0}], "created": 1_768_996_176,
                       "model": "GigaChat:2.0.28.2", "object": "chat.completion"});
    if let Some(f) = finish {
        c["choices"][0]["finish_reason"] = json!(f);
        c["usage"] = json!({"prompt_tokens": 17, "completion_tokens": 42, "total_tokens": 59,
                            "precached_prompt_tokens": 2});
    }
    c
}

fn stream_of(events: Vec<String>) -> Reply {
    let mut reply = Reply::sse_raw(&[]);
    for e in events {
        reply = reply.then(Step::Bytes(Bytes::from(e)));
    }
    reply
}

/// The events of a streamed text answer, ending in `[DONE]`.
pub fn stream_events(pieces: &[&str]) -> Vec<String> {
    let mut events = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        let delta = if i == 0 { json!({"content": p, "role": "assistant"}) } else { json!({"content": p}) };
        events.push(data(&chunk(delta, None)));
    }
    events.push(data(&chunk(json!({"content": ""}), Some("stop"))));
    events.push("data: [DONE]\n\n".to_string());
    events
}

/// A streamed text answer.
pub fn stream(pieces: &[&str]) -> Reply {
    stream_of(stream_events(pieces))
}

/// A streamed function call: one whole `delta.function_call` object.
pub fn function_call_stream(name: &str, arguments: Value) -> Reply {
    stream_of(vec![
        data(&chunk(
            json!({"content": "", "role": "assistant",
                   "function_call": {"name": name, "arguments": arguments}}),
            None,
        )),
        data(&chunk(json!({"content": ""}), Some("function_call"))),
        "data: [DONE]\n\n".to_string(),
    ])
}

/// Unix milliseconds `ahead` from now (negative: in the past).
pub fn expiry_in(ahead_secs: i64) -> i64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_millis() as i64;
    now + ahead_secs * 1000
}

/// An OAuth answer: `{"access_token", "expires_at"}` (milliseconds).
pub fn token(access_token: &str, expires_at_ms: i64) -> Reply {
    Reply::json(json!({"access_token": access_token, "expires_at": expires_at_ms}))
}

/// An OAuth refusal (a key that does not match its scope).
pub fn token_error() -> Reply {
    Reply::raw(
        400,
        "application/json",
        json!({"code": 7, "message": "scope from db not fully includes consumed scope"}).to_string(),
    )
}
