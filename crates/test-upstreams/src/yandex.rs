//! Yandex Foundation Models native bodies, cumulative NDJSON streams and
//! grpc-gateway errors, shaped exactly as the wire-format reference (§6.2)
//! shows them: everything under `result`, int64 counters as strings, no ids.

use crate::reply::{Reply, Step};
use bytes::Bytes;
use serde_json::{json, Value};

/// The native completion path.
pub const COMPLETION_PATH: &str = "/foundationModels/v1/completion";

fn usage(input: u64, completion: u64) -> Value {
    json!({"inputTextTokens": input.to_string(), "completionTokens": completion.to_string(),
           "totalTokens": (input + completion).to_string(), "completionTokensDetails": {}})
}

/// A `{"result":…}` object with one alternative.
pub fn result(message: Value, status: &str, completion_tokens: u64) -> Value {
    json!({"result": {"alternatives": [{"message": message, "status": status}],
           "usage": usage(26, completion_tokens), "modelVersion": "07.03.2024"}})
}

/// A 200 answering `text`.
pub fn text(text: &str) -> Reply {
    Reply::json(result(json!({"role": "assistant", "text": text}), "ALTERNATIVE_STATUS_FINAL", 11))
}

/// A 200 with one function call (arguments as an object, no id).
pub fn tool_call(name: &str, arguments: Value) -> Reply {
    Reply::json(result(
        json!({"role": "assistant", "toolCallList": {"toolCalls": [
            {"functionCall": {"name": name, "arguments": arguments}}]}}),
        "ALTERNATIVE_STATUS_TOOL_CALLS",
        11,
    ))
}

/// A grpc-gateway error body.
pub fn error(http: u16, grpc: u16, message: &str) -> Reply {
    let body = json!({"error": {"grpcCode": grpc, "httpCode": http, "message": message,
                                "httpStatus": "", "details": []}});
    Reply::raw(http, "application/json", body.to_string())
}

fn lines(lines: Vec<Value>) -> Reply {
    Reply {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        delay: std::time::Duration::ZERO,
        steps: lines.into_iter().map(|l| Step::Bytes(Bytes::from(format!("{l}\n")))).collect(),
    }
}

/// The lines of a streamed answer: each repeats the whole text so far,
/// `PARTIAL` until the last, with a growing usage.
pub fn stream_lines(pieces: &[&str]) -> Vec<Value> {
    let mut so_far = String::new();
    let mut out = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        so_far.push_str(p);
        out.push(result(json!({"role": "assistant", "text": so_far}), "ALTERNATIVE_STATUS_PARTIAL", i as u64 + 1));
    }
    out.push(result(json!({"role": "assistant", "text": so_far}), "ALTERNATIVE_STATUS_FINAL", pieces.len() as u64 + 1));
    out
}

/// A streamed text answer (NDJSON, cumulative).
pub fn stream(pieces: &[&str]) -> Reply {
    lines(stream_lines(pieces))
}

/// A streamed function call: the final line carries the call list.
pub fn tool_call_stream(name: &str, arguments: Value) -> Reply {
    lines(vec![result(
        json!({"role": "assistant", "toolCallList": {"toolCalls": [
            {"functionCall": {"name": name, "arguments": arguments}}]}}),
        "ALTERNATIVE_STATUS_TOOL_CALLS",
        5,
    )])
}
