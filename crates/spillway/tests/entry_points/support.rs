//! Helpers of these tests: named SSE events, fake replies with tool calls.

use super::common::*;
use serde_json::{json, Value};

/// `POST path` with a JSON body and extra headers.
pub async fn post(gw: &TestGateway, path: &str, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut r = client().post(format!("{}{path}", gw.url)).json(body);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.send().await.unwrap()
}

/// A whole SSE response as (event name, data) pairs; asserts every event
/// is named and its data's `type` is that name, and that no `[DONE]` came.
pub async fn named_events(resp: reqwest::Response) -> Vec<(String, Value)> {
    assert_eq!(header(&resp, "content-type"), "text/event-stream");
    let text = resp.text().await.unwrap();
    assert!(!text.contains("[DONE]"), "{text}");
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let (head, data) = e.split_once("\ndata: ").unwrap_or_else(|| panic!("unnamed event: {e}"));
            let name = head.strip_prefix("event: ").unwrap().to_string();
            let data: Value = serde_json::from_str(data).unwrap();
            assert_eq!(data["type"].as_str(), Some(name.as_str()), "{e}");
            (name, data)
        })
        .collect()
}

/// A 200 `chat.completion` calling `name` with `arguments`.
pub fn tool_call_reply(call_id: &str, name: &str, arguments: &str) -> Reply {
    Reply::json(json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_760_000_000, "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]},
            "logprobs": null, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 6, "total_tokens": 26},
    }))
}

/// A streamed tool call: the call in two argument fragments, then `tool_calls`.
pub fn tool_call_stream(call_id: &str, name: &str, fragments: &[&str]) -> Reply {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "f",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![format!(
        "data: {}\n\n",
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": ""}}]}),
            None
        )
    )];
    for f in fragments {
        events.push(format!(
            "data: {}\n\n",
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}), None)
        ));
    }
    events.push(format!("data: {}\n\n", chunk(json!({}), Some("tool_calls"))));
    events.push("data: [DONE]\n\n".into());
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    Reply::sse_raw(&refs)
}

/// Two OpenAI-compatible providers `a` and `b` (model `m` each) and a chat
/// cascade `chat: [a/m, b/m]`, plus `extra` YAML.
pub fn two_upstreams(a: &FakeUpstream, b: &FakeUpstream, extra: &str) -> String {
    format!(
        "providers:\n{}    models: [{{ id: m }}]\n{}    models: [{{ id: m }}]\n{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, b/m]\n{extra}",
        openai_provider("a", a),
        openai_provider("b", b),
    )
}
