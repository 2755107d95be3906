//! OpenAI Chat Completions request → Bedrock `Converse` request
//! (round3.md §3.2).
//!
//! Runs once per attempt before the call: system and developer messages
//! become `system` blocks; the conversation `user`/`assistant` messages of
//! content blocks (tool calls as `toolUse`, tool messages as `toolResult`
//! blocks opening the next user turn); sampling goes into
//! `inferenceConfig`, tools into `toolConfig`. JSON mode with a schema is
//! Bedrock's `outputConfig.textFormat` (the schema as a JSON string);
//! `json_object`, which Bedrock has no switch for, a system instruction. A
//! request Converse cannot express is [`TranslateError::Unsupported`].

use serde_json::{json, Map, Value};

use crate::providers::parts::{
    arguments_object, data_url, field, function_tool, image_url, stop_list, tool_result_text, unsupported, Turns,
};
use crate::providers::translate::TranslateError;

/// Translates an OpenAI `/v1/chat/completions` body into a Converse body
/// (the model goes in the URL, not the body).
pub fn to_converse(req: &Value) -> Result<Value, TranslateError> {
    let req = req.as_object().ok_or_else(|| unsupported("the request is not a JSON object"))?;
    let messages =
        req.get("messages").and_then(Value::as_array).ok_or_else(|| unsupported("`messages` is not an array"))?;
    if field(req, "n").and_then(Value::as_u64).is_some_and(|n| n > 1) {
        return Err(unsupported("`n` > 1: Converse returns one message"));
    }
    if field(req, "functions").is_some() || field(req, "function_call").is_some() {
        return Err(unsupported("legacy `functions`/`function_call`"));
    }
    let mut system = Vec::new();
    // Converse wants alternation; a merged user turn keeps its tool results
    // first, as the turn after the calls must open with them.
    let mut turns = Turns::new("content", |b| b.get("toolResult").is_some());
    for (at, msg) in messages.iter().enumerate() {
        match msg.get("role").and_then(Value::as_str).unwrap_or("") {
            "system" | "developer" => system.extend(text_blocks(msg.get("content"), at)?),
            "user" => turns.push("user", user_blocks(msg.get("content"), at)?),
            "assistant" => {
                let mut blocks = text_blocks(msg.get("content"), at)?;
                for call in msg.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    blocks.push(tool_use(call, at)?);
                }
                turns.push("assistant", blocks);
            }
            "tool" => turns.push("user", vec![tool_result(msg, at)?]),
            other => return Err(unsupported(format!("messages[{at}]: role `{other}`"))),
        }
    }
    if turns.is_empty() {
        return Err(unsupported("no user or assistant messages"));
    }
    let mut out = Map::new();
    let has_tool_blocks = turns.blocks().any(|b| b.get("toolUse").is_some() || b.get("toolResult").is_some());
    out.insert("messages".into(), turns.into_value());
    if let Some(format) = json_mode(field(req, "response_format"), &mut system)? {
        out.insert("outputConfig".into(), format);
    }
    if !system.is_empty() {
        out.insert("system".into(), Value::Array(system));
    }
    let config = inference_config(req);
    if !config.is_empty() {
        out.insert("inferenceConfig".into(), Value::Object(config));
    }
    if let Some(tools) = tool_config(req, has_tool_blocks)? {
        out.insert("toolConfig".into(), tools);
    }
    // Dropped on purpose: logprobs, logit_bias, penalties, seed, user,
    // stream_options (usage comes in the stream's `metadata` event).
    Ok(Value::Object(out))
}

/// Text content as `{text}` blocks; Converse refuses blank ones.
fn text_blocks(content: Option<&Value>, at: usize) -> Result<Vec<Value>, TranslateError> {
    let texts: Vec<&str> = match content {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| {
                let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
                match kind {
                    "text" | "refusal" => Ok(p.get(kind).and_then(Value::as_str).unwrap_or("")),
                    other => Err(unsupported(format!("messages[{at}]: `{other}` part where only text fits"))),
                }
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(unsupported(format!("messages[{at}]: content is not a string or parts"))),
    };
    Ok(texts.into_iter().filter(|t| !t.trim().is_empty()).map(|t| json!({ "text": t })).collect())
}

/// A user message: text blocks, and `data:` images as `image` blocks
/// (png, jpeg, gif, webp). An image by URL is not sent: Converse takes
/// bytes or an S3 location.
fn user_blocks(content: Option<&Value>, at: usize) -> Result<Vec<Value>, TranslateError> {
    let Some(Value::Array(parts)) = content else {
        return text_blocks(content, at);
    };
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        if part.get("type").and_then(Value::as_str) != Some("image_url") {
            out.extend(text_blocks(Some(&Value::Array(vec![part.clone()])), at)?);
            continue;
        }
        let (mime, data) = data_url(image_url(part))
            .ok_or_else(|| unsupported(format!("messages[{at}]: only base64 data: image URLs are sent")))?;
        let format = match mime {
            "image/png" => "png",
            "image/jpeg" | "image/jpg" => "jpeg",
            "image/gif" => "gif",
            "image/webp" => "webp",
            other => return Err(unsupported(format!("messages[{at}]: image type `{other}`"))),
        };
        out.push(json!({ "image": { "format": format, "source": { "bytes": data } } }));
    }
    Ok(out)
}

/// A call id as Converse accepts it (`[a-zA-Z0-9_.:-]{1,64}`, round3.md
/// §3.2): other characters become `_`, longer ids are cut. The same id in
/// the `toolResult` maps the same way, so the pair still matches.
pub fn tool_use_id(id: &str) -> String {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-');
    let id: String = id.chars().map(|c| if ok(c) { c } else { '_' }).take(64).collect();
    if id.is_empty() {
        "call".to_owned()
    } else {
        id
    }
}

fn tool_use(call: &Value, at: usize) -> Result<Value, TranslateError> {
    let id = call.get("id").and_then(Value::as_str).unwrap_or("");
    let function = call.get("function");
    let name = function
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| unsupported(format!("messages[{at}]: tool call without a function name")))?;
    // `input` must be an object (see `parts::RAW_ARGUMENTS_KEY`).
    let input = arguments_object(function.and_then(|f| f.get("arguments")));
    Ok(json!({ "toolUse": { "toolUseId": tool_use_id(id), "name": name, "input": input } }))
}

/// A tool message: a JSON object result as a `json` block, anything else
/// as `text`.
fn tool_result(msg: &Value, at: usize) -> Result<Value, TranslateError> {
    let id = msg
        .get("tool_call_id")
        .and_then(Value::as_str)
        .ok_or_else(|| unsupported(format!("messages[{at}]: tool message without tool_call_id")))?;
    let text = tool_result_text(msg.get("content"));
    let content = match serde_json::from_str::<Value>(&text) {
        Ok(obj @ Value::Object(_)) => json!([{ "json": obj }]),
        // A blank text block is refused; an empty result still says so.
        _ if text.trim().is_empty() => json!([{ "text": "(empty)" }]),
        _ => json!([{ "text": text }]),
    };
    Ok(json!({ "toolResult": { "toolUseId": tool_use_id(id), "content": content, "status": "success" } }))
}

/// Sampling → `inferenceConfig`. OpenAI's `temperature` runs 0..2,
/// Converse's 0..1: clamped rather than refused.
fn inference_config(req: &Map<String, Value>) -> Map<String, Value> {
    let mut config = Map::new();
    if let Some(max) = field(req, "max_completion_tokens").or_else(|| field(req, "max_tokens")) {
        config.insert("maxTokens".into(), max.clone());
    }
    if let Some(t) = field(req, "temperature") {
        config.insert("temperature".into(), t.as_f64().map_or_else(|| t.clone(), |t| json!(t.clamp(0.0, 1.0))));
    }
    if let Some(p) = field(req, "top_p") {
        config.insert("topP".into(), p.clone());
    }
    let stops = stop_list(field(req, "stop"));
    if !stops.is_empty() {
        config.insert("stopSequences".into(), Value::Array(stops));
    }
    config
}

/// `tools` + `tool_choice` → `toolConfig`. Converse has no "none": the
/// tools are left out then — unless the history holds tool blocks, which
/// Converse refuses without a `toolConfig` (reported by users; the
/// reference marks the rule unverified), so they stay, on `auto`.
fn tool_config(req: &Map<String, Value>, history_has_tools: bool) -> Result<Option<Value>, TranslateError> {
    let tools = match field(req, "tools").and_then(Value::as_array) {
        Some(tools) if !tools.is_empty() => tools.iter().map(tool_spec).collect::<Result<Vec<_>, _>>()?,
        _ => return Ok(None),
    };
    let choice = match field(req, "tool_choice") {
        None => None,
        Some(Value::String(s)) => match s.as_str() {
            "auto" => Some(json!({ "auto": {} })),
            "required" => Some(json!({ "any": {} })),
            "none" if history_has_tools => None,
            "none" => return Ok(None),
            other => return Err(unsupported(format!("tool_choice `{other}`"))),
        },
        Some(obj) => match obj.get("function").and_then(|f| f.get("name")).and_then(Value::as_str) {
            Some(name) => Some(json!({ "tool": { "name": name } })),
            None => return Err(unsupported("tool_choice of another type than function")),
        },
    };
    let mut config = json!({ "tools": tools });
    if let Some(choice) = choice {
        config["toolChoice"] = choice;
    }
    Ok(Some(config))
}

fn tool_spec(tool: &Value) -> Result<Value, TranslateError> {
    let (name, description, parameters) = function_tool(tool)?;
    let schema = parameters.cloned().unwrap_or_else(|| json!({ "type": "object", "properties": {} }));
    let mut spec = json!({ "name": name, "inputSchema": { "json": schema } });
    if let Some(desc) = description {
        spec["description"] = Value::from(desc);
    }
    Ok(json!({ "toolSpec": spec }))
}

/// `response_format`: a schema → `outputConfig.textFormat` (round3.md
/// §3.2: the schema as a JSON *string*); `json_object` → a system
/// instruction (Converse has no plain JSON switch). Which models take
/// `outputConfig` is not in the reference: a model that refuses it is
/// classified as lacking the capability, so the next model is tried.
fn json_mode(format: Option<&Value>, system: &mut Vec<Value>) -> Result<Option<Value>, TranslateError> {
    let Some(format) = format else { return Ok(None) };
    match format.get("type").and_then(Value::as_str) {
        None | Some("text") => Ok(None),
        Some("json_object") => {
            system.push(json!({ "text": "Respond with a single valid JSON object and nothing else: no prose, no code fences." }));
            Ok(None)
        }
        Some("json_schema") => {
            let spec = format.get("json_schema");
            let schema = spec.and_then(|s| s.get("schema")).cloned().unwrap_or_else(|| json!({}));
            let name = spec.and_then(|s| s.get("name")).and_then(Value::as_str).unwrap_or("response");
            Ok(Some(json!({ "textFormat": { "type": "json_schema",
                "structure": { "jsonSchema": { "schema": schema.to_string(), "name": name } } } })))
        }
        Some(other) => Err(unsupported(format!("response_format `{other}`"))),
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
