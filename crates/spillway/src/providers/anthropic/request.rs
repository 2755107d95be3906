//! OpenAI Chat Completions request → Anthropic Messages request.
//!
//! Runs once per attempt, just before the HTTP call to `POST /v1/messages`:
//! the cascade runner holds the client's request as an OpenAI-shaped
//! `Value` and this turns it into the body Anthropic expects (reference §4.1,
//! §4.5). Anything the Messages API cannot express comes back as
//! [`TranslateError::Unsupported`], so the runner can move on to the next
//! model instead of sending a request that is bound to fail.

use serde_json::{json, Map, Value};

use crate::providers::parts::{field, stop_list, unsupported, Turns};
use crate::providers::translate::TranslateError;

mod tools;

pub use tools::RAW_ARGUMENTS_KEY;
use tools::{tool, tool_choice, tool_result_block, tool_use_block};

/// Translates an OpenAI `/v1/chat/completions` body into an Anthropic
/// `/v1/messages` body for `model_id`.
///
/// `default_max_tokens` is used when the client set neither
/// `max_completion_tokens` nor `max_tokens`: Anthropic requires one.
pub fn to_anthropic(req: &Value, model_id: &str, default_max_tokens: u32) -> Result<Value, TranslateError> {
    let req = req.as_object().ok_or_else(|| unsupported("the request is not a JSON object"))?;
    let messages =
        req.get("messages").and_then(Value::as_array).ok_or_else(|| unsupported("`messages` is not an array"))?;
    if field(req, "n").and_then(Value::as_u64).is_some_and(|n| n > 1) {
        return Err(unsupported("`n` > 1: Anthropic returns a single choice"));
    }
    if field(req, "functions").is_some() || field(req, "function_call").is_some() {
        return Err(unsupported("legacy `functions`/`function_call`"));
    }

    let mut system: Vec<String> = Vec::new();
    // Tool results must open the user turn that follows the `tool_use`
    // (reference §4.1 pairing rule), ahead of any text.
    let mut turns = Turns::new("content", is_tool_result);
    for (at, msg) in messages.iter().enumerate() {
        let role = msg.get("role").and_then(Value::as_str).unwrap_or("");
        let content = msg.get("content");
        match role {
            "system" | "developer" => system.extend(text_pieces(content, at)?),
            "user" => turns.push("user", content_blocks(content, at)?),
            "assistant" => turns.push("assistant", assistant_blocks(msg, at)?),
            "tool" => turns.push("user", vec![tool_result_block(msg, at)?]),
            other => {
                return Err(unsupported(format!("messages[{at}]: role `{other}`")));
            }
        }
    }
    if turns.is_empty() {
        return Err(unsupported("no user or assistant messages"));
    }
    if let Some(instruction) = response_format_instruction(field(req, "response_format"))? {
        system.push(instruction);
    }

    let mut out = Map::new();
    out.insert("model".into(), Value::from(model_id));
    out.insert("max_tokens".into(), max_tokens(req, default_max_tokens));
    out.insert("messages".into(), turns.into_value());
    if system.len() > 1 {
        let blocks = system.into_iter().map(text_block).collect();
        out.insert("system".into(), Value::Array(blocks));
    } else if let Some(only) = system.pop() {
        out.insert("system".into(), Value::from(only));
    }
    if let Some(t) = field(req, "temperature") {
        // OpenAI allows 0..2, Anthropic 0..1: clamp rather than fail.
        let t = t.as_f64().map_or_else(|| t.clone(), |t| json!(t.clamp(0.0, 1.0)));
        out.insert("temperature".into(), t);
    }
    if let Some(p) = field(req, "top_p") {
        out.insert("top_p".into(), p.clone());
    }
    if let Some(stop) = stop_sequences(field(req, "stop")) {
        out.insert("stop_sequences".into(), stop);
    }
    if field(req, "stream").and_then(Value::as_bool) == Some(true) {
        out.insert("stream".into(), Value::Bool(true));
    }
    let user = field(req, "safety_identifier").or_else(|| field(req, "user"));
    if let Some(user) = user.filter(|u| u.is_string()) {
        out.insert("metadata".into(), json!({ "user_id": user }));
    }
    let tools = match field(req, "tools").and_then(Value::as_array) {
        Some(tools) => tools.iter().map(tool).collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    // Anthropic rejects `tool_choice` without tools, and an OpenAI client
    // may well send `tool_choice: "none"` with an empty list.
    if !tools.is_empty() {
        let parallel = field(req, "parallel_tool_calls").and_then(Value::as_bool);
        if let Some(choice) = tool_choice(field(req, "tool_choice"), parallel)? {
            out.insert("tool_choice".into(), choice);
        }
        out.insert("tools".into(), Value::Array(tools));
    }
    // Dropped on purpose (reference §4.5): n == 1, logit_bias, penalties,
    // seed, logprobs, stream_options (the stream decoder handles usage).
    Ok(Value::Object(out))
}

fn is_tool_result(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("tool_result")
}

fn text_block(text: String) -> Value {
    json!({ "type": "text", "text": text })
}

/// Anthropic rejects empty and whitespace-only text blocks.
fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

fn max_tokens(req: &Map<String, Value>, default: u32) -> Value {
    // A nonsensical client value is passed on as is: Anthropic's 400 is then
    // classified as the client's invalid request, which is what it is.
    field(req, "max_completion_tokens")
        .or_else(|| field(req, "max_tokens"))
        .cloned()
        .unwrap_or_else(|| Value::from(default))
}

fn stop_sequences(stop: Option<&Value>) -> Option<Value> {
    let stops = stop_list(stop);
    (!stops.is_empty()).then_some(Value::Array(stops))
}

/// The non-blank text pieces of a system/developer message, one per part.
fn text_pieces(content: Option<&Value>, at: usize) -> Result<Vec<String>, TranslateError> {
    let pieces = match content {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|part| match part_type(part) {
                "text" => Ok(part_text(part)),
                other => Err(unsupported(format!("messages[{at}]: `{other}` part in a system message"))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(unsupported(format!("messages[{at}]: content is not a string or parts"))),
    };
    Ok(pieces.into_iter().filter(|s| !is_blank(s)).collect())
}

fn part_type(part: &Value) -> &str {
    part.get("type").and_then(Value::as_str).unwrap_or("")
}

fn part_text(part: &Value) -> String {
    part.get("text").and_then(Value::as_str).unwrap_or("").to_owned()
}

/// Content of a user or assistant message as Anthropic blocks.
fn content_blocks(content: Option<&Value>, at: usize) -> Result<Vec<Value>, TranslateError> {
    match content {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) if is_blank(s) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![text_block(s.clone())]),
        Some(Value::Array(parts)) => {
            let mut blocks = Vec::with_capacity(parts.len());
            for part in parts {
                let kind = part_type(part);
                match kind {
                    // A refusal in assistant history is what the model said.
                    "text" | "refusal" => {
                        let text = part.get(kind).and_then(Value::as_str).unwrap_or("");
                        if !is_blank(text) {
                            blocks.push(text_block(text.to_owned()));
                        }
                    }
                    "image_url" => blocks.push(image_block(part, at)?),
                    other => {
                        return Err(unsupported(format!("messages[{at}]: content part type `{other}`")));
                    }
                }
            }
            Ok(blocks)
        }
        Some(_) => Err(unsupported(format!("messages[{at}]: content is not a string or parts"))),
    }
}

/// `image_url` part → image block: a `data:` URL becomes a base64 source,
/// an http(s) URL a url source (reference §4.5 step 2).
fn image_block(part: &Value, at: usize) -> Result<Value, TranslateError> {
    let image = part.get("image_url");
    // Some clients send the URL string directly instead of `{url}`.
    let url = image
        .and_then(|i| i.get("url"))
        .or(image)
        .and_then(Value::as_str)
        .ok_or_else(|| unsupported(format!("messages[{at}]: image_url without a url")))?;
    if let Some(rest) = url.strip_prefix("data:") {
        let (header, data) =
            rest.split_once(',').ok_or_else(|| unsupported(format!("messages[{at}]: malformed data URL")))?;
        let media_type = header
            .strip_suffix(";base64")
            .ok_or_else(|| unsupported(format!("messages[{at}]: data URL is not base64")))?;
        return Ok(json!({
            "type": "image",
            "source": { "type": "base64", "media_type": media_type, "data": data }
        }));
    }
    if url.starts_with("https://") || url.starts_with("http://") {
        return Ok(json!({ "type": "image", "source": { "type": "url", "url": url } }));
    }
    Err(unsupported(format!("messages[{at}]: image URL scheme not supported")))
}

/// Assistant message → text blocks followed by one `tool_use` per call.
fn assistant_blocks(msg: &Value, at: usize) -> Result<Vec<Value>, TranslateError> {
    let mut blocks = content_blocks(msg.get("content"), at)?;
    if let Some(calls) = msg.get("tool_calls").and_then(Value::as_array) {
        for call in calls {
            blocks.push(tool_use_block(call, at)?);
        }
    }
    Ok(blocks)
}

/// The classic Messages API has no `response_format`; a system instruction
/// asks for JSON, and the gateway's normalize step extracts and validates it
/// (SPEC §7), so this only has to make JSON likely, not certain.
fn response_format_instruction(format: Option<&Value>) -> Result<Option<String>, TranslateError> {
    let Some(format) = format else {
        return Ok(None);
    };
    match format.get("type").and_then(Value::as_str) {
        None | Some("text") => Ok(None),
        Some("json_object") => {
            Ok(Some("Respond with a single valid JSON object and nothing else: no prose, no code fences.".to_owned()))
        }
        Some("json_schema") => {
            let schema = format.get("json_schema").and_then(|s| s.get("schema")).cloned().unwrap_or(Value::Null);
            Ok(Some(format!(
                "Respond with a single valid JSON value that conforms to this JSON Schema, and nothing else: \
                 no prose, no code fences.\n{schema}"
            )))
        }
        Some(other) => Err(unsupported(format!("response_format `{other}`"))),
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
