//! An Anthropic Messages request as the chat request the cascades run
//! (round2.md §3.3, the reverse of the Anthropic adapter's mapping).
//!
//! `system` becomes the leading system message; user text and image blocks
//! become chat content parts (a base64 image a `data:` URL); each
//! `tool_result` block becomes a `tool` message (before the rest of its
//! user message, as chat wants results right after the calls), its error
//! flag a leading `Error: `; an assistant's text and `tool_use` blocks one
//! assistant message with `tool_calls`; thinking blocks are dropped.
//! Tools take chat's nested shape (`input_schema` → `parameters`), and
//! `tool_choice` `any` is `required`. As in Anthropic's API, `max_tokens`
//! is required and `temperature` is 0–1. Every error names the Messages
//! field (`messages[1].content[0].tool_use_id`).

use super::super::ApiError;
use serde_json::{json, Map, Value};

fn invalid(param: impl Into<String>, message: impl Into<String>) -> ApiError {
    let param = param.into();
    let message = format!("{param}: {}", message.into());
    ApiError::InvalidField { param, message }
}

/// Translates a Messages request body into a chat request body.
/// `count_only`: for `count_tokens`, which takes no `max_tokens`.
pub fn to_chat(body: &[u8], count_only: bool) -> Result<Map<String, Value>, ApiError> {
    let body: Value = serde_json::from_slice(body).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    let Value::Object(body) = body else {
        return Err(ApiError::InvalidJson("the body must be a JSON object".into()));
    };
    let mut chat = Map::new();
    match body.get("model") {
        Some(Value::String(m)) if !m.is_empty() => chat.insert("model".into(), json!(m)),
        _ => return Err(invalid("model", "Field required (a cascade, a provider/model ref or `auto`)")),
    };
    match body.get("max_tokens") {
        Some(v) if v.as_u64().is_some_and(|n| n >= 1) => {
            chat.insert("max_tokens".into(), v.clone());
        }
        Some(_) => return Err(invalid("max_tokens", "must be an integer of at least 1")),
        None if count_only => {}
        None => return Err(invalid("max_tokens", "Field required")),
    }
    let mut messages = Vec::new();
    match body.get("system") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => messages.push(json!({"role": "system", "content": s})),
        Some(Value::Array(blocks)) => {
            let text = block_texts(blocks, "system")?;
            messages.push(json!({"role": "system", "content": text}));
        }
        Some(_) => return Err(invalid("system", "must be a string or an array of text blocks")),
    }
    let list = match body.get("messages") {
        Some(Value::Array(list)) if !list.is_empty() => list,
        Some(_) => return Err(invalid("messages", "must be a non-empty array")),
        None => return Err(invalid("messages", "Field required")),
    };
    for (i, m) in list.iter().enumerate() {
        message(&mut messages, i, m)?;
    }
    chat.insert("messages".into(), Value::Array(messages));
    for (key, hi) in [("temperature", 1.0), ("top_p", 1.0)] {
        match body.get(key) {
            None | Some(Value::Null) => {}
            Some(v) if v.as_f64().is_some_and(|x| (0.0..=hi).contains(&x)) => {
                chat.insert(key.into(), v.clone());
            }
            Some(_) => return Err(invalid(key, format!("must be a number from 0 to {hi}"))),
        }
    }
    match body.get("stop_sequences") {
        None | Some(Value::Null) => {}
        Some(Value::Array(s)) if s.iter().all(Value::is_string) => {
            if !s.is_empty() {
                chat.insert("stop".into(), Value::Array(s.clone()));
            }
        }
        Some(_) => return Err(invalid("stop_sequences", "must be an array of strings")),
    }
    if let Some(user) = body.get("metadata").and_then(|m| m.get("user_id")).filter(|u| u.is_string()) {
        chat.insert("user".into(), user.clone());
    }
    match body.get("stream") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => {
            chat.insert("stream".into(), json!(true));
            // `message_delta` reports the real output count.
            chat.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Some(_) => return Err(invalid("stream", "must be a boolean")),
    }
    tools(&body, &mut chat)?;
    Ok(chat)
}

/// The text of text blocks (`system`, a tool result's content).
fn block_texts(blocks: &[Value], at: &str) -> Result<String, ApiError> {
    let mut parts = Vec::with_capacity(blocks.len());
    for (j, b) in blocks.iter().enumerate() {
        match (b.get("type").and_then(Value::as_str), b.get("text").and_then(Value::as_str)) {
            (Some("text"), Some(t)) => parts.push(t),
            _ => return Err(invalid(format!("{at}[{j}]"), "expected a text block")),
        }
    }
    Ok(parts.join("\n\n"))
}

/// One Messages message, appended to `out` as one or more chat messages.
fn message(out: &mut Vec<Value>, i: usize, m: &Value) -> Result<(), ApiError> {
    let at = |f: &str| format!("messages[{i}].{f}");
    let role = match m.get("role").and_then(Value::as_str) {
        Some(r @ ("user" | "assistant")) => r,
        _ => return Err(invalid(at("role"), "must be `user` or `assistant`")),
    };
    let blocks = match m.get("content") {
        Some(Value::String(s)) => {
            out.push(json!({"role": role, "content": s}));
            return Ok(());
        }
        Some(Value::Array(blocks)) => blocks,
        _ => return Err(invalid(at("content"), "must be a string or an array of content blocks")),
    };
    let block_at = |j: usize, f: &str| at(&format!("content[{j}].{f}"));
    if role == "assistant" {
        let mut text = String::new();
        let mut calls = Vec::new();
        for (j, b) in blocks.iter().enumerate() {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => text.push_str(b.get("text").and_then(Value::as_str).unwrap_or_default()),
                Some("tool_use") => {
                    let (Some(id), Some(name)) =
                        (b.get("id").and_then(Value::as_str), b.get("name").and_then(Value::as_str))
                    else {
                        return Err(invalid(block_at(j, "id"), "a tool_use block needs string `id` and `name`"));
                    };
                    let input = b.get("input").cloned().unwrap_or_else(|| json!({}));
                    calls.push(json!({"id": id, "type": "function",
                        "function": {"name": name, "arguments": input.to_string()}}));
                }
                // Earlier reasoning: chat upstreams take none back.
                Some("thinking" | "redacted_thinking") => {}
                _ => return Err(invalid(block_at(j, "type"), "expected text, tool_use or thinking")),
            }
        }
        let mut msg = json!({"role": "assistant", "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) }});
        if !calls.is_empty() {
            msg["tool_calls"] = Value::Array(calls);
        }
        out.push(msg);
        return Ok(());
    }
    let mut parts = Vec::new();
    for (j, b) in blocks.iter().enumerate() {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => match b.get("text").and_then(Value::as_str) {
                Some(t) => parts.push(json!({"type": "text", "text": t})),
                None => return Err(invalid(block_at(j, "text"), "a text block needs a string `text`")),
            },
            Some("image") => parts.push(image(b.get("source"), &block_at(j, "source"))?),
            Some("tool_result") => {
                let Some(id) = b.get("tool_use_id").and_then(Value::as_str) else {
                    return Err(invalid(block_at(j, "tool_use_id"), "a tool_result needs a string `tool_use_id`"));
                };
                let mut content = match b.get("content") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(inner)) => result_text(inner, &block_at(j, "content"))?,
                    Some(_) => return Err(invalid(block_at(j, "content"), "must be a string or content blocks")),
                };
                if b.get("is_error").and_then(Value::as_bool) == Some(true) {
                    // Chat has no error flag on a tool's result (a convention).
                    content = format!("Error: {content}");
                }
                out.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
            }
            Some("thinking" | "redacted_thinking") => {}
            _ => return Err(invalid(block_at(j, "type"), "expected text, image or tool_result")),
        }
    }
    if !parts.is_empty() {
        out.push(json!({"role": "user", "content": parts}));
    }
    Ok(())
}

/// A tool result's blocks as text; an image in it cannot go into a chat
/// `tool` message, so it is named instead of dropped silently.
fn result_text(blocks: &[Value], at: &str) -> Result<String, ApiError> {
    let mut parts = Vec::with_capacity(blocks.len());
    for (j, b) in blocks.iter().enumerate() {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(b.get("text").and_then(Value::as_str).unwrap_or_default()),
            Some("image") => parts.push("[image omitted: tool results reach the model as text]"),
            _ => return Err(invalid(format!("{at}[{j}].type"), "expected text or image")),
        }
    }
    Ok(parts.join("\n\n"))
}

/// An image block's `source` as a chat `image_url` part.
fn image(source: Option<&Value>, at: &str) -> Result<Value, ApiError> {
    let s = |k: &str| source.and_then(|s| s.get(k)).and_then(Value::as_str);
    let url = match s("type") {
        Some("base64") => match (s("media_type"), s("data")) {
            (Some(mt), Some(data)) => format!("data:{mt};base64,{data}"),
            _ => return Err(invalid(at, "a base64 image needs `media_type` and `data`")),
        },
        Some("url") => match s("url") {
            Some(u) => u.to_string(),
            None => return Err(invalid(at, "a url image needs `url`")),
        },
        _ => return Err(invalid(format!("{at}.type"), "expected `base64` or `url`")),
    };
    Ok(json!({"type": "image_url", "image_url": {"url": url}}))
}

/// `tools` and `tool_choice` in chat's shapes.
fn tools(body: &Map<String, Value>, chat: &mut Map<String, Value>) -> Result<(), ApiError> {
    match body.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            let mut out = Vec::with_capacity(list.len());
            for (i, t) in list.iter().enumerate() {
                if !matches!(t.get("type").and_then(Value::as_str), None | Some("custom")) {
                    return Err(invalid(
                        format!("tools[{i}].type"),
                        "server tools cannot run on other providers: only custom tools are supported",
                    ));
                }
                // Chat's limit, which every upstream of a cascade shares.
                let valid = |n: &&str| {
                    !n.is_empty()
                        && n.len() <= 64
                        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                };
                let Some(name) = t.get("name").and_then(Value::as_str).filter(valid) else {
                    return Err(invalid(format!("tools[{i}].name"), "required, matching ^[a-zA-Z0-9_-]{1,64}$"));
                };
                let schema = t.get("input_schema").filter(|s| s.is_object()).cloned();
                let Some(schema) = schema else {
                    return Err(invalid(format!("tools[{i}].input_schema"), "Field required (a JSON Schema object)"));
                };
                let mut function = json!({"name": name, "parameters": schema});
                if let Some(d) = t.get("description").filter(|d| d.is_string()) {
                    function["description"] = d.clone();
                }
                out.push(json!({"type": "function", "function": function}));
            }
            if !out.is_empty() {
                chat.insert("tools".into(), Value::Array(out));
            }
        }
        Some(_) => return Err(invalid("tools", "must be an array")),
    }
    let Some(choice) = body.get("tool_choice").filter(|c| !c.is_null()) else { return Ok(()) };
    let mapped = match choice.get("type").and_then(Value::as_str) {
        Some("auto") => json!("auto"),
        Some("any") => json!("required"),
        Some("none") => json!("none"),
        Some("tool") => match choice.get("name").and_then(Value::as_str) {
            Some(n) => json!({"type": "function", "function": {"name": n}}),
            None => return Err(invalid("tool_choice.name", "Field required")),
        },
        _ => return Err(invalid("tool_choice.type", "expected auto, any, tool or none")),
    };
    chat.insert("tool_choice".into(), mapped);
    if choice.get("disable_parallel_tool_use").and_then(Value::as_bool) == Some(true) {
        chat.insert("parallel_tool_calls".into(), json!(false));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(body: Value) -> Map<String, Value> {
        to_chat(body.to_string().as_bytes(), false).unwrap()
    }

    fn param(body: Value) -> String {
        match to_chat(body.to_string().as_bytes(), false) {
            Err(ApiError::InvalidField { param, .. }) => param,
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn blocks_become_chat_messages() {
        let c = chat(json!({"model": "m", "max_tokens": 100, "system": [{"type": "text", "text": "be brief"}],
            "stop_sequences": ["END"], "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
            "tools": [{"name": "w", "description": "weather", "input_schema": {"type": "object"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "weather?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}]},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "..."},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"city": "Oslo"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "sunny"}]},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "boom", "is_error": true},
                    {"type": "text", "text": "and tomorrow?"}]}]}));
        let m = c["messages"].as_array().unwrap();
        assert_eq!(m.len(), 6, "{m:#?}");
        assert_eq!(m[0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(m[1]["content"][1]["image_url"]["url"], "data:image/png;base64,AA");
        assert_eq!(m[2]["content"], "Checking.");
        assert_eq!(m[2]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Oslo\"}");
        assert_eq!(m[3], json!({"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"}));
        assert_eq!(m[4]["content"], "Error: boom");
        assert_eq!(m[5]["content"][0]["text"], "and tomorrow?");
        assert_eq!((c["stop"][0].as_str(), c["tool_choice"].as_str()), (Some("END"), Some("required")));
        assert_eq!(c["parallel_tool_calls"], false);
        assert_eq!(c["tools"][0]["function"]["parameters"]["type"], "object");
    }

    #[test]
    fn names_the_bad_field() {
        let msgs = json!([{"role": "user", "content": "hi"}]);
        assert_eq!(param(json!({"model": "m", "messages": msgs})), "max_tokens");
        assert_eq!(param(json!({"model": "m", "max_tokens": 5})), "messages");
        assert_eq!(param(json!({"model": "m", "max_tokens": 5, "messages": msgs, "temperature": 1.5})), "temperature");
        assert_eq!(
            param(json!({"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]})),
            "messages[0].role"
        );
        assert_eq!(
            param(
                json!({"model": "m", "max_tokens": 5, "messages": msgs, "tools": [{"type": "web_search_20250305", "name": "s"}]})
            ),
            "tools[0].type"
        );
        assert!(to_chat(json!({"model": "m", "messages": msgs}).to_string().as_bytes(), true).is_ok());
    }
}
