//! Anthropic Messages API bodies and named-event streams, shaped exactly as
//! the wire-format reference (§4.2–§4.4) shows them.

use crate::reply::{Reply, Step};
use bytes::Bytes;
use serde_json::{json, Value};

/// Usage as Anthropic reports it (cache fields included).
pub fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output,
           "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

/// A `message` body with the given content blocks and stop reason.
pub fn message(content: Value, stop_reason: &str) -> Value {
    json!({"id": "msg_01fake", "type": "message", "role": "assistant", "model": "claude-fake",
           "content": content, "stop_reason": stop_reason, "stop_sequence": null,
           "usage": usage(120, 40)})
}

/// A 200 answering `text`.
pub fn text(text: &str) -> Reply {
    Reply::json(message(json!([{"type": "text", "text": text}]), "end_turn"))
}

/// A 200 with a text block and one `tool_use` block.
pub fn tool_call(id: &str, name: &str, input: Value) -> Reply {
    Reply::json(message(
        json!([{"type": "text", "text": "Let me check."},
               {"type": "tool_use", "id": id, "name": name, "input": input}]),
        "tool_use",
    ))
}

/// An error body: `{"type":"error","error":{"type":…,"message":…},"request_id":…}`.
pub fn error(status: u16, kind: &str, message: &str) -> Reply {
    let body = json!({"type": "error", "error": {"type": kind, "message": message},
                      "request_id": "req_fake"});
    Reply::raw(status, "application/json", body.to_string())
}

/// One named SSE event; the data's `type` repeats the name.
pub fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn stream_of(events: Vec<String>) -> Reply {
    let mut reply = Reply::sse_raw(&[]);
    for e in events {
        reply = reply.then(Step::Bytes(Bytes::from(e)));
    }
    reply
}

fn message_start() -> String {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "model": "claude-x", "content": [], "stop_reason": null,
                "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}),
    )
}

fn message_end(stop_reason: &str, output: u64) -> Vec<String> {
    vec![
        event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                    "usage": {"output_tokens": output}}),
        ),
        event("message_stop", &json!({"type": "message_stop"})),
    ]
}

/// The events of a streamed text answer, `message_start` to `message_stop`.
pub fn stream_events(pieces: &[&str]) -> Vec<String> {
    let mut events = vec![
        message_start(),
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        event("ping", &json!({"type": "ping"})),
    ];
    for p in pieces {
        events.push(event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}),
        ));
    }
    events.push(event("content_block_stop", &json!({"type": "content_block_stop", "index": 0})));
    events.extend(message_end("end_turn", 42));
    events
}

/// A streamed text answer.
pub fn stream(pieces: &[&str]) -> Reply {
    stream_of(stream_events(pieces))
}

/// A streamed `tool_use` whose JSON input arrives in `parts`.
pub fn tool_stream(id: &str, name: &str, parts: &[&str]) -> Reply {
    let mut events = vec![
        message_start(),
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        ),
    ];
    for p in parts {
        events.push(event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": p}}),
        ));
    }
    events.push(event("content_block_stop", &json!({"type": "content_block_stop", "index": 0})));
    events.extend(message_end("tool_use", 42));
    stream_of(events)
}

/// A 200 stream that fails with an `error` event before any content.
pub fn error_event(kind: &str, message: &str) -> Reply {
    stream_of(vec![
        message_start(),
        event("error", &json!({"type": "error", "error": {"type": kind, "message": message}})),
    ])
}
