//! Validation of `POST /v1/chat/completions` bodies.
//!
//! The body is kept as a JSON map (so fields Spillway does not know pass
//! through to OpenAI-compatible upstreams untouched), after checking the
//! fields the gateway relies on. A bad field is a 400 naming it, before any
//! upstream is called.

use super::ApiError;
use serde_json::{Map, Value};

/// A validated chat request.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// The whole body as sent (its `model` is rewritten per attempt).
    pub body: Map<String, Value>,
    /// The requested cascade, model ref or `auto`.
    pub model: String,
    /// `stream: true`.
    pub stream: bool,
    /// `stream_options.include_usage: true`.
    pub include_usage: bool,
}

fn invalid(param: impl Into<String>, message: impl Into<String>) -> ApiError {
    ApiError::InvalidField { param: param.into(), message: message.into() }
}

const ROLES: [&str; 6] = ["system", "developer", "user", "assistant", "tool", "function"];

impl ChatRequest {
    /// Parses and validates a request body.
    pub fn parse(bytes: &[u8]) -> Result<Self, ApiError> {
        // One UTF-8 check of the whole body, not one per string.
        let text =
            std::str::from_utf8(bytes).map_err(|e| ApiError::InvalidJson(format!("the body is not UTF-8: {e}")))?;
        let value: Value = serde_json::from_str(text).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
        let Value::Object(body) = value else {
            return Err(ApiError::InvalidJson("the body must be a JSON object".into()));
        };
        Self::from_map(body)
    }

    /// Validates an already parsed body.
    pub fn from_map(body: Map<String, Value>) -> Result<Self, ApiError> {
        let model = match body.get("model") {
            Some(Value::String(m)) if !m.is_empty() => m.clone(),
            Some(Value::String(_)) => return Err(invalid("model", "`model` must not be empty")),
            Some(_) => return Err(invalid("model", "`model` must be a string")),
            None => return Err(invalid("model", "missing required field `model`")),
        };
        match body.get("messages") {
            Some(Value::Array(msgs)) if !msgs.is_empty() => {
                for (i, m) in msgs.iter().enumerate() {
                    check_message(i, m)?;
                }
            }
            Some(Value::Array(_)) => return Err(invalid("messages", "`messages` must not be empty")),
            Some(_) => return Err(invalid("messages", "`messages` must be an array")),
            None => return Err(invalid("messages", "missing required field `messages`")),
        }
        let stream = match body.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(invalid("stream", "`stream` must be a boolean")),
        };
        let include_usage = match body.get("stream_options") {
            None | Some(Value::Null) => false,
            Some(Value::Object(o)) => match o.get("include_usage") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(invalid("stream_options.include_usage", "must be a boolean")),
            },
            Some(_) => return Err(invalid("stream_options", "`stream_options` must be an object")),
        };
        for field in ["max_tokens", "max_completion_tokens", "n"] {
            match body.get(field) {
                None | Some(Value::Null) => {}
                Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v >= 1) => {}
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
                None | Some(Value::Null) => {}
                Some(Value::Number(n)) if n.as_f64().is_some_and(|v| (lo..=hi).contains(&v)) => {}
                Some(_) => return Err(invalid(field, format!("`{field}` must be a number between {lo} and {hi}"))),
            }
        }
        check_tools(&body)?;
        check_response_format(&body)?;
        Ok(Self { body, model, stream, include_usage })
    }

    /// The `response_format` object, when the client asked for JSON.
    pub fn wants_json(&self) -> bool {
        matches!(
            self.body.get("response_format").and_then(|r| r.get("type")).and_then(Value::as_str),
            Some("json_object" | "json_schema")
        )
    }
}

fn check_message(i: usize, m: &Value) -> Result<(), ApiError> {
    let p = |f: &str| format!("messages[{i}].{f}");
    let Value::Object(obj) = m else {
        return Err(invalid(format!("messages[{i}]"), "each message must be an object"));
    };
    let role = match obj.get("role") {
        Some(Value::String(r)) if ROLES.contains(&r.as_str()) => r.as_str(),
        Some(Value::String(r)) => {
            return Err(invalid(p("role"), format!("unknown role `{r}`: expected one of {}", ROLES.join(", "))))
        }
        Some(_) => return Err(invalid(p("role"), "`role` must be a string")),
        None => return Err(invalid(p("role"), "missing required field `role`")),
    };
    match obj.get("content") {
        Some(Value::String(_)) => {}
        Some(Value::Array(parts)) => {
            for (j, part) in parts.iter().enumerate() {
                if !part.get("type").is_some_and(Value::is_string) {
                    return Err(invalid(
                        format!("messages[{i}].content[{j}].type"),
                        "each content part needs a string `type`",
                    ));
                }
            }
        }
        None | Some(Value::Null) if role == "assistant" => {}
        None => return Err(invalid(p("content"), "missing required field `content`")),
        Some(_) => return Err(invalid(p("content"), "`content` must be a string or an array of parts")),
    }
    if role == "tool" && !obj.get("tool_call_id").is_some_and(Value::is_string) {
        return Err(invalid(p("tool_call_id"), "a `tool` message needs a string `tool_call_id`"));
    }
    if let Some(calls) = obj.get("tool_calls") {
        let Value::Array(calls) = calls else {
            return Err(invalid(p("tool_calls"), "`tool_calls` must be an array"));
        };
        for (j, c) in calls.iter().enumerate() {
            let name_ok = c.get("function").and_then(|f| f.get("name")).is_some_and(Value::is_string);
            if !c.get("id").is_some_and(Value::is_string) || !name_ok {
                return Err(invalid(
                    format!("messages[{i}].tool_calls[{j}]"),
                    "a tool call needs a string `id` and `function.name`",
                ));
            }
        }
    }
    Ok(())
}

fn check_tools(body: &Map<String, Value>) -> Result<(), ApiError> {
    match body.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(tools)) => {
            for (i, t) in tools.iter().enumerate() {
                let name = t.get("function").and_then(|f| f.get("name")).and_then(Value::as_str);
                if t.get("type").and_then(Value::as_str) != Some("function") {
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
    match body.get("tool_choice") {
        None | Some(Value::Null) | Some(Value::Object(_)) => Ok(()),
        Some(Value::String(s)) if ["none", "auto", "required"].contains(&s.as_str()) => Ok(()),
        Some(_) => Err(invalid("tool_choice", "`tool_choice` must be none, auto, required or an object")),
    }
}

fn check_response_format(body: &Map<String, Value>) -> Result<(), ApiError> {
    let Some(rf) = body.get("response_format") else {
        return Ok(());
    };
    if rf.is_null() {
        return Ok(());
    }
    match rf.get("type").and_then(Value::as_str) {
        Some("text" | "json_object") => Ok(()),
        Some("json_schema") => {
            let js = rf.get("json_schema");
            if !js.and_then(|j| j.get("name")).is_some_and(Value::is_string) {
                return Err(invalid("response_format.json_schema.name", "`json_schema.name` is required"));
            }
            match js.and_then(|j| j.get("schema")) {
                None | Some(Value::Object(_)) | Some(Value::Bool(_)) => Ok(()),
                Some(_) => Err(invalid("response_format.json_schema.schema", "`schema` must be a JSON Schema object")),
            }
        }
        _ => Err(invalid("response_format.type", "expected `text`, `json_object` or `json_schema`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(body: &str) -> String {
        match ChatRequest::parse(body.as_bytes()) {
            Err(ApiError::InvalidField { param, .. }) => param,
            Err(ApiError::InvalidJson(_)) => "<json>".into(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn names_the_bad_field() {
        assert_eq!(param("{"), "<json>");
        assert_eq!(param("[]"), "<json>");
        assert_eq!(param(r#"{"messages":[{"role":"user","content":"hi"}]}"#), "model");
        assert_eq!(param(r#"{"model":"a"}"#), "messages");
        assert_eq!(param(r#"{"model":"a","messages":"hi"}"#), "messages");
        assert_eq!(param(r#"{"model":"a","messages":[]}"#), "messages");
        assert_eq!(param(r#"{"model":"a","messages":[{"role":"bot","content":"x"}]}"#), "messages[0].role");
        assert_eq!(param(r#"{"model":"a","messages":[{"role":"user","content":5}]}"#), "messages[0].content");
        assert_eq!(param(r#"{"model":"a","messages":[{"role":"tool","content":"x"}]}"#), "messages[0].tool_call_id");
        assert_eq!(param(r#"{"model":"a","messages":[{"role":"user","content":"x"}],"stream":"yes"}"#), "stream");
        assert_eq!(param(r#"{"model":"a","messages":[{"role":"user","content":"x"}],"max_tokens":0}"#), "max_tokens");
        assert_eq!(param(r#"{"model":"a","messages":[{"role":"user","content":"x"}],"temperature":3}"#), "temperature");
        assert_eq!(
            param(
                r#"{"model":"a","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a b"}}]}"#
            ),
            "tools[0].function.name"
        );
        assert_eq!(
            param(r#"{"model":"a","messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}}"#),
            "response_format.type"
        );
    }

    #[test]
    fn accepts_a_full_request() {
        let r = ChatRequest::parse(
            br#"{"model":"chat","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"1"}],"response_format":{"type":"json_object"},"x_extra":1}"#,
        )
        .unwrap();
        assert!(r.stream && r.include_usage && r.wants_json());
        assert_eq!(r.model, "chat");
        assert_eq!(r.body["x_extra"], 1);
    }
}
