//! OpenAI Chat Completions request → Yandex Foundation Models native
//! `/foundationModels/v1/completion` body.
//!
//! Runs once per attempt, before the HTTP call. The native body is the proto3
//! JSON form of `CompletionRequest` (reference §6.2): a `modelUri` that names
//! the folder, options under `completionOptions` (int64 `maxTokens` as a
//! string), messages with `text` instead of `content`, and tool calls and
//! results as `toolCallList` / `toolResultList` messages matched by function
//! name, since Yandex has no call ids.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::providers::gigachat::shared::{
    arguments_object, call_names, flatten_text, functions_and_choice, ToolChoice,
};
use crate::providers::translate::TranslateError;

/// Translates an OpenAI request into a Yandex native completion body.
///
/// `model_id` is the configured id (`yandexgpt/latest`), which becomes
/// `gpt://<folder_id>/yandexgpt/latest`; an id that already is a URI
/// (`gpt://…`, or a fine-tune's `ds://…`) is used as is.
///
/// Choices made where the formats differ:
/// - `temperature` is clamped to 0..=1, YandexGPT's range.
/// - A Yandex message holds text *or* a tool-call list, so an assistant
///   message with both becomes a text message followed by the call message.
/// - Consecutive `tool` results merge into one `user` message with a
///   `toolResultList`, named through the ids of the request's `tool_calls`.
/// - `response_format` maps to `jsonObject` / `jsonSchema`.
/// - Fields without a native counterpart (`stop`, `n`, `seed`, penalties,
///   `top_p`, `reasoning_effort`, `user`, …) are dropped.
pub fn to_yandex(req: &Value, folder_id: &str, model_id: &str) -> Result<Value, TranslateError> {
    let messages = req
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| TranslateError::Unsupported("a request without `messages`".into()))?;

    let model_uri = if model_id.contains("://") {
        model_id.to_owned()
    } else if folder_id.is_empty() {
        return Err(TranslateError::Unsupported("a Yandex model id without a folder id".into()));
    } else {
        format!("gpt://{folder_id}/{model_id}")
    };

    let mut options = Map::new();
    let stream = req.get("stream").and_then(Value::as_bool).unwrap_or(false);
    options.insert("stream".into(), stream.into());
    if let Some(t) = req.get("temperature").and_then(Value::as_f64) {
        options.insert("temperature".into(), t.clamp(0.0, 1.0).into());
    }
    let max_tokens = req
        .get("max_completion_tokens")
        .and_then(Value::as_u64)
        .or_else(|| req.get("max_tokens").and_then(Value::as_u64));
    if let Some(max) = max_tokens {
        // int64 wrapper: proto3 JSON writes it as a string.
        options.insert("maxTokens".into(), max.to_string().into());
    }

    let mut body = Map::new();
    body.insert("modelUri".into(), model_uri.into());
    body.insert("completionOptions".into(), options.into());
    body.insert("messages".into(), convert_messages(messages)?.into());

    let (specs, choice) = functions_and_choice(req)?;
    if !specs.is_empty() {
        let tool_choice = match choice {
            Some(ToolChoice::None) => json!({"mode": "NONE"}),
            Some(ToolChoice::Required) => json!({"mode": "REQUIRED"}),
            Some(ToolChoice::Named(name)) => json!({ "functionName": name }),
            _ => json!({"mode": "AUTO"}),
        };
        let tools: Vec<Value> = specs
            .into_iter()
            .map(|spec| {
                let mut f = json!({"name": spec.name, "parameters": spec.parameters});
                if let Some(description) = spec.description {
                    f["description"] = description.into();
                }
                json!({ "function": f })
            })
            .collect();
        body.insert("tools".into(), tools.into());
        body.insert("toolChoice".into(), tool_choice);
        if let Some(parallel) = req.get("parallel_tool_calls").and_then(Value::as_bool) {
            body.insert("parallelToolCalls".into(), parallel.into());
        }
    }

    if let Some(format) = req.get("response_format") {
        match format.get("type").and_then(Value::as_str) {
            Some("json_object") => {
                body.insert("jsonObject".into(), true.into());
            }
            Some("json_schema") => {
                let schema = format
                    .get("json_schema")
                    .and_then(|s| s.get("schema"))
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object"}));
                body.insert("jsonSchema".into(), json!({ "schema": schema }));
            }
            _ => {}
        }
    }
    Ok(Value::Object(body))
}

fn convert_messages(messages: &[Value]) -> Result<Vec<Value>, TranslateError> {
    let names = call_names(messages);
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    // Whether the last message in `out` is a tool-result message we built,
    // so the next result joins it instead of starting another.
    let mut open_results = false;
    for message in messages {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let text = flatten_text(message.get("content"))?;
        if role == "tool" || role == "function" {
            let name = result_name(message, &names)?;
            let result = json!({"functionResult": {"name": name, "content": text}});
            if open_results {
                if let Some(list) = out
                    .last_mut()
                    .and_then(|m| m.pointer_mut("/toolResultList/toolResults"))
                    .and_then(Value::as_array_mut)
                {
                    list.push(result);
                    continue;
                }
            }
            out.push(json!({"role": "user", "toolResultList": {"toolResults": [result]}}));
            open_results = true;
            continue;
        }
        open_results = false;
        match role {
            "system" | "developer" => out.push(json!({"role": "system", "text": text})),
            "user" => out.push(json!({"role": "user", "text": text})),
            "assistant" => {
                let calls = assistant_calls(message)?;
                if calls.is_empty() || !text.is_empty() {
                    out.push(json!({"role": "assistant", "text": text}));
                }
                if !calls.is_empty() {
                    out.push(json!({"role": "assistant", "toolCallList": {"toolCalls": calls}}));
                }
            }
            other => return Err(TranslateError::Unsupported(format!("messages with role `{other}`"))),
        }
    }
    Ok(out)
}

/// The `toolCalls` entries of an assistant message (`tool_calls`, or the
/// legacy `function_call`).
fn assistant_calls(message: &Value) -> Result<Vec<Value>, TranslateError> {
    let functions: Vec<&Value> = match message.get("tool_calls").and_then(Value::as_array) {
        Some(calls) => calls.iter().map(|c| c.get("function").unwrap_or(&Value::Null)).collect(),
        None => message.get("function_call").filter(|f| f.is_object()).into_iter().collect(),
    };
    functions
        .into_iter()
        .map(|function| {
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| TranslateError::Unsupported("a tool call without a function name".into()))?;
            let arguments = arguments_object(function.get("arguments"))?;
            Ok(json!({"functionCall": {"name": name, "arguments": arguments}}))
        })
        .collect()
}

/// The function name a `tool` (by `tool_call_id`) or legacy `function` (by
/// `name`) message answers.
fn result_name<'a>(message: &'a Value, names: &'a HashMap<String, String>) -> Result<&'a str, TranslateError> {
    if let Some(id) = message.get("tool_call_id").and_then(Value::as_str) {
        return names.get(id).map(String::as_str).ok_or_else(|| {
            TranslateError::Unsupported(format!(
                "a tool result for `{id}`, which no assistant message in the request calls"
            ))
        });
    }
    message
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| TranslateError::Unsupported("a tool result without a call id".into()))
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
