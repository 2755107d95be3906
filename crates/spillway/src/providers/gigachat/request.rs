//! OpenAI Chat Completions request → GigaChat v1 `/chat/completions` body.
//!
//! Runs once per attempt, after prompt variants rewrote the request and
//! before the HTTP call. The GigaChat v1 contract looks like OpenAI's but
//! differs where it hurts (reference §5.2): tools are `functions`, a call has
//! no id and one call per message, arguments are objects, results are
//! `function` messages matched by name, `system` may only come first, and
//! `temperature` must be positive.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::shared::{arguments_object, call_names, flatten_text, functions_and_choice, ToolChoice};
use crate::providers::translate::TranslateError;

/// What OpenAI `temperature: 0` (greedy) becomes: GigaChat rejects 0, and
/// omitting it would fall back to the model's default, which is far from
/// greedy. Converters in the wild use the same tiny value (reference §5.2).
const TINY_TEMPERATURE: f64 = 1e-15;

/// Translates an OpenAI request into a GigaChat v1 body for `model_id`.
///
/// Choices made where GigaChat has no exact equivalent:
/// - `tool_choice: "required"` forces the only function when there is
///   exactly one, and is `auto` otherwise (GigaChat can only force by name).
/// - An assistant message with several `tool_calls` becomes one assistant
///   message per call, each followed by its own `function` result, so the
///   history keeps GigaChat's call/result alternation (consecutive
///   `function` messages are unverified).
/// - `system`/`developer` messages before the first other message are merged
///   into one leading system message; later ones become `user` messages in
///   place, which keeps their position in the dialogue.
/// - Fields GigaChat lacks (`stop`, `seed`, penalties, `response_format`,
///   `reasoning_effort`, `user`, …) are dropped: the normalizer enforces
///   JSON answers after the fact, and an unknown field risks a 422.
pub fn to_gigachat(req: &Value, model_id: &str) -> Result<Value, TranslateError> {
    let messages = req
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| TranslateError::Unsupported("a request without `messages`".into()))?;

    let mut body = Map::new();
    body.insert("model".into(), model_id.into());
    body.insert("messages".into(), Value::Array(convert_messages(messages)?));

    if let Some(stream) = req.get("stream").and_then(Value::as_bool) {
        body.insert("stream".into(), stream.into());
    }
    if let Some(t) = req.get("temperature").and_then(Value::as_f64) {
        let t = if t > 0.0 { t } else { TINY_TEMPERATURE };
        body.insert("temperature".into(), t.into());
    }
    if let Some(top_p) = req.get("top_p").filter(|v| v.is_number()) {
        body.insert("top_p".into(), top_p.clone());
    }
    if let Some(n) = req.get("n").and_then(Value::as_u64) {
        body.insert("n".into(), n.into());
    }
    let max_tokens = req
        .get("max_completion_tokens")
        .and_then(Value::as_u64)
        .or_else(|| req.get("max_tokens").and_then(Value::as_u64));
    if let Some(max) = max_tokens {
        body.insert("max_tokens".into(), max.into());
    }

    let (specs, choice) = functions_and_choice(req)?;
    if !specs.is_empty() {
        let function_call = match choice {
            Some(ToolChoice::None) => json!("none"),
            Some(ToolChoice::Named(name)) => json!({ "name": name }),
            Some(ToolChoice::Required) if specs.len() == 1 => json!({ "name": specs[0].name }),
            _ => json!("auto"),
        };
        let functions: Vec<Value> = specs
            .into_iter()
            .map(|spec| {
                let mut f = json!({"name": spec.name, "parameters": spec.parameters});
                if let Some(description) = spec.description {
                    f["description"] = description.into();
                }
                f
            })
            .collect();
        body.insert("functions".into(), functions.into());
        body.insert("function_call".into(), function_call);
    }
    Ok(Value::Object(body))
}

/// One call an assistant message makes: OpenAI id (absent for the legacy
/// `function_call` form), function name, arguments as an object.
struct Call<'a> {
    id: Option<&'a str>,
    name: &'a str,
    arguments: Value,
}

fn convert_messages(messages: &[Value]) -> Result<Vec<Value>, TranslateError> {
    let names = call_names(messages);
    let mut leading_system: Option<String> = None;
    let mut out = Vec::with_capacity(messages.len());
    let mut i = 0;
    while let Some(message) = messages.get(i) {
        i += 1;
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let text = flatten_text(message.get("content"))?;
        match role {
            "system" | "developer" if out.is_empty() => match leading_system.as_mut() {
                Some(first) => {
                    first.push_str("\n\n");
                    first.push_str(&text);
                }
                None => leading_system = Some(text),
            },
            "system" | "developer" | "user" => {
                out.push(json!({"role": "user", "content": text}));
            }
            "assistant" => {
                let calls = assistant_calls(message)?;
                if calls.is_empty() {
                    out.push(json!({"role": "assistant", "content": text}));
                    continue;
                }
                // The `tool` messages answering this assistant message.
                let mut results = Vec::new();
                while let Some(next) = messages.get(i) {
                    if next.get("role").and_then(Value::as_str) != Some("tool") {
                        break;
                    }
                    results.push(next);
                    i += 1;
                }
                let mut used = vec![false; results.len()];
                for (k, call) in calls.into_iter().enumerate() {
                    // Only the first message keeps the text: GigaChat wants a
                    // string there, never null, so the others get "".
                    let content = if k == 0 { text.as_str() } else { "" };
                    out.push(json!({
                        "role": "assistant",
                        "content": content,
                        "function_call": {"name": call.name, "arguments": call.arguments},
                    }));
                    for (r, result) in results.iter().enumerate() {
                        let answers =
                            call.id.is_some() && result.get("tool_call_id").and_then(Value::as_str) == call.id;
                        if answers && !used[r] {
                            used[r] = true;
                            out.push(function_message(call.name, result)?);
                        }
                    }
                }
                // Results whose id belongs to another assistant message.
                for (result, _) in results.iter().zip(&used).filter(|(_, used)| !**used) {
                    out.push(function_message(tool_name(result, &names)?, result)?);
                }
            }
            "tool" => out.push(function_message(tool_name(message, &names)?, message)?),
            "function" => {
                let name = message
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| TranslateError::Unsupported("a `function` message without a name".into()))?;
                out.push(function_message(name, message)?);
            }
            other => return Err(TranslateError::Unsupported(format!("messages with role `{other}`"))),
        }
    }
    if let Some(system) = leading_system {
        out.insert(0, json!({"role": "system", "content": system}));
    }
    Ok(out)
}

/// The calls of an assistant message: `tool_calls`, or the legacy
/// `function_call` object.
fn assistant_calls(message: &Value) -> Result<Vec<Call<'_>>, TranslateError> {
    let mut calls = Vec::new();
    if let Some(tool_calls) = message.get("tool_calls").and_then(Value::as_array) {
        for call in tool_calls {
            let function = call.get("function").unwrap_or(&Value::Null);
            calls.push(Call {
                id: call.get("id").and_then(Value::as_str),
                name: function_name(function)?,
                arguments: arguments_object(function.get("arguments"))?,
            });
        }
    } else if let Some(function) = message.get("function_call").filter(|f| f.is_object()) {
        calls.push(Call {
            id: None,
            name: function_name(function)?,
            arguments: arguments_object(function.get("arguments"))?,
        });
    }
    Ok(calls)
}

fn function_name(function: &Value) -> Result<&str, TranslateError> {
    function
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| TranslateError::Unsupported("a tool call without a function name".into()))
}

/// The function name a `tool` message answers, from its `tool_call_id`.
fn tool_name<'a>(message: &Value, names: &'a HashMap<String, String>) -> Result<&'a str, TranslateError> {
    let id = message.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
    names.get(id).map(String::as_str).ok_or_else(|| {
        TranslateError::Unsupported(format!(
            "a tool result for `{id}`, which no assistant message in the request calls"
        ))
    })
}

/// A GigaChat `function` result message. Its content must be JSON text
/// (reference §5.2); plain text is encoded as a JSON string, as converters do.
fn function_message(name: &str, message: &Value) -> Result<Value, TranslateError> {
    let text = flatten_text(message.get("content"))?;
    let content = if serde_json::from_str::<Value>(&text).is_ok() { text } else { Value::String(text).to_string() };
    Ok(json!({"role": "function", "name": name, "content": content}))
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
