//! Azure OpenAI bodies, streams and errors as round3.md §1.3–§1.5 shows
//! them: OpenAI's shapes plus `prompt_filter_results` and per-choice
//! `content_filter_results`, a stream that opens with a choice-less
//! prompt-filter chunk and may carry delta-less filter annotations, and
//! Azure's error bodies (`type: null`, `code` a string such as `"429"`).

use crate::reply::{chunk, completion, Reply, Step};
use bytes::Bytes;
use serde_json::{json, Value};

/// The deployments listing path (the `2022-12-01` data-plane spec).
pub const DEPLOYMENTS_PATH: &str = "/openai/deployments";

fn filter_results() -> Value {
    json!({"hate": {"filtered": false, "severity": "safe"}, "self_harm": {"filtered": false, "severity": "safe"},
           "sexual": {"filtered": false, "severity": "safe"}, "violence": {"filtered": false, "severity": "safe"}})
}

fn prompt_filter_results() -> Value {
    json!([{"prompt_index": 0, "content_filter_results": filter_results()}])
}

/// Adds Azure's filter annotations to an OpenAI body.
fn annotate(mut body: Value) -> Value {
    body["prompt_filter_results"] = prompt_filter_results();
    if let Some(choices) = body["choices"].as_array_mut() {
        for c in choices {
            c["content_filter_results"] = filter_results();
        }
    }
    body
}

/// A 200 answering `text`.
pub fn text(text: &str) -> Reply {
    Reply::json(annotate(completion(text)))
}

/// A 200 with one tool call.
pub fn tool_call(id: &str, name: &str, arguments: Value) -> Reply {
    let mut body = completion("");
    body["choices"][0]["message"]["content"] = Value::Null;
    body["choices"][0]["message"]["tool_calls"] =
        json!([{"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}]);
    body["choices"][0]["finish_reason"] = json!("tool_calls");
    Reply::json(annotate(body))
}

fn sse(v: &Value) -> Step {
    Step::Bytes(Bytes::from(format!("data: {v}\n\n")))
}

/// The choice-less chunk an Azure stream opens with.
fn prompt_filter_chunk() -> Value {
    json!({"id": "", "object": "", "created": 0, "model": "", "choices": [],
           "prompt_filter_results": prompt_filter_results()})
}

fn stream_of(chunks: Vec<Value>) -> Reply {
    let mut reply = Reply::sse_raw(&[]);
    for c in chunks {
        reply = reply.then(sse(&c));
    }
    reply.then(Step::Bytes(Bytes::from_static(b"data: [DONE]\n\n")))
}

fn with_usage_null(mut c: Value) -> Value {
    c["usage"] = Value::Null;
    c
}

/// A streamed text answer: the prompt-filter chunk, a role chunk, one chunk
/// per piece, an asynchronous-filter annotation, the finish chunk and a
/// usage chunk (Azure sends it when asked, `usage: null` on the others).
pub fn stream(pieces: &[&str]) -> Reply {
    let mut chunks =
        vec![prompt_filter_chunk(), with_usage_null(chunk(json!({"role": "assistant", "content": ""}), None))];
    for p in pieces {
        let mut c = with_usage_null(chunk(json!({"content": p}), None));
        c["choices"][0]["content_filter_results"] = filter_results();
        chunks.push(c);
    }
    chunks.push(json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_760_000_000,
        "model": "gpt-4o", "choices": [{"index": 0, "finish_reason": null, "content_filter_results": filter_results(),
        "content_filter_offsets": {"check_offset": 0, "start_offset": 0, "end_offset": 12}}], "usage": null}));
    chunks.push(with_usage_null(chunk(json!({}), Some("stop"))));
    chunks.push(json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_760_000_000,
        "model": "gpt-4o", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}}));
    stream_of(chunks)
}

/// A streamed tool call, its arguments in `parts`.
pub fn tool_call_stream(id: &str, name: &str, parts: &[&str]) -> Reply {
    let mut chunks = vec![prompt_filter_chunk()];
    chunks.push(chunk(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
        None,
    ));
    for p in parts {
        chunks.push(chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}), None));
    }
    chunks.push(chunk(json!({}), Some("tool_calls")));
    stream_of(chunks)
}

/// An Azure error body: `{"error":{"code","message"}}`, as Azure sends most.
pub fn error(status: u16, code: &str, message: &str) -> Reply {
    Reply::raw(status, "application/json", json!({"error": {"code": code, "message": message}}).to_string())
}

/// A prompt blocked by the content filter: 400 with Azure's full body.
pub fn content_filtered() -> Reply {
    let mut results = filter_results();
    results["self_harm"] = json!({"filtered": true, "severity": "medium"});
    let body = json!({"error": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
        "type": null, "param": "prompt", "code": "content_filter", "status": 400,
        "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": results}}});
    Reply::raw(400, "application/json", body.to_string())
}

/// A token-rate 429 with Azure's headers.
pub fn rate_limited(seconds: u64) -> Reply {
    error(
        429,
        "429",
        &format!(
            "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have \
             exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after {seconds} seconds."
        ),
    )
    .header("retry-after", &seconds.to_string())
    .header("retry-after-ms", &(seconds * 1000).to_string())
}

/// The deployments listing with `(deployment, model, status)` entries.
pub fn deployments(entries: &[(&str, &str, &str)]) -> Reply {
    let data: Vec<Value> = entries
        .iter()
        .map(|(id, model, status)| {
            json!({"id": id, "model": model, "owner": "organization-owner", "object": "deployment",
                   "status": status, "created_at": 1_700_000_000, "updated_at": 1_700_000_100,
                   "scale_settings": {"scale_type": "standard"}})
        })
        .collect();
    Reply::json(json!({"object": "list", "data": data}))
}
