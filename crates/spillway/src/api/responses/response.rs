//! A chat answer as a Responses API `response` object: a whole
//! `chat.completion` ([`from_completion`]), and the object the stream's
//! lifecycle events carry ([`Shell`]).
//!
//! Output items follow round2.md §1.3: the text (and a refusal) as one
//! `message` item, each tool call as its own `function_call` item (its
//! `call_id` is the chat call id); `finish_reason: length` is status
//! `incomplete` with `max_output_tokens`, `content_filter` likewise;
//! usage is renamed (`prompt_tokens` → `input_tokens`, …). `model` is the
//! model ref that answered, as in chat bodies; `store` says whether the
//! gateway keeps the response (`crate::stored`).

use super::super::reframe::{new_id, Usage};
use super::request::Echo;
use serde_json::{json, Map, Value};

/// How a response ended, from the chat finish reason.
pub fn status_of(finish: Option<&str>) -> (&'static str, Value) {
    match finish {
        Some("length") => ("incomplete", json!({"reason": "max_output_tokens"})),
        Some("content_filter") => ("incomplete", json!({"reason": "content_filter"})),
        _ => ("completed", Value::Null),
    }
}

/// The Responses `usage` object.
pub fn usage(u: Usage) -> Value {
    json!({
        "input_tokens": u.prompt,
        "input_tokens_details": {"cached_tokens": u.cached, "cache_write_tokens": 0},
        "output_tokens": u.completion,
        "output_tokens_details": {"reasoning_tokens": u.reasoning},
        "total_tokens": u.prompt + u.completion,
    })
}

/// The parts of a response object that do not change while it is made.
#[derive(Debug, Clone)]
pub struct Shell {
    pub id: String,
    pub created_at: u64,
    /// The model ref that answers.
    pub model: String,
    pub echo: Echo,
}

impl Shell {
    /// A new response of `model`, created now.
    pub fn new(model: &str, echo: Echo, created_at: u64) -> Self {
        Self { id: new_id("resp_"), created_at, model: model.to_string(), echo }
    }

    /// The response object in `status` with `output` and `usage`.
    pub fn object(&self, status: &str, output: Vec<Value>, usage: Value) -> Map<String, Value> {
        let e = &self.echo;
        let done = matches!(status, "completed" | "incomplete" | "failed");
        let mut m = Map::new();
        for (k, v) in [
            ("id", json!(self.id)),
            ("object", json!("response")),
            ("created_at", json!(self.created_at)),
            ("status", json!(status)),
            ("completed_at", if done { json!(super::super::wire::now_unix()) } else { Value::Null }),
            ("error", Value::Null),
            ("incomplete_details", Value::Null),
            ("instructions", e.instructions.clone()),
            ("max_output_tokens", e.max_output_tokens.clone()),
            ("model", json!(self.model)),
            ("output", Value::Array(output)),
            ("parallel_tool_calls", json!(e.parallel_tool_calls)),
            ("previous_response_id", e.previous_response_id.clone()),
            ("store", json!(e.store)),
            ("temperature", e.temperature.clone()),
            ("top_p", e.top_p.clone()),
            ("text", e.text.clone()),
            ("tool_choice", e.tool_choice.clone()),
            ("tools", e.tools.clone()),
            ("truncation", json!("disabled")),
            ("usage", usage),
            ("user", e.user.clone()),
            ("metadata", e.metadata.clone()),
        ] {
            m.insert(k.into(), v);
        }
        m
    }
}

/// An `output_text` content part.
pub fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

/// A `message` output item.
pub fn message_item(id: &str, status: &str, content: Vec<Value>) -> Value {
    json!({"id": id, "type": "message", "status": status, "role": "assistant", "content": content})
}

/// A `function_call` output item.
pub fn call_item(id: &str, status: &str, call_id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function_call", "status": status, "call_id": call_id, "name": name, "arguments": arguments})
}

/// `v[k]` as a string, or empty.
fn str_at<'a>(v: Option<&'a Value>, k: &str) -> &'a str {
    v.and_then(|v| v.get(k)).and_then(Value::as_str).unwrap_or_default()
}

/// A whole stamped `chat.completion` as a response object.
pub fn from_completion(chat: &Value, shell: &Shell) -> Value {
    let choice = chat.get("choices").and_then(Value::as_array).and_then(|c| c.first());
    let message = choice.and_then(|c| c.get("message"));
    let finish = choice.and_then(|c| c.get("finish_reason")).and_then(Value::as_str);
    let (status, incomplete) = status_of(finish);
    let item_status = if status == "completed" { "completed" } else { "incomplete" };
    let text = message.and_then(|m| m.get("content")).and_then(Value::as_str).unwrap_or_default();
    let refusal = message.and_then(|m| m.get("refusal")).and_then(Value::as_str);
    let calls = message.and_then(|m| m.get("tool_calls")).and_then(Value::as_array);
    let mut output = Vec::new();
    let mut content = Vec::new();
    if !text.is_empty() || (refusal.is_none() && calls.is_none_or(Vec::is_empty)) {
        content.push(text_part(text));
    }
    if let Some(r) = refusal {
        content.push(json!({"type": "refusal", "refusal": r}));
    }
    if !content.is_empty() {
        output.push(message_item(&new_id("msg_"), item_status, content));
    }
    for c in calls.into_iter().flatten() {
        let f = c.get("function");
        let call_id = str_at(Some(c), "id");
        output.push(call_item(&new_id("fc_"), "completed", call_id, str_at(f, "name"), str_at(f, "arguments")));
    }
    let u = chat.get("usage").filter(|u| u.is_object()).map(Usage::of).unwrap_or_default();
    let mut m = shell.object(status, output, usage(u));
    m.insert("incomplete_details".into(), incomplete);
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell() -> Shell {
        let (_, echo) = super::super::request::to_chat(br#"{"model":"m","input":"hi"}"#).unwrap();
        Shell::new("p/m", echo, 1)
    }

    #[test]
    fn text_tools_and_limits() {
        let chat = json!({"choices": [{"message": {"role": "assistant", "content": "Hi", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}});
        let r = from_completion(&chat, &shell());
        assert_eq!(r["status"], "completed");
        assert_eq!(r["output"][0]["content"][0]["text"], "Hi");
        assert_eq!(r["output"][1]["call_id"], "call_1");
        assert_eq!(r["usage"]["total_tokens"], 5);
        let chat =
            json!({"choices": [{"message": {"role": "assistant", "content": "cut"}, "finish_reason": "length"}]});
        let r = from_completion(&chat, &shell());
        assert_eq!(
            (r["status"].as_str(), r["incomplete_details"]["reason"].as_str()),
            (Some("incomplete"), Some("max_output_tokens"))
        );
    }
}
