//! The checks of a chat request's fields: each bad field is a 400 naming
//! it; what passes is kept on the [`ChatRequest`].

use super::ChatRequest;
use crate::api::json::{JsonView, Kind};
use crate::api::ApiError;
use bytes::Bytes;
use serde_json::Value;
use std::sync::OnceLock;

fn invalid(param: impl Into<String>, message: impl Into<String>) -> ApiError {
    ApiError::InvalidField { param: param.into(), message: message.into() }
}

const ROLES: [&str; 6] = ["system", "developer", "user", "assistant", "tool", "function"];

/// Checks a body; what the request keeps of it.
pub(super) fn check<J: JsonView>(body: &J) -> Result<ChatRequest, ApiError> {
    let model = match body.get("model").map(J::kind) {
        // A model ref names a cascade or an upstream model and ends up in
        // logs, headers and metric labels: control characters (a newline
        // above all) have no place in one.
        Some(Kind::String(m)) if m.chars().any(char::is_control) => {
            return Err(invalid("model", "`model` must not contain control characters"))
        }
        Some(Kind::String(m)) if !m.is_empty() => m.to_owned(),
        Some(Kind::String(_)) => return Err(invalid("model", "`model` must not be empty")),
        Some(_) => return Err(invalid("model", "`model` must be a string")),
        None => return Err(invalid("model", "missing required field `model`")),
    };
    match body.get("messages").map(J::kind) {
        Some(Kind::Array(msgs)) if !msgs.is_empty() => {
            for (i, m) in msgs.iter().enumerate() {
                check_message(i, m)?;
            }
        }
        Some(Kind::Array(_)) => return Err(invalid("messages", "`messages` must not be empty")),
        Some(_) => return Err(invalid("messages", "`messages` must be an array")),
        None => return Err(invalid("messages", "missing required field `messages`")),
    }
    let stream = match body.get("stream").map(J::kind) {
        None | Some(Kind::Null) => false,
        Some(Kind::Bool(b)) => b,
        Some(_) => return Err(invalid("stream", "`stream` must be a boolean")),
    };
    let include_usage = match body.get("stream_options").map(J::kind) {
        None | Some(Kind::Null) => false,
        Some(Kind::Object) => match body.get("stream_options").and_then(|o| o.get("include_usage")).map(J::kind) {
            None | Some(Kind::Null) => false,
            Some(Kind::Bool(b)) => b,
            Some(_) => return Err(invalid("stream_options.include_usage", "must be a boolean")),
        },
        Some(_) => return Err(invalid("stream_options", "`stream_options` must be an object")),
    };
    for field in ["max_tokens", "max_completion_tokens", "n"] {
        match body.get(field) {
            None => {}
            Some(v) if v.is_null() || v.as_u64().is_some_and(|n| n >= 1) => {}
            Some(_) => return Err(invalid(field, format!("`{field}` must be a positive integer"))),
        }
    }
    for (field, lo, hi) in [
        ("temperature", 0.0, 2.0),
        ("top_p", 0.0, 1.0),
        ("presence_penalty", -2.0, 2.0),
        ("frequency_penalty", -2.0, 2.0),
    ] {
        match body.get(field) {
            None => {}
            Some(v) if v.is_null() || v.as_f64().is_some_and(|v| (lo..=hi).contains(&v)) => {}
            Some(_) => return Err(invalid(field, format!("`{field}` must be a number between {lo} and {hi}"))),
        }
    }
    let several_choices = body.get("n").and_then(J::as_u64).is_some_and(|n| n > 1);
    let logprobs = matches!(body.get("logprobs").map(J::kind), Some(Kind::Bool(true)));
    let stream_keys = body.get("stream").is_some() || body.get("stream_options").is_some();
    let has_tools = check_tools(body)?;
    let wants_json = check_response_format(body)?;
    let shapes_output = has_tools || body.get("response_format").is_some_and(|r| !r.is_null());
    let user = ["user", "safety_identifier"]
        .iter()
        .find_map(|k| body.get(k).and_then(J::as_str))
        .map(|u| u.chars().take(256).collect());
    let body_user = body.get("user").and_then(J::as_str).map(str::to_owned);
    let max_tokens =
        ["max_completion_tokens", "max_tokens", "max_output_tokens"].iter().find_map(|f| body.get(f)?.as_u64());
    Ok(ChatRequest {
        raw: Bytes::new(),
        body: OnceLock::new(),
        model_at: None,
        model,
        stream,
        include_usage,
        several_choices,
        logprobs,
        stream_keys,
        prompt_tokens: 0,
        shapes_output,
        wants_json,
        caller: None,
        key_id: None,
        end_user: None,
        request_id: None,
        journal: None,
        user,
        body_user,
        max_tokens,
        prompt: Default::default(),
        load_relief: Vec::new(),
    })
}

/// The quality judge's facts of the last user message (its first text).
pub(super) fn prompt_facts<J: JsonView>(body: &J) -> crate::quality::text::PromptFacts {
    let messages = body.get("messages").and_then(J::as_array).unwrap_or_default();
    let Some(last) = messages.iter().rev().find(|m| m.get("role").and_then(J::as_str) == Some("user")) else {
        return crate::quality::text::PromptFacts::default();
    };
    let text = match last.get("content").map(J::kind) {
        Some(Kind::String(s)) => s,
        Some(Kind::Array(parts)) => parts.iter().find_map(|p| p.get("text").and_then(J::as_str)).unwrap_or_default(),
        _ => "",
    };
    crate::quality::text::PromptFacts::of(text)
}

/// Checks a message list as a client's `messages` is checked: a prompt
/// template's output goes through this before it replaces the client's.
pub fn check_messages(messages: &[Value]) -> Result<(), ApiError> {
    if messages.is_empty() {
        return Err(invalid("messages", "`messages` must not be empty"));
    }
    messages.iter().enumerate().try_for_each(|(i, m)| check_message(i, m))
}

fn check_message<J: JsonView>(i: usize, m: &J) -> Result<(), ApiError> {
    let p = |f: &str| format!("messages[{i}].{f}");
    if !matches!(m.kind(), Kind::Object) {
        return Err(invalid(format!("messages[{i}]"), "each message must be an object"));
    }
    let role = match m.get("role").map(J::kind) {
        Some(Kind::String(r)) if ROLES.contains(&r) => r,
        Some(Kind::String(r)) => {
            return Err(invalid(p("role"), format!("unknown role `{r}`: expected one of {}", ROLES.join(", "))))
        }
        Some(_) => return Err(invalid(p("role"), "`role` must be a string")),
        None => return Err(invalid(p("role"), "missing required field `role`")),
    };
    match m.get("content").map(J::kind) {
        Some(Kind::String(_)) => {}
        Some(Kind::Array(parts)) => {
            for (j, part) in parts.iter().enumerate() {
                if !part.get("type").is_some_and(J::is_string) {
                    return Err(invalid(
                        format!("messages[{i}].content[{j}].type"),
                        "each content part needs a string `type`",
                    ));
                }
            }
        }
        None | Some(Kind::Null) if role == "assistant" => {}
        None => return Err(invalid(p("content"), "missing required field `content`")),
        Some(_) => return Err(invalid(p("content"), "`content` must be a string or an array of parts")),
    }
    if role == "tool" && !m.get("tool_call_id").is_some_and(J::is_string) {
        return Err(invalid(p("tool_call_id"), "a `tool` message needs a string `tool_call_id`"));
    }
    if let Some(calls) = m.get("tool_calls") {
        let Some(calls) = calls.as_array() else {
            return Err(invalid(p("tool_calls"), "`tool_calls` must be an array"));
        };
        for (j, c) in calls.iter().enumerate() {
            let name_ok = c.get("function").and_then(|f| f.get("name")).is_some_and(J::is_string);
            if !c.get("id").is_some_and(J::is_string) || !name_ok {
                return Err(invalid(
                    format!("messages[{i}].tool_calls[{j}]"),
                    "a tool call needs a string `id` and `function.name`",
                ));
            }
        }
    }
    Ok(())
}

/// Checks `tools` and `tool_choice`; whether any tool is given.
fn check_tools<J: JsonView>(body: &J) -> Result<bool, ApiError> {
    let mut any = false;
    match body.get("tools").map(J::kind) {
        None | Some(Kind::Null) => {}
        Some(Kind::Array(tools)) => {
            for (i, t) in tools.iter().enumerate() {
                any = true;
                let name = t.get("function").and_then(|f| f.get("name")).and_then(J::as_str);
                if t.get("type").and_then(J::as_str) != Some("function") {
                    return Err(invalid(format!("tools[{i}].type"), "only `function` tools are supported"));
                }
                match name {
                    Some(n)
                        if !n.is_empty()
                            && n.len() <= 64
                            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') => {}
                    _ => {
                        return Err(invalid(
                            format!("tools[{i}].function.name"),
                            "a function name must match ^[a-zA-Z0-9_-]{1,64}$",
                        ))
                    }
                }
            }
        }
        Some(_) => return Err(invalid("tools", "`tools` must be an array")),
    }
    match body.get("tool_choice").map(J::kind) {
        None | Some(Kind::Null) | Some(Kind::Object) => Ok(any),
        Some(Kind::String(s)) if ["none", "auto", "required"].contains(&s) => Ok(any),
        Some(_) => Err(invalid("tool_choice", "`tool_choice` must be none, auto, required or an object")),
    }
}

/// Checks `response_format`; whether it asks for JSON.
fn check_response_format<J: JsonView>(body: &J) -> Result<bool, ApiError> {
    let Some(rf) = body.get("response_format").filter(|rf| !rf.is_null()) else {
        return Ok(false);
    };
    match rf.get("type").and_then(J::as_str) {
        Some("text") => Ok(false),
        Some("json_object") => Ok(true),
        Some("json_schema") => {
            let js = rf.get("json_schema");
            if !js.and_then(|j| j.get("name")).is_some_and(J::is_string) {
                return Err(invalid("response_format.json_schema.name", "`json_schema.name` is required"));
            }
            match js.and_then(|j| j.get("schema")).map(J::kind) {
                None | Some(Kind::Object) | Some(Kind::Bool(_)) => Ok(true),
                Some(_) => Err(invalid("response_format.json_schema.schema", "`schema` must be a JSON Schema object")),
            }
        }
        _ => Err(invalid("response_format.type", "expected `text`, `json_object` or `json_schema`")),
    }
}
