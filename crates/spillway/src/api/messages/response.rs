//! A whole chat answer as an Anthropic `message` (round2.md §3.3's
//! response mapping): the text as a text block, each tool call as a
//! `tool_use` block whose `input` is the parsed arguments, the finish
//! reason as `stop_reason`, and usage split the Anthropic way (cached
//! tokens apart from `input_tokens`). `model` is the model ref that
//! answered, as in chat bodies.

use super::super::reframe::{new_id, Usage};
use serde_json::{json, Value};

/// Chat's `finish_reason` as Anthropic's `stop_reason`.
pub fn stop_reason(finish: Option<&str>) -> &'static str {
    match finish {
        Some("length") => "max_tokens",
        Some("tool_calls" | "function_call") => "tool_use",
        Some("content_filter") => "refusal",
        _ => "end_turn",
    }
}

/// Anthropic's `usage`: input without the cached part, which has its own count.
pub fn usage(u: Usage) -> Value {
    json!({
        "input_tokens": u.prompt.saturating_sub(u.cached),
        "output_tokens": u.completion,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": u.cached,
    })
}

/// A tool call's arguments as a `tool_use` block's `input`, which must be
/// an object: arguments that are not a JSON object become `{}`.
pub fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

/// A whole stamped `chat.completion` as a `message`.
pub fn from_completion(chat: &Value, model: &str) -> Value {
    let choice = chat.get("choices").and_then(Value::as_array).and_then(|c| c.first());
    let message = choice.and_then(|c| c.get("message"));
    let finish = choice.and_then(|c| c.get("finish_reason")).and_then(Value::as_str);
    let text = message.and_then(|m| m.get("content")).and_then(Value::as_str).unwrap_or_default();
    let refusal = message.and_then(|m| m.get("refusal")).and_then(Value::as_str).unwrap_or_default();
    let calls = message.and_then(|m| m.get("tool_calls")).and_then(Value::as_array);
    let mut content = Vec::new();
    let text = if text.is_empty() { refusal } else { text };
    if !text.is_empty() || calls.is_none_or(Vec::is_empty) {
        content.push(json!({"type": "text", "text": text}));
    }
    for c in calls.into_iter().flatten() {
        let f = c.get("function");
        let s = |k: &str| f.and_then(|f| f.get(k)).and_then(Value::as_str).unwrap_or_default();
        let id = c.get("id").and_then(Value::as_str).map_or_else(|| new_id("toolu_"), str::to_string);
        content.push(json!({"type": "tool_use", "id": id, "name": s("name"), "input": tool_input(s("arguments"))}));
    }
    let u = chat.get("usage").filter(|u| u.is_object()).map(Usage::of).unwrap_or_default();
    json!({
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(finish),
        "stop_sequence": null,
        "usage": usage(u),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_tool_use() {
        let chat = json!({"choices": [{"message": {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Oslo\"}"}}]},
            "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 3}}});
        let m = from_completion(&chat, "p/m");
        assert_eq!(m["content"][0], json!({"type": "text", "text": "Checking."}));
        assert_eq!(m["content"][1]["input"], json!({"city": "Oslo"}));
        assert_eq!(m["stop_reason"], "tool_use");
        assert_eq!(
            (m["usage"]["input_tokens"].as_u64(), m["usage"]["cache_read_input_tokens"].as_u64()),
            (Some(7), Some(3))
        );
        assert_eq!(tool_input("[1]"), json!({}));
    }
}
