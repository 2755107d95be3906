//! OpenAI `tools` and `tool_choice` → Gemini `tools[].functionDeclarations`
//! and `toolConfig.functionCallingConfig` (round3.md §2.2): `auto` →
//! `AUTO`, `none` → `NONE`, `required` → `ANY`, a named function → `ANY`
//! with `allowedFunctionNames`. Parameters go as `parametersJsonSchema`
//! (JSON Schema, not the OpenAPI subset of `parameters`).

use serde_json::{json, Map, Value};

use crate::providers::parts::{field, function_tool, unsupported};
use crate::providers::translate::TranslateError;

/// Adds `tools` and `toolConfig` to `out`; true when a call is forced
/// (`ANY`), which rules out a JSON response mime type.
pub(super) fn add_tools(req: &Map<String, Value>, out: &mut Map<String, Value>) -> Result<bool, TranslateError> {
    let declarations = match field(req, "tools").and_then(Value::as_array) {
        Some(tools) => tools.iter().map(declaration).collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    // A `tool_choice` without tools (the OpenAI SDK sends `none` so) says
    // nothing Gemini needs.
    if declarations.is_empty() {
        return Ok(false);
    }
    out.insert("tools".into(), json!([{ "functionDeclarations": declarations }]));
    let config = match field(req, "tool_choice") {
        None => return Ok(false),
        Some(Value::String(s)) => match s.as_str() {
            "auto" => json!({ "mode": "AUTO" }),
            "none" => json!({ "mode": "NONE" }),
            "required" => json!({ "mode": "ANY" }),
            other => return Err(unsupported(format!("tool_choice `{other}`"))),
        },
        Some(obj) => match obj.get("function").and_then(|f| f.get("name")).and_then(Value::as_str) {
            Some(name) if obj.get("type").and_then(Value::as_str) == Some("function") => {
                json!({ "mode": "ANY", "allowedFunctionNames": [name] })
            }
            _ => return Err(unsupported("tool_choice of another type than function")),
        },
    };
    let forced = config["mode"] == "ANY";
    out.insert("toolConfig".into(), json!({ "functionCallingConfig": config }));
    Ok(forced)
}

fn declaration(tool: &Value) -> Result<Value, TranslateError> {
    let (name, description, parameters) = function_tool(tool)?;
    let mut out = json!({ "name": name });
    if let Some(desc) = description {
        out["description"] = Value::from(desc);
    }
    // No `parameters`: a function without arguments (none is sent).
    if let Some(params) = parameters {
        out["parametersJsonSchema"] = params.clone();
    }
    Ok(out)
}
