//! The cloud kinds through the composition root, each against its fake
//! upstream (`test-upstreams`): what each sends (URL, auth, body), whole
//! and streamed answers, tools, JSON mode, errors and discovery. The
//! shared behaviour of every adapter is in `conformance.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

mod common;
mod file_gateway;

use serde_json::{json, Value};

/// A chat request for `{"city": …}` by a strict JSON schema, as the
/// OpenAI SDKs send `response_format` for a typed answer.
fn json_request(stream: bool) -> Value {
    let mut body = common::chat("chat", stream);
    body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": "city", "strict": true,
        "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                   "additionalProperties": false}}});
    body
}

#[path = "native/azure.rs"]
mod azure;

#[path = "native/gemini.rs"]
mod gemini;

#[path = "native/bedrock.rs"]
mod bedrock;
