//! Tool mapping for the request translation: OpenAI `tools`, `tool_choice`,
//! assistant `tool_calls` and `tool` messages → Anthropic `tools`,
//! `tool_choice`, `tool_use` and `tool_result` blocks (reference §4.1, §4.5,
//! §9.4). Kept apart from the message walk in the parent module because the
//! tool rules are the part most likely to grow (allowed tools, custom tools).

use serde_json::{json, Value};

use crate::providers::parts::{arguments_object, function_tool, tool_result_text};
use crate::providers::translate::TranslateError;

pub use crate::providers::parts::RAW_ARGUMENTS_KEY;

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
    // `tool_use.input` must be an object (see `RAW_ARGUMENTS_KEY`).
    let input = arguments_object(function.and_then(|f| f.get("arguments")));
    Ok(json!({ "type": "tool_use", "id": id, "name": name, "input": input }))
}

/// `tool` message → a `tool_result` block with the content as a string.
pub(super) fn tool_result_block(msg: &Value, at: usize) -> Result<Value, TranslateError> {
    let id = msg
        .get("tool_call_id")
        .and_then(Value::as_str)
        .ok_or_else(|| TranslateError::Unsupported(format!("messages[{at}]: tool message without tool_call_id")))?;
    let content = tool_result_text(msg.get("content"));
    Ok(json!({ "type": "tool_result", "tool_use_id": id, "content": content }))
}

pub(super) fn tool(tool: &Value) -> Result<Value, TranslateError> {
    let (name, description, parameters) = function_tool(tool)?;
    // No `parameters` means the function takes no arguments (§1.3).
    let schema = parameters.cloned().unwrap_or_else(|| json!({ "type": "object", "properties": {} }));
    let mut out = json!({ "name": name, "input_schema": schema });
    if let Some(desc) = description {
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
