//! AWS Bedrock Converse bodies, ConverseStream event streams and errors
//! as round3.md §3.3–§3.6 shows them. The event stream is encoded here on
//! its own — frames with both CRC-32s, string headers — so the gateway's
//! decoder is checked against an encoder it does not share.

use crate::reply::{Reply, Step};
use bytes::Bytes;
use serde_json::{json, Value};

/// The suffixes of the whole and streamed calls (`/model/{id}/…`).
pub const PATHS: [&str; 2] = ["/converse", "/converse-stream"];

/// CRC-32 (zlib's), bit by bit: slow and obviously right, unlike the
/// gateway's table.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// One event-stream frame with string headers.
pub fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for (name, value) in headers {
        h.push(name.len() as u8);
        h.extend_from_slice(name.as_bytes());
        h.push(7);
        h.extend_from_slice(&(value.len() as u16).to_be_bytes());
        h.extend_from_slice(value.as_bytes());
    }
    let total = (16 + h.len() + payload.len()) as u32;
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&(h.len() as u32).to_be_bytes());
    let prelude = crc32(&out);
    out.extend_from_slice(&prelude.to_be_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(payload);
    let crc = crc32(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// An `event` frame: the payload is the event's body, not wrapped in its
/// name; a padding field `p` is added as Bedrock does.
pub fn event(kind: &str, mut payload: Value) -> Vec<u8> {
    payload["p"] = json!("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL");
    frame(
        &[(":event-type", kind), (":content-type", "application/json"), (":message-type", "event")],
        payload.to_string().as_bytes(),
    )
}

/// An `exception` frame.
pub fn exception(kind: &str, message: &str) -> Vec<u8> {
    frame(
        &[(":exception-type", kind), (":content-type", "application/json"), (":message-type", "exception")],
        json!({"message": message}).to_string().as_bytes(),
    )
}

/// A reply whose body is these frames, one step each.
pub fn frames(frames: Vec<Vec<u8>>) -> Reply {
    let mut reply = Reply::raw(200, "application/vnd.amazon.eventstream", Bytes::new());
    reply.steps.clear();
    for f in frames {
        reply = reply.then(Step::Bytes(Bytes::from(f)));
    }
    reply
}

fn usage(input: u64, output: u64) -> Value {
    json!({"inputTokens": input, "outputTokens": output, "totalTokens": input + output,
           "cacheReadInputTokens": 0, "cacheWriteInputTokens": 0})
}

/// A Converse body with these content blocks.
pub fn converse(content: Value, stop: &str) -> Value {
    json!({"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop,
           "usage": usage(31, 9), "metrics": {"latencyMs": 234}})
}

/// A 200 answering `text`.
pub fn text(text: &str) -> Reply {
    Reply::json(converse(json!([{"text": text}]), "end_turn")).header("x-amzn-requestid", "bedrock-req-1")
}

/// A 200 with a text block and one `toolUse`.
pub fn tool_use(id: &str, name: &str, input: Value) -> Reply {
    Reply::json(converse(
        json!([{"text": "Checking."}, {"toolUse": {"toolUseId": id, "name": name, "input": input}}]),
        "tool_use",
    ))
}

/// The frames of a streamed text answer: `messageStart`, deltas, the
/// block's stop, `messageStop`, `metadata` (usage last).
pub fn stream_frames(pieces: &[&str]) -> Vec<Vec<u8>> {
    let mut out = vec![event("messageStart", json!({"role": "assistant"}))];
    for p in pieces {
        out.push(event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": p}})));
    }
    out.push(event("contentBlockStop", json!({"contentBlockIndex": 0})));
    out.push(event("messageStop", json!({"stopReason": "end_turn"})));
    out.push(event("metadata", json!({"usage": usage(31, pieces.len() as u64), "metrics": {"latencyMs": 120}})));
    out
}

/// A streamed text answer.
pub fn stream(pieces: &[&str]) -> Reply {
    frames(stream_frames(pieces))
}

/// A streamed `toolUse` whose input arrives in `parts`.
pub fn tool_use_stream(id: &str, name: &str, parts: &[&str]) -> Reply {
    let mut out = vec![
        event("messageStart", json!({"role": "assistant"})),
        event(
            "contentBlockStart",
            json!({"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": id, "name": name}}}),
        ),
    ];
    for p in parts {
        out.push(event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": p}}})));
    }
    out.push(event("contentBlockStop", json!({"contentBlockIndex": 0})));
    out.push(event("messageStop", json!({"stopReason": "tool_use"})));
    out.push(event("metadata", json!({"usage": usage(40, 12), "metrics": {"latencyMs": 99}})));
    frames(out)
}

/// An error: `{"message"}` with the exception's name in `x-amzn-ErrorType`.
pub fn error(status: u16, name: &str, message: &str) -> Reply {
    Reply::raw(status, "application/json", json!({"message": message}).to_string())
        .header("x-amzn-errortype", &format!("{name}:http://internal.amazon.com/coral/com.amazon.bedrock/"))
}
