//! OpenAI Chat Completions request → Gemini `generateContent` request
//! (round3.md §2.2).
//!
//! Runs once per attempt before the call: system and developer messages
//! become `systemInstruction`; the conversation becomes `contents` of
//! `user` and `model` turns (tool results are `functionResponse` parts of a
//! user turn, matched to their function by the call id in the same
//! request's history); sampling goes into `generationConfig`, JSON mode
//! into `responseMimeType` + `responseJsonSchema`, tools into
//! `functionDeclarations` with `parametersJsonSchema`. A request Gemini
//! cannot express is [`TranslateError::Unsupported`], so the runner moves
//! on without sending it.

use serde_json::{json, Map, Value};
use std::collections::HashMap;

use crate::providers::parts::{
    arguments_object, data_url, field, image_url, stop_list, tool_result_text, unsupported, Turns,
};
use crate::providers::translate::TranslateError;

/// What Gemini 3 accepts on a `functionCall` part whose thought signature
/// was lost (round3.md §2.2: the sentinel Vercel's SDK sends). The
/// gateway keeps no signatures between requests, so replayed calls carry
/// this one. Sent only to Gemini 3 models, which require a signature;
/// whether older ones would accept it too is not verified.
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// Translates an OpenAI `/v1/chat/completions` body for Gemini model
/// `model_id` (the id decides only the thought-signature sentinel).
pub fn to_gemini(req: &Value, model_id: &str) -> Result<Value, TranslateError> {
    let req = req.as_object().ok_or_else(|| unsupported("the request is not a JSON object"))?;
    let messages =
        req.get("messages").and_then(Value::as_array).ok_or_else(|| unsupported("`messages` is not an array"))?;
    if field(req, "n").and_then(Value::as_u64).is_some_and(|n| n > 1) {
        return Err(unsupported("`n` > 1: one candidate is read"));
    }
    if field(req, "functions").is_some() || field(req, "function_call").is_some() {
        return Err(unsupported("legacy `functions`/`function_call`"));
    }
    let signed = model_id.trim_start_matches("models/").starts_with("gemini-3");
    // Call id → function name, for the `functionResponse` of a tool message.
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut system: Vec<Value> = Vec::new();
    // Parallel results share one user turn, ahead of any text.
    let mut turns = Turns::new("parts", |p| p.get("functionResponse").is_some());
    for (at, msg) in messages.iter().enumerate() {
        let role = msg.get("role").and_then(Value::as_str).unwrap_or("");
        match role {
            "system" | "developer" => system.extend(text_parts(msg.get("content"), at)?),
            "user" => turns.push("user", user_parts(msg.get("content"), at)?),
            "assistant" => {
                let mut parts = text_parts(msg.get("content"), at)?;
                for call in msg.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    let (id, name, part) = function_call(call, at, signed)?;
                    if let Some(id) = id {
                        names.insert(id, name);
                    }
                    parts.push(part);
                }
                turns.push("model", parts);
            }
            "tool" => turns.push("user", vec![function_response(msg, at, &names)?]),
            other => return Err(unsupported(format!("messages[{at}]: role `{other}`"))),
        }
    }
    if turns.is_empty() {
        return Err(unsupported("no user or assistant messages"));
    }
    let mut out = Map::new();
    out.insert("contents".into(), turns.into_value());
    if !system.is_empty() {
        out.insert("systemInstruction".into(), json!({ "parts": system }));
    }
    let forced = super::tools::add_tools(req, &mut out)?;
    let mut config = generation_config(req);
    json_mode(field(req, "response_format"), forced, &mut config)?;
    if !config.is_empty() {
        out.insert("generationConfig".into(), Value::Object(config));
    }
    // Dropped on purpose: logprobs (one candidate, no logprobs read),
    // logit_bias, user, stream_options (usage comes on every chunk).
    Ok(Value::Object(out))
}

/// Text content (a string or text/refusal parts) as `{text}` parts.
fn text_parts(content: Option<&Value>, at: usize) -> Result<Vec<Value>, TranslateError> {
    match content {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) if s.is_empty() => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![json!({ "text": s })]),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| {
                let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
                match kind {
                    "text" | "refusal" => {
                        let text = p.get(kind).and_then(Value::as_str).unwrap_or("");
                        (!text.is_empty()).then(|| Ok(json!({ "text": text })))
                    }
                    other => Some(Err(unsupported(format!("messages[{at}]: `{other}` part where only text fits")))),
                }
            })
            .collect(),
        Some(_) => Err(unsupported(format!("messages[{at}]: content is not a string or parts"))),
    }
}

/// A user message: text parts and `data:` images as `inlineData`. An
/// image by http(s) URL is not sent: Gemini's `fileData` wants a URI of
/// its own File API (public URLs work only for some models: unverified).
fn user_parts(content: Option<&Value>, at: usize) -> Result<Vec<Value>, TranslateError> {
    let Some(Value::Array(parts)) = content else {
        return text_parts(content, at);
    };
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        match part.get("type").and_then(Value::as_str).unwrap_or("") {
            "image_url" => {
                let (mime, data) = data_url(image_url(part))
                    .ok_or_else(|| unsupported(format!("messages[{at}]: only base64 data: image URLs are sent")))?;
                out.push(json!({ "inlineData": { "mimeType": mime, "data": data } }));
            }
            _ => out.extend(text_parts(Some(&Value::Array(vec![part.clone()])), at)?),
        }
    }
    Ok(out)
}

/// An assistant's tool call as a `functionCall` part (and its id). The
/// arguments' JSON text becomes the `args` object; text that is not an
/// object is kept under `_raw_arguments`, so the model sees what it said.
fn function_call(call: &Value, at: usize, signed: bool) -> Result<(Option<&str>, &str, Value), TranslateError> {
    let function = call.get("function");
    let name = function
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| unsupported(format!("messages[{at}]: tool call without a function name")))?;
    let args = arguments_object(function.and_then(|f| f.get("arguments")));
    let mut part = json!({ "functionCall": { "name": name, "args": args } });
    if signed {
        part["thoughtSignature"] = Value::from(SKIP_SIGNATURE);
    }
    Ok((call.get("id").and_then(Value::as_str), name, part))
}

/// A tool message as a `functionResponse` part. Its function is found by
/// `tool_call_id` among the calls before it (a `name` on the message is
/// the fallback). The result must be an object: a JSON object result is
/// sent as it is, anything else under `output` (the key Gemini's docs name
/// for a function's output).
fn function_response(msg: &Value, at: usize, names: &HashMap<&str, &str>) -> Result<Value, TranslateError> {
    let id = msg.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
    let name = names
        .get(id)
        .copied()
        .or_else(|| msg.get("name").and_then(Value::as_str))
        .ok_or_else(|| unsupported(format!("messages[{at}]: a tool result for a call not in the conversation")))?;
    let text = tool_result_text(msg.get("content"));
    let response = match serde_json::from_str::<Value>(&text) {
        Ok(obj @ Value::Object(_)) => obj,
        Ok(other) => json!({ "output": other }),
        Err(_) => json!({ "output": text }),
    };
    Ok(json!({ "functionResponse": { "name": name, "response": response } }))
}

/// Sampling fields → `generationConfig`.
fn generation_config(req: &Map<String, Value>) -> Map<String, Value> {
    let mut config = Map::new();
    for (from, to) in [
        ("temperature", "temperature"),
        ("top_p", "topP"),
        ("presence_penalty", "presencePenalty"),
        ("frequency_penalty", "frequencyPenalty"),
        ("seed", "seed"),
    ] {
        if let Some(v) = field(req, from) {
            config.insert(to.into(), v.clone());
        }
    }
    if let Some(max) = field(req, "max_completion_tokens").or_else(|| field(req, "max_tokens")) {
        config.insert("maxOutputTokens".into(), max.clone());
    }
    let stops = stop_list(field(req, "stop"));
    if !stops.is_empty() {
        config.insert("stopSequences".into(), Value::Array(stops));
    }
    config
}

/// `response_format` → `responseMimeType` (+ `responseJsonSchema`, the
/// JSON Schema form). With a forced function call (`ANY` mode) Gemini
/// rejects a JSON mime type (round3.md §2.2), so none is sent then: the
/// gateway's normalize step still checks a JSON answer.
fn json_mode(format: Option<&Value>, forced: bool, config: &mut Map<String, Value>) -> Result<(), TranslateError> {
    let Some(format) = format else { return Ok(()) };
    let schema = match format.get("type").and_then(Value::as_str) {
        None | Some("text") => return Ok(()),
        Some("json_object") => None,
        Some("json_schema") => format.get("json_schema").and_then(|s| s.get("schema")).filter(|s| !s.is_null()),
        Some(other) => return Err(unsupported(format!("response_format `{other}`"))),
    };
    if forced {
        return Ok(());
    }
    config.insert("responseMimeType".into(), Value::from("application/json"));
    if let Some(schema) = schema {
        config.insert("responseJsonSchema".into(), schema.clone());
    }
    Ok(())
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
