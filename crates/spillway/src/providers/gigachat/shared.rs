//! OpenAI-side helpers shared by the GigaChat and Yandex translators.
//!
//! Both native formats lack call ids, want plain-string message text and
//! function arguments as JSON objects, and both need their stream decoders to
//! build the same OpenAI chunks. These helpers live here (and the Yandex
//! translator reuses them) because the brief keeps `translate.rs` untouched;
//! they are candidates to move next to it once a third adapter needs them.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::providers::translate::TranslateError;

/// A fresh OpenAI-style tool-call id, `call_` and 24 random hex digits.
///
/// Neither GigaChat nor Yandex has call ids; the id only has to be unique
/// within the conversation so a client can pair its `tool` answer with the
/// call (SPEC reference §9.4). 96 random bits make a clash negligible.
pub(crate) fn new_call_id() -> String {
    format!("call_{:016x}{:08x}", fastrand::u64(..), fastrand::u32(..))
}

/// A `Malformed` error for the given wire format.
pub(crate) fn malformed(format: &'static str, detail: impl Into<String>) -> TranslateError {
    TranslateError::Malformed { format, detail: detail.into() }
}

/// Flattens an OpenAI message `content` (string, null or an array of parts)
/// into the plain string both native formats want.
///
/// Text and refusal parts are joined with a newline so that the boundaries a
/// client drew between parts survive. Images, audio and files cannot be
/// expressed in either native text format; silently dropping them would
/// change the question, so they are `Unsupported` and the runner moves on.
pub(crate) fn flatten_text(content: Option<&Value>) -> Result<String, TranslateError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for part in parts {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or("text");
                let text = match kind {
                    "text" => part.get("text").and_then(Value::as_str),
                    "refusal" => part.get("refusal").and_then(Value::as_str),
                    other => return Err(TranslateError::Unsupported(format!("content part of type `{other}`"))),
                };
                texts.push(text.unwrap_or_default());
            }
            Ok(texts.join("\n"))
        }
        Some(_) => {
            Err(TranslateError::Unsupported("message content that is neither a string nor an array of parts".into()))
        }
    }
}

/// One function the client offers, in the neutral form both formats share.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FunctionSpec {
    pub name: String,
    pub description: Option<String>,
    /// A JSON Schema object; an empty object schema when the client left it
    /// out (OpenAI's "takes no arguments").
    pub parameters: Value,
}

/// What the client said about calling tools, before provider mapping.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolChoice {
    None,
    Auto,
    Required,
    Named(String),
}

/// Reads `tools` (or the legacy `functions`) and `tool_choice` (or the legacy
/// `function_call`).
///
/// `allowed_tools` choices narrow the returned list to the allowed names and
/// become `Auto`/`Required`, which is as close as a provider without that
/// feature gets. When tools are present and no choice is given the result is
/// `Auto`, OpenAI's default; without tools it is `None` (nothing to send).
pub(crate) fn functions_and_choice(req: &Value) -> Result<(Vec<FunctionSpec>, Option<ToolChoice>), TranslateError> {
    let mut specs = Vec::new();
    if let Some(tools) = req.get("tools").and_then(Value::as_array) {
        for tool in tools {
            let kind = tool.get("type").and_then(Value::as_str).unwrap_or("function");
            if kind != "function" {
                return Err(TranslateError::Unsupported(format!("tools of type `{kind}`")));
            }
            specs.push(spec_from(tool.get("function").unwrap_or(&Value::Null))?);
        }
    } else if let Some(functions) = req.get("functions").and_then(Value::as_array) {
        for function in functions {
            specs.push(spec_from(function)?);
        }
    }
    let raw = req.get("tool_choice").or_else(|| req.get("function_call"));
    let choice = match raw {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match s.as_str() {
            "none" => Some(ToolChoice::None),
            "auto" => Some(ToolChoice::Auto),
            "required" => Some(ToolChoice::Required),
            other => return Err(TranslateError::Unsupported(format!("tool_choice `{other}`"))),
        },
        Some(obj) if obj.get("type").and_then(Value::as_str) == Some("allowed_tools") => {
            let allowed = obj.get("allowed_tools").unwrap_or(obj);
            let names: Vec<&str> = allowed
                .get("tools")
                .and_then(Value::as_array)
                .map(|tools| tools.iter().filter_map(tool_name).collect())
                .unwrap_or_default();
            specs.retain(|spec| names.contains(&spec.name.as_str()));
            match allowed.get("mode").and_then(Value::as_str) {
                Some("required") => Some(ToolChoice::Required),
                _ => Some(ToolChoice::Auto),
            }
        }
        Some(obj) => match tool_name(obj) {
            Some(name) => Some(ToolChoice::Named(name.to_owned())),
            None => return Err(TranslateError::Unsupported("tool_choice without a name".into())),
        },
    };
    if specs.is_empty() {
        return Ok((specs, None));
    }
    Ok((specs, Some(choice.unwrap_or(ToolChoice::Auto))))
}

/// The function name of `{"type":"function","function":{"name"}}` or of the
/// legacy `{"name"}`.
fn tool_name(v: &Value) -> Option<&str> {
    v.get("function").and_then(|f| f.get("name")).or_else(|| v.get("name")).and_then(Value::as_str)
}

fn spec_from(function: &Value) -> Result<FunctionSpec, TranslateError> {
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| TranslateError::Unsupported("a function tool without a name".into()))?;
    let parameters = match function.get("parameters") {
        Some(p @ Value::Object(_)) => p.clone(),
        _ => json!({"type": "object", "properties": {}}),
    };
    Ok(FunctionSpec {
        name: name.to_owned(),
        description: function.get("description").and_then(Value::as_str).map(str::to_owned),
        parameters,
    })
}

/// Maps every `tool_calls[].id` in the request's assistant messages to its
/// function name, so `tool` messages can be given the name the native
/// formats match results by (reference §9.4).
pub(crate) fn call_names(messages: &[Value]) -> HashMap<String, String> {
    let mut names = HashMap::new();
    for message in messages {
        let calls = message.get("tool_calls").and_then(Value::as_array);
        for call in calls.into_iter().flatten() {
            let id = call.get("id").and_then(Value::as_str);
            let name = call.get("function").and_then(|f| f.get("name")).and_then(Value::as_str);
            if let (Some(id), Some(name)) = (id, name) {
                names.insert(id.to_owned(), name.to_owned());
            }
        }
    }
    names
}

/// Parses OpenAI's JSON-string `arguments` into the object both native
/// formats want. An empty string means no arguments. Anything that is not a
/// JSON object cannot be expressed there, and guessing (wrapping it, sending
/// `{}`) would silently change the conversation, so it is `Unsupported`.
pub(crate) fn arguments_object(arguments: Option<&Value>) -> Result<Value, TranslateError> {
    let parsed = match arguments {
        None | Some(Value::Null) => return Ok(Value::Object(Map::new())),
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(Value::Object(Map::new())),
        Some(Value::String(s)) => serde_json::from_str::<Value>(s).ok(),
        Some(other) => Some(other.clone()),
    };
    match parsed {
        Some(obj @ Value::Object(_)) => Ok(obj),
        _ => Err(TranslateError::Unsupported("tool-call arguments in the history are not a JSON object".into())),
    }
}

/// Renders native (object) arguments as OpenAI's JSON string. A string is
/// taken to be JSON text already (the unverified streamed-pieces case).
pub(crate) fn arguments_string(arguments: Option<&Value>) -> String {
    match arguments {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Reads a token counter that may be a JSON number or, as proto3 JSON
/// encodes int64, a decimal string.
pub(crate) fn as_count(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// An OpenAI usage object; `total` falls back to the sum.
pub(crate) fn usage(prompt: u64, completion: u64, total: Option<u64>) -> Map<String, Value> {
    let mut usage = Map::new();
    usage.insert("prompt_tokens".into(), prompt.into());
    usage.insert("completion_tokens".into(), completion.into());
    usage.insert("total_tokens".into(), total.unwrap_or(prompt + completion).into());
    usage
}

/// One streamed choice: `delta` plus a finish reason (or null).
pub(crate) fn stream_choice(index: u64, delta: Value, finish: Option<&str>) -> Value {
    json!({"index": index, "delta": delta, "logprobs": null, "finish_reason": finish})
}

/// An OpenAI `chat.completion.chunk` without `id`/`created`/`model` (the
/// gateway stamps those). With `include_usage` every chunk but the last
/// carries `usage: null`, as OpenAI does.
pub(crate) fn chunk(choices: Vec<Value>, include_usage: bool) -> Value {
    let mut chunk = json!({"object": "chat.completion.chunk", "choices": choices});
    if include_usage {
        chunk["usage"] = Value::Null;
    }
    chunk
}

/// The final usage chunk: empty `choices`, only `usage`.
pub(crate) fn usage_chunk(usage: Value) -> Value {
    json!({"object": "chat.completion.chunk", "choices": [], "usage": usage})
}

/// A short, printable excerpt of an upstream body for the attempt log.
pub(crate) fn snippet(body: &[u8]) -> String {
    const MAX: usize = 300;
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_are_prefixed_hex_and_distinct() {
        let a = new_call_id();
        assert!(a.starts_with("call_"));
        assert_eq!(a.len(), 5 + 24);
        assert!(a[5..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, new_call_id());
    }

    #[test]
    fn flattens_text_parts_and_rejects_images() {
        let parts = json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]);
        assert_eq!(flatten_text(Some(&parts)).unwrap(), "a\nb");
        assert_eq!(flatten_text(None).unwrap(), "");
        let image = json!([{"type": "image_url", "image_url": {"url": "x"}}]);
        assert!(matches!(flatten_text(Some(&image)), Err(TranslateError::Unsupported(_))));
    }

    #[test]
    fn arguments_round_trip() {
        let obj = arguments_object(Some(&json!("{\"city\":\"Oslo\"}"))).unwrap();
        assert_eq!(obj, json!({"city": "Oslo"}));
        assert_eq!(arguments_object(Some(&json!(""))).unwrap(), json!({}));
        assert!(arguments_object(Some(&json!("{broken"))).is_err());
        assert!(arguments_object(Some(&json!("[1]"))).is_err());
        assert_eq!(arguments_string(Some(&obj)), "{\"city\":\"Oslo\"}");
    }

    #[test]
    fn allowed_tools_narrow_the_list() {
        let req = json!({
            "tools": [
                {"type": "function", "function": {"name": "a"}},
                {"type": "function", "function": {"name": "b"}}
            ],
            "tool_choice": {"type": "allowed_tools", "allowed_tools": {
                "mode": "required", "tools": [{"type": "function", "function": {"name": "b"}}]}}
        });
        let (specs, choice) = functions_and_choice(&req).unwrap();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].name, "b");
        assert_eq!(choice, Some(ToolChoice::Required));
    }

    #[test]
    fn counts_accept_strings() {
        assert_eq!(as_count(Some(&json!("26"))), Some(26));
        assert_eq!(as_count(Some(&json!(7))), Some(7));
        assert_eq!(as_count(Some(&json!("x"))), None);
    }

    #[test]
    fn snippet_truncates_on_char_boundaries() {
        let long = "я".repeat(400);
        let s = snippet(long.as_bytes());
        assert_eq!(s.chars().count(), 301);
    }
}
