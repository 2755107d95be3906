//! Tool mapping for the request translation: OpenAI `tools`, `tool_choice`,
//! assistant `tool_calls` and `tool` messages → Anthropic `tools`,
//! `tool_choice`, `tool_use` and `tool_result` blocks (reference §4.1, §4.5,
//! §9.4). Kept apart from the message walk in the parent module because the
//! tool rules are the part most likely to grow (allowed tools, custom tools).

use serde_json::{json, Value};

use crate::providers::translate::TranslateError;

/// The key under which tool-call arguments that are not a JSON object are
/// handed to Anthropic. `tool_use.input` must be an object, but replaying an
/// assistant turn with its broken arguments replaced by `{}` would hide from
/// the model what it actually said; wrapping keeps the text visible.
pub const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

pub(super) fn tool_use_block(call: &Value, at: usize) -> Result<Value, TranslateError> {
    let kind = call.get("type").and_then(Value::as_str).unwrap_or("function");
    if kind != "function" {
        return Err(TranslateError::Unsupported(format!("messages[{at}]: tool call type `{kind}`")));
    }
    // OpenAI `call_…` ids are accepted by Anthropic as they are (§9.4).
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| TranslateError::Unsupported(format!("messages[{at}]: tool call without an id")))?;
    let function = call.get("function");
    let name = function
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| TranslateError::Unsupported(format!("messages[{at}]: tool call without a function name")))?;
    let input = arguments_to_input(function.and_then(|f| f.get("arguments")));
    Ok(json!({ "type": "tool_use", "id": id, "name": name, "input": input }))
}

/// OpenAI's JSON-string `arguments` → Anthropic's object `input`. The model
/// that produced them may have written anything, so this never fails.
fn arguments_to_input(arguments: Option<&Value>) -> Value {
    match arguments {
        None | Some(Value::Null) => json!({}),
        Some(Value::Object(obj)) => Value::Object(obj.clone()),
        Some(Value::String(raw)) if raw.trim().is_empty() => json!({}),
        Some(Value::String(raw)) => match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(obj)) => Value::Object(obj),
            _ => json!({ RAW_ARGUMENTS_KEY: raw }),
        },
        Some(other) => json!({ RAW_ARGUMENTS_KEY: other.to_string() }),
    }
}

/// `tool` message → a `tool_result` block with the content as a string.
pub(super) fn tool_result_block(msg: &Value, at: usize) -> Result<Value, TranslateError> {
    let id = msg
        .get("tool_call_id")
        .and_then(Value::as_str)
        .ok_or_else(|| TranslateError::Unsupported(format!("messages[{at}]: tool message without tool_call_id")))?;
    let content = match msg.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        // Text parts are concatenated, as OpenAI models see them.
        Some(Value::Array(parts)) => {
            parts.iter().map(|p| p.get("text").and_then(Value::as_str).unwrap_or("").to_owned()).collect()
        }
        Some(other) => other.to_string(),
    };
    Ok(json!({ "type": "tool_result", "tool_use_id": id, "content": content }))
}

pub(super) fn tool(tool: &Value) -> Result<Value, TranslateError> {
    let kind = tool.get("type").and_then(Value::as_str).unwrap_or("");
    if kind != "function" {
        return Err(TranslateError::Unsupported(format!("tool type `{kind}`")));
    }
    let function = tool.get("function");
    let name = function
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| TranslateError::Unsupported("a function tool without a name".into()))?;
    // No `parameters` means the function takes no arguments (§1.3).
    let schema = function
        .and_then(|f| f.get("parameters"))
        .filter(|p| !p.is_null())
        .cloned()
        .unwrap_or_else(|| json!({ "type": "object", "properties": {} }));
    let mut out = json!({ "name": name, "input_schema": schema });
    if let Some(desc) = function.and_then(|f| f.get("description")).and_then(Value::as_str) {
        out["description"] = Value::from(desc);
    }
    Ok(out)
}

pub(super) fn tool_choice(choice: Option<&Value>, parallel: Option<bool>) -> Result<Option<Value>, TranslateError> {
    let mut out = match choice {
        None => json!({ "type": "auto" }),
        Some(Value::String(s)) => match s.as_str() {
            "auto" => json!({ "type": "auto" }),
            // `none` takes no further fields, so parallelism is moot.
            "none" => return Ok(Some(json!({ "type": "none" }))),
            "required" => json!({ "type": "any" }),
            other => return Err(TranslateError::Unsupported(format!("tool_choice `{other}`"))),
        },
        Some(obj) => {
            let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
            let name = obj.get("function").and_then(|f| f.get("name")).and_then(Value::as_str);
            match (kind, name) {
                ("function", Some(name)) => json!({ "type": "tool", "name": name }),
                _ => return Err(TranslateError::Unsupported(format!("tool_choice of type `{kind}`"))),
            }
        }
    };
    if parallel == Some(false) {
        out["disable_parallel_tool_use"] = Value::Bool(true);
    } else if choice.is_none() {
        // Nothing to say beyond Anthropic's own default.
        return Ok(None);
    }
    Ok(Some(out))
}
