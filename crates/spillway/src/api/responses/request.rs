//! A Responses API request (`CreateResponse`) as the chat request the
//! cascades run, and what the response object echoes of it.
//!
//! Input items map to chat messages as round2.md §1.2 lays out:
//! `instructions` becomes the leading system message, message items keep
//! their role, a `function_call` item joins the assistant message before
//! it (consecutive calls fold into one message's `tool_calls`), a
//! `function_call_output` item becomes a `tool` message, reasoning items
//! are dropped. What refers to stored responses (`previous_response_id`,
//! `item_reference` items) is put in place before this runs
//! (`super::history`, when the gateway keeps responses); still here, it is
//! refused with a 400 that says the gateway keeps none. `conversation`
//! and prompt templates are refused always. Every error names the
//! Responses field (`input[2].call_id`), not the chat field it would have
//! become.

use super::super::ApiError;
use serde_json::{json, Map, Value};

/// What the response object repeats of the request (`Response`'s
/// required echo fields), in the Responses API's own shapes.
#[derive(Debug, Clone)]
pub struct Echo {
    pub instructions: Value,
    pub max_output_tokens: Value,
    pub parallel_tool_calls: bool,
    pub temperature: Value,
    pub top_p: Value,
    /// `{"format": …}`.
    pub text: Value,
    pub tool_choice: Value,
    /// Function tools, flat (`{type, name, description, parameters, strict}`).
    pub tools: Value,
    pub metadata: Value,
    pub user: Value,
    /// The stored response this one continues, when it does.
    pub previous_response_id: Value,
    /// Whether the gateway keeps this response.
    pub store: bool,
}

fn invalid(param: impl Into<String>, message: impl Into<String>) -> ApiError {
    ApiError::InvalidField { param: param.into(), message: message.into() }
}

const STATELESS: &str = "this gateway keeps no responses (`responses.store: false`): send the whole \
conversation in `input` (and `store: false`, so clients such as the AI SDK send items instead of references)";

/// Translates a Responses request body into a chat request body.
pub fn to_chat(body: &[u8]) -> Result<(Map<String, Value>, Echo), ApiError> {
    to_chat_map(super::history::parse(body)?)
}

/// [`to_chat`] of a parsed body.
pub fn to_chat_map(body: Map<String, Value>) -> Result<(Map<String, Value>, Echo), ApiError> {
    let present = |k: &str| body.get(k).is_some_and(|v| !v.is_null());
    for field in ["previous_response_id", "conversation", "prompt"] {
        if present(field) {
            return Err(invalid(field, format!("`{field}` is not supported: {STATELESS}")));
        }
    }
    if body.get("background").and_then(Value::as_bool) == Some(true) {
        return Err(invalid("background", "background responses are not supported: Spillway answers while you wait"));
    }
    let mut chat = Map::new();
    chat.insert("model".into(), body.get("model").cloned().unwrap_or(Value::Null));
    let mut messages = Vec::new();
    let instructions = match body.get("instructions") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) => {
            messages.push(json!({"role": "system", "content": s}));
            Value::String(s.clone())
        }
        Some(_) => return Err(invalid("instructions", "`instructions` must be a string")),
    };
    match body.get("input") {
        Some(Value::String(s)) => messages.push(json!({"role": "user", "content": s})),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                input_item(&mut messages, i, item)?;
            }
        }
        None | Some(Value::Null) => return Err(invalid("input", "missing required field `input`")),
        Some(_) => return Err(invalid("input", "`input` must be a string or an array of items")),
    }
    if messages.is_empty() {
        return Err(invalid("input", "`input` has no messages"));
    }
    chat.insert("messages".into(), Value::Array(messages));
    let max_output_tokens = match body.get("max_output_tokens") {
        None | Some(Value::Null) => Value::Null,
        Some(v) if v.as_u64().is_some_and(|n| n >= 1) => {
            chat.insert("max_tokens".into(), v.clone());
            v.clone()
        }
        Some(_) => return Err(invalid("max_output_tokens", "`max_output_tokens` must be a positive integer")),
    };
    for key in ["temperature", "top_p", "user", "parallel_tool_calls"] {
        if let Some(v) = body.get(key).filter(|v| !v.is_null()) {
            chat.insert(key.into(), v.clone());
        }
    }
    if let Some(effort) = body.get("reasoning").and_then(|r| r.get("effort")).filter(|e| !e.is_null()) {
        chat.insert("reasoning_effort".into(), effort.clone());
    }
    let stream = match body.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid("stream", "`stream` must be a boolean")),
    };
    if stream {
        chat.insert("stream".into(), Value::Bool(true));
        // `response.completed` always carries usage.
        chat.insert("stream_options".into(), json!({"include_usage": true}));
    }
    let tools = tools(&body, &mut chat)?;
    let tool_choice = tool_choice(body.get("tool_choice"), &mut chat)?;
    let text = text_format(body.get("text"), &mut chat)?;
    let number = |k: &str| body.get(k).filter(|v| v.is_number()).cloned().unwrap_or(json!(1.0));
    let echo = Echo {
        instructions,
        max_output_tokens,
        parallel_tool_calls: body.get("parallel_tool_calls").and_then(Value::as_bool).unwrap_or(true),
        temperature: number("temperature"),
        top_p: number("top_p"),
        text,
        tool_choice,
        tools,
        metadata: body.get("metadata").filter(|m| m.is_object()).cloned().unwrap_or_else(|| json!({})),
        user: body.get("user").filter(|u| u.is_string()).cloned().unwrap_or(Value::Null),
        previous_response_id: Value::Null,
        store: false,
    };
    Ok((chat, echo))
}

/// One input item, appended to `messages`.
fn input_item(messages: &mut Vec<Value>, i: usize, item: &Value) -> Result<(), ApiError> {
    let at = |f: &str| if f.is_empty() { format!("input[{i}]") } else { format!("input[{i}].{f}") };
    if !item.is_object() {
        return Err(invalid(at(""), "each input item must be an object"));
    }
    let str_field = |f: &str| item.get(f).and_then(Value::as_str);
    if super::history::reference(item).is_some() {
        return Err(invalid(at(""), format!("`item_reference` items are not supported: {STATELESS}")));
    }
    let kind = match item.get("type") {
        None | Some(Value::Null) => "message",
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Err(invalid(at("type"), "`type` must be a string")),
    };
    match kind {
        "message" => messages.push(message(item, &at)?),
        "function_call" => {
            let (Some(call_id), Some(name)) = (str_field("call_id"), str_field("name")) else {
                return Err(invalid(at("call_id"), "a `function_call` needs string `call_id` and `name`"));
            };
            let arguments = match item.get("arguments") {
                Some(Value::String(a)) => a.clone(),
                None | Some(Value::Null) => "{}".into(),
                Some(other) => other.to_string(),
            };
            let call = json!({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}});
            // Consecutive calls (and the assistant text before them) are one
            // assistant message in chat.
            match messages.last_mut() {
                Some(m) if m.get("role").and_then(Value::as_str) == Some("assistant") => {
                    match m.get_mut("tool_calls").and_then(Value::as_array_mut) {
                        Some(calls) => calls.push(call),
                        None => {
                            m["tool_calls"] = json!([call]);
                        }
                    }
                }
                _ => messages.push(json!({"role": "assistant", "content": null, "tool_calls": [call]})),
            }
        }
        "function_call_output" => {
            let Some(call_id) = str_field("call_id") else {
                return Err(invalid(at("call_id"), "a `function_call_output` needs a string `call_id`"));
            };
            let output = match item.get("output") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => texts(parts, &at("output"))?,
                _ => return Err(invalid(at("output"), "`output` must be a string or an array of text parts")),
            };
            messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": output}));
        }
        // Reasoning of an earlier turn: chat upstreams take none back.
        "reasoning" => {}
        other => return Err(invalid(at("type"), format!("input items of type `{other}` are not supported"))),
    }
    Ok(())
}

/// A message item as a chat message.
fn message(item: &Value, at: &dyn Fn(&str) -> String) -> Result<Value, ApiError> {
    let role = match item.get("role").and_then(Value::as_str) {
        Some(r @ ("system" | "developer" | "user" | "assistant")) => r,
        _ => return Err(invalid(at("role"), "`role` must be system, developer, user or assistant")),
    };
    let parts = match item.get("content") {
        Some(Value::String(s)) => return Ok(json!({"role": role, "content": s})),
        Some(Value::Array(parts)) => parts,
        _ => return Err(invalid(at("content"), "`content` must be a string or an array of parts")),
    };
    if role == "assistant" {
        // Assistant history: output text (and a refusal) as chat's string fields.
        let mut text = String::new();
        let mut refusal = None;
        for (j, p) in parts.iter().enumerate() {
            match p.get("type").and_then(Value::as_str) {
                Some("output_text" | "input_text" | "text") => text.push_str(p["text"].as_str().unwrap_or_default()),
                Some("refusal") => refusal = p.get("refusal").and_then(Value::as_str),
                _ => return Err(invalid(at(&format!("content[{j}].type")), "expected `output_text` or `refusal`")),
            }
        }
        let mut m = json!({"role": "assistant", "content": text});
        if let Some(r) = refusal {
            m["refusal"] = r.into();
        }
        return Ok(m);
    }
    let mut out = Vec::with_capacity(parts.len());
    for (j, p) in parts.iter().enumerate() {
        let pat = at(&format!("content[{j}]"));
        out.push(match p.get("type").and_then(Value::as_str) {
            Some("input_text" | "output_text" | "text") => match p.get("text").and_then(Value::as_str) {
                Some(t) => json!({"type": "text", "text": t}),
                None => return Err(invalid(format!("{pat}.text"), "a text part needs a string `text`")),
            },
            Some("input_image") => {
                let Some(url) = p.get("image_url").and_then(Value::as_str) else {
                    return Err(invalid(
                        format!("{pat}.image_url"),
                        "an image needs `image_url` (a URL or a data: URL); file ids need a file store",
                    ));
                };
                let detail = p.get("detail").and_then(Value::as_str).unwrap_or("auto");
                json!({"type": "image_url", "image_url": {"url": url, "detail": detail}})
            }
            Some("input_file") => {
                let mut file = Map::new();
                for k in ["file_data", "file_id", "filename"] {
                    if let Some(v) = p.get(k).filter(|v| v.is_string()) {
                        file.insert(k.into(), v.clone());
                    }
                }
                json!({"type": "file", "file": file})
            }
            _ => return Err(invalid(format!("{pat}.type"), "expected `input_text`, `input_image` or `input_file`")),
        });
    }
    Ok(json!({"role": role, "content": out}))
}

/// The text of a `function_call_output`'s parts.
fn texts(parts: &[Value], at: &str) -> Result<String, ApiError> {
    let mut out = String::new();
    for (j, p) in parts.iter().enumerate() {
        match (p.get("type").and_then(Value::as_str), p.get("text").and_then(Value::as_str)) {
            (Some("input_text" | "output_text" | "text"), Some(t)) => out.push_str(t),
            _ => return Err(invalid(format!("{at}[{j}]"), "only text parts can be a tool's output here")),
        }
    }
    Ok(out)
}

/// A function or format name as OpenAI allows it: `^[a-zA-Z0-9_-]{1,64}$`.
fn valid_name(n: &str) -> bool {
    !n.is_empty() && n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `tools` (flat function tools) as chat's nested ones; the echo.
fn tools(body: &Map<String, Value>, chat: &mut Map<String, Value>) -> Result<Value, ApiError> {
    let list = match body.get("tools") {
        None | Some(Value::Null) => return Ok(json!([])),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(invalid("tools", "`tools` must be an array")),
    };
    let mut echo = Vec::with_capacity(list.len());
    let mut out = Vec::with_capacity(list.len());
    for (i, t) in list.iter().enumerate() {
        if t.get("type").and_then(Value::as_str) != Some("function") {
            return Err(invalid(format!("tools[{i}].type"), "only `function` tools are supported (no hosted tools)"));
        }
        let Some(name) = t.get("name").and_then(Value::as_str).filter(|n| valid_name(n)) else {
            return Err(invalid(format!("tools[{i}].name"), "a function name must match ^[a-zA-Z0-9_-]{1,64}$"));
        };
        let parameters = t.get("parameters").cloned().unwrap_or(Value::Null);
        if !(parameters.is_object() || parameters.is_null()) {
            return Err(invalid(format!("tools[{i}].parameters"), "`parameters` must be a JSON Schema object"));
        }
        let description = t.get("description").filter(|d| d.is_string()).cloned().unwrap_or(Value::Null);
        let strict = t.get("strict").filter(|s| s.is_boolean()).cloned();
        let mut function = json!({"name": name});
        if !description.is_null() {
            function["description"] = description.clone();
        }
        if !parameters.is_null() {
            function["parameters"] = parameters.clone();
        }
        if let Some(s) = &strict {
            function["strict"] = s.clone();
        }
        out.push(json!({"type": "function", "function": function}));
        echo.push(json!({"type": "function", "name": name, "description": description, "parameters": parameters,
            "strict": strict.unwrap_or(Value::Null)}));
    }
    if !out.is_empty() {
        chat.insert("tools".into(), Value::Array(out));
    }
    Ok(Value::Array(echo))
}

/// `tool_choice`, flat, as chat's nested form; the echo.
fn tool_choice(choice: Option<&Value>, chat: &mut Map<String, Value>) -> Result<Value, ApiError> {
    let nested = |name: &Value| json!({"type": "function", "function": {"name": name}});
    let mapped = match choice {
        None | Some(Value::Null) => return Ok(json!("auto")),
        Some(Value::String(s)) if ["none", "auto", "required"].contains(&s.as_str()) => Value::String(s.clone()),
        Some(c) if c.get("type").and_then(Value::as_str) == Some("function") && c["name"].is_string() => {
            nested(&c["name"])
        }
        Some(c) if c.get("type").and_then(Value::as_str) == Some("allowed_tools") => {
            let mode = c.get("mode").cloned().unwrap_or(json!("auto"));
            let mut tools = Vec::new();
            for (i, t) in c.get("tools").and_then(Value::as_array).into_iter().flatten().enumerate() {
                match t.get("name").filter(|n| n.is_string()) {
                    Some(n) if t.get("type").and_then(Value::as_str) == Some("function") => tools.push(nested(n)),
                    _ => return Err(invalid(format!("tool_choice.tools[{i}]"), "only function tools can be allowed")),
                }
            }
            json!({"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": tools}})
        }
        Some(_) => {
            return Err(invalid(
                "tool_choice",
                "expected none, auto, required, {type: function, name} or {type: allowed_tools}",
            ))
        }
    };
    chat.insert("tool_choice".into(), mapped);
    Ok(choice.cloned().unwrap_or(Value::Null))
}

/// `text.format` as chat's `response_format`; the echo (`{"format": …}`).
fn text_format(text: Option<&Value>, chat: &mut Map<String, Value>) -> Result<Value, ApiError> {
    let Some(format) = text.and_then(|t| t.get("format")).filter(|f| !f.is_null()) else {
        return Ok(json!({"format": {"type": "text"}}));
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") => {}
        Some("json_object") => {
            chat.insert("response_format".into(), json!({"type": "json_object"}));
        }
        Some("json_schema") => {
            let name = match format.get("name").and_then(Value::as_str) {
                Some(n)
                    if !n.is_empty()
                        && n.len() <= 64
                        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
                {
                    n
                }
                _ => {
                    return Err(invalid("text.format.name", "`name` is required and must match ^[a-zA-Z0-9_-]{1,64}$"))
                }
            };
            let Some(schema) = format.get("schema").filter(|s| s.is_object()) else {
                return Err(invalid("text.format.schema", "`schema` must be a JSON Schema object"));
            };
            let mut js = json!({"name": name, "schema": schema});
            for k in ["strict", "description"] {
                if let Some(v) = format.get(k).filter(|v| !v.is_null()) {
                    js[k] = v.clone();
                }
            }
            chat.insert("response_format".into(), json!({"type": "json_schema", "json_schema": js}));
        }
        _ => return Err(invalid("text.format.type", "expected `text`, `json_object` or `json_schema`")),
    }
    Ok(json!({"format": format}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(body: Value) -> Map<String, Value> {
        to_chat(body.to_string().as_bytes()).unwrap().0
    }

    fn param(body: Value) -> String {
        match to_chat(body.to_string().as_bytes()) {
            Err(ApiError::InvalidField { param, .. }) => param,
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn items_become_messages() {
        let c = chat(json!({"model": "m", "instructions": "be brief", "max_output_tokens": 64, "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "weather?"},
                                         {"type": "input_image", "image_url": "data:image/png;base64,AA"}]},
            {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
             "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]},
            {"type": "function_call", "call_id": "call_1", "name": "w", "arguments": "{\"c\":1}", "id": "fc_1"},
            {"type": "function_call", "call_id": "call_2", "name": "w", "arguments": "{}"},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "rain"}]}
        ]}));
        let m = c["messages"].as_array().unwrap();
        assert_eq!(m.len(), 5, "{m:#?}");
        assert_eq!(m[0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(
            m[1]["content"][1],
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA", "detail": "auto"}})
        );
        assert_eq!(m[2]["content"], "Let me look.");
        assert_eq!(m[2]["tool_calls"][1]["id"], "call_2");
        assert_eq!(m[4], json!({"role": "tool", "tool_call_id": "call_2", "content": "rain"}));
        assert_eq!(c["max_tokens"], 64);
    }

    #[test]
    fn tools_and_formats_are_nested_for_chat() {
        let c = chat(json!({"model": "m", "input": "hi", "stream": true,
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
            "tool_choice": {"type": "function", "name": "f"},
            "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}, "strict": true}}}));
        assert_eq!(
            c["tools"][0],
            json!({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}})
        );
        assert_eq!(c["tool_choice"], json!({"type": "function", "function": {"name": "f"}}));
        assert_eq!(c["response_format"]["json_schema"]["name"], "out");
        assert_eq!(c["stream_options"]["include_usage"], true);
    }

    #[test]
    fn refuses_what_needs_a_store_and_names_the_field() {
        assert_eq!(
            param(json!({"model": "m", "input": "x", "previous_response_id": "resp_1"})),
            "previous_response_id"
        );
        assert_eq!(param(json!({"model": "m", "input": [{"type": "item_reference", "id": "msg_1"}]})), "input[0]");
        assert_eq!(param(json!({"model": "m"})), "input");
        assert_eq!(param(json!({"model": "m", "input": [{"type": "function_call", "name": "f"}]})), "input[0].call_id");
        assert_eq!(param(json!({"model": "m", "input": "x", "tools": [{"type": "web_search"}]})), "tools[0].type");
        assert_eq!(
            param(json!({"model": "m", "input": "x", "tools": [{"type": "function", "name": "a b"}]})),
            "tools[0].name"
        );
        assert_eq!(
            param(json!({"model": "m", "input": "x", "text": {"format": {"type": "json_schema"}}})),
            "text.format.name"
        );
        assert_eq!(param(json!({"model": "m", "input": "x", "max_output_tokens": 0})), "max_output_tokens");
    }
}
