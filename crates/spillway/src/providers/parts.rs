//! Reading an OpenAI request the way every native translator does
//! (`anthropic`, `gemini`, `bedrock`): the conversation as alternating
//! turns, a `data:` image URL, tool-call arguments as an object, stop
//! sequences, a tool result's text, a function tool's parts. One reading,
//! so the formats cannot drift apart on what an OpenAI field means.
//!
//! Below the adapters, beside `translate`: pure functions, no I/O.

use serde_json::{json, Map, Value};

use super::translate::TranslateError;

/// The key under which tool-call arguments that are not a JSON object are
/// handed to formats that want an object (Anthropic's `input`, Gemini's
/// `args`, Bedrock's `input`): replaying an assistant turn with its broken
/// arguments replaced by `{}` would hide from the model what it said.
pub const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

/// A field of the request, an explicit `null` read as absent.
pub(crate) fn field<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

pub(crate) fn unsupported(detail: impl Into<String>) -> TranslateError {
    TranslateError::Unsupported(detail.into())
}

/// The conversation being built: turns of alternating roles, consecutive
/// messages of one role merged (the native formats want alternation, and
/// parallel tool results one turn). Blocks `first` picks (tool results)
/// go ahead of the others in a merged turn: the turn after the calls must
/// open with them.
pub(crate) struct Turns {
    /// `content` (Anthropic, Bedrock) or `parts` (Gemini).
    key: &'static str,
    first: fn(&Value) -> bool,
    turns: Vec<(&'static str, Vec<Value>)>,
}

impl Turns {
    pub(crate) fn new(key: &'static str, first: fn(&Value) -> bool) -> Self {
        Self { key, first, turns: Vec::new() }
    }

    /// Appends blocks as a turn of `role`; empty lists never split a run.
    pub(crate) fn push(&mut self, role: &'static str, blocks: Vec<Value>) {
        if blocks.is_empty() {
            return;
        }
        let first = self.first;
        let Some((_, last)) = self.turns.last_mut().filter(|(r, _)| *r == role) else {
            self.turns.push((role, blocks));
            return;
        };
        for block in blocks {
            if first(&block) {
                let at = last.iter().take_while(|b| first(b)).count();
                last.insert(at, block);
            } else {
                last.push(block);
            }
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// Every block of every turn.
    pub(crate) fn blocks(&self) -> impl Iterator<Item = &Value> {
        self.turns.iter().flat_map(|(_, b)| b)
    }

    pub(crate) fn into_value(self) -> Value {
        let key = self.key;
        Value::Array(self.turns.into_iter().map(|(role, blocks)| json!({ "role": role, key: blocks })).collect())
    }
}

/// An `image_url` part's URL (some clients send the string directly).
pub(crate) fn image_url(part: &Value) -> &str {
    let image = part.get("image_url");
    image.and_then(|i| i.get("url")).or(image).and_then(Value::as_str).unwrap_or("")
}

/// `data:<mime>;base64,<data>` as its media type and data.
pub(crate) fn data_url(url: &str) -> Option<(&str, &str)> {
    let (head, data) = url.strip_prefix("data:")?.split_once(',')?;
    Some((head.strip_suffix(";base64")?, data))
}

/// OpenAI's JSON-string `arguments` as an object. The model that wrote
/// them may have written anything, so this never fails: what is not an
/// object goes under [`RAW_ARGUMENTS_KEY`].
pub(crate) fn arguments_object(arguments: Option<&Value>) -> Value {
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

/// `stop` (a string or strings) as a list without empty ones.
pub(crate) fn stop_list(stop: Option<&Value>) -> Vec<Value> {
    match stop {
        Some(Value::String(s)) if !s.is_empty() => vec![Value::from(s.as_str())],
        Some(Value::Array(items)) => {
            items.iter().filter(|s| s.as_str().is_some_and(|s| !s.is_empty())).cloned().collect()
        }
        _ => Vec::new(),
    }
}

/// A `tool` message's content as text (text parts concatenated, as
/// OpenAI's models see them).
pub(crate) fn tool_result_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().map(|p| p.get("text").and_then(Value::as_str).unwrap_or("")).collect()
        }
        Some(other) => other.to_string(),
    }
}

/// A function tool's name, description and parameters (`None`: takes no
/// arguments); another tool type is unsupported.
pub(crate) fn function_tool(tool: &Value) -> Result<(&str, Option<&str>, Option<&Value>), TranslateError> {
    let kind = tool.get("type").and_then(Value::as_str).unwrap_or("");
    if kind != "function" {
        return Err(unsupported(format!("tool type `{kind}`")));
    }
    let function = tool.get("function");
    let name = function
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| unsupported("a function tool without a name"))?;
    let description = function.and_then(|f| f.get("description")).and_then(Value::as_str);
    let parameters = function.and_then(|f| f.get("parameters")).filter(|p| !p.is_null());
    Ok((name, description, parameters))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings() {
        assert_eq!(data_url("data:image/png;base64,AAAA"), Some(("image/png", "AAAA")));
        assert_eq!(data_url("data:image/png,AAAA"), None);
        assert_eq!(arguments_object(Some(&json!("{\"a\":1}"))), json!({"a": 1}));
        assert_eq!(arguments_object(Some(&json!("[1]"))), json!({RAW_ARGUMENTS_KEY: "[1]"}));
        assert_eq!(stop_list(Some(&json!(["", "END"]))), vec![json!("END")]);
        assert_eq!(tool_result_text(Some(&json!([{"type": "text", "text": "a"}, {"text": "b"}]))), "ab");
        let mut turns = Turns::new("content", |b| b.get("r").is_some());
        turns.push("user", vec![json!({"t": 1})]);
        turns.push("user", vec![json!({"r": 1})]);
        turns.push("user", vec![]);
        turns.push("assistant", vec![json!({"t": 2})]);
        assert_eq!(
            turns.into_value(),
            json!([{"role": "user", "content": [{"r": 1}, {"t": 1}]}, {"role": "assistant", "content": [{"t": 2}]}])
        );
    }
}
