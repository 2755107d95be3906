//! GigaChat v1 SSE events → OpenAI `chat.completion.chunk`s.
//!
//! The gateway core splits the upstream body into SSE events and feeds each
//! one here; the items that come out go to the cascade runner's first-chunk
//! peek and then to the client. GigaChat's chunks look like OpenAI's but have
//! no `id`, say `object: "chat.completion"`, carry usage inside the finish
//! chunk and send a function call as one object with object arguments
//! (reference §5.2). This decoder turns them into chunks an OpenAI client
//! accepts: role first, a separate finish chunk, usage last and only when
//! asked for, then `Done`.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::response::{classify_error, finish_reason, map_usage};
use super::shared::{chunk, malformed, new_call_id, stream_choice, usage_chunk};
use crate::providers::translate::{StreamItem, TranslateError};

const FORMAT: &str = "gigachat";

/// Decodes one GigaChat stream. Create one per attempt.
#[derive(Debug)]
pub struct StreamDecoder {
    /// Whether the client asked for `stream_options.include_usage`.
    include_usage: bool,
    /// Per choice index; a map because indices come from the upstream and a
    /// malformed one must not make us allocate a huge vector.
    choices: BTreeMap<u64, ChoiceState>,
    /// The latest usage seen; sent just before `Done`, after every finish
    /// chunk, which is where OpenAI puts it.
    usage: Option<Value>,
    /// `[DONE]` was seen; anything after it is ignored.
    done: bool,
}

#[derive(Debug, Default)]
struct ChoiceState {
    role_sent: bool,
    finished: bool,
    /// How many calls this choice started: the next call's OpenAI `index`.
    calls: u64,
    call: Option<CallState>,
}

#[derive(Debug)]
struct CallState {
    index: u64,
    name: String,
    /// Whether any argument text went out, so a call whose arguments never
    /// came can be closed with `{}` (OpenAI clients parse the string).
    args_sent: bool,
}

impl StreamDecoder {
    /// A decoder for one stream; `include_usage` mirrors the client's
    /// `stream_options.include_usage`.
    pub fn new(include_usage: bool) -> Self {
        Self { include_usage, choices: BTreeMap::new(), usage: None, done: false }
    }

    /// Handles one SSE event (`event` name if any, joined `data`).
    ///
    /// A `blacklist` finish is an `Upstream`/`ContentFilter` error, an
    /// `error` finish or an error object an `Upstream` error; non-JSON data
    /// is `Malformed`.
    pub fn on_event(&mut self, event: Option<&str>, data: &str) -> Result<Vec<StreamItem>, TranslateError> {
        let data = data.trim();
        if self.done || data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            return Ok(self.finish());
        }
        let parsed: Value = serde_json::from_str(data).map_err(|e| {
            let detail = format!("stream event is not JSON: {e}");
            // An error event fails the stream whatever its data says.
            if event == Some("error") {
                malformed(FORMAT, detail)
            } else {
                TranslateError::Unreadable { format: FORMAT, detail }
            }
        })?;
        let choices = parsed.get("choices").and_then(Value::as_array);
        let is_error = event == Some("error")
            || parsed.get("error").is_some()
            || (choices.is_none() && parsed.get("message").is_some());
        if is_error {
            let status =
                parsed.get("status").and_then(Value::as_u64).and_then(|s| u16::try_from(s).ok()).unwrap_or(500);
            let (class, message) = classify_error(status, data.as_bytes());
            return Err(TranslateError::Upstream { class, message });
        }

        let mut items = Vec::new();
        for choice in choices.into_iter().flatten() {
            self.on_choice(choice, &mut items)?;
        }
        if let Some(usage) = parsed.get("usage").and_then(map_usage) {
            self.usage = Some(usage);
        }
        Ok(items)
    }

    fn on_choice(&mut self, choice: &Value, items: &mut Vec<StreamItem>) -> Result<(), TranslateError> {
        let index = choice.get("index").and_then(Value::as_u64).unwrap_or(0);
        let include_usage = self.include_usage;
        let state = self.choices.entry(index).or_default();
        if state.finished {
            return Ok(());
        }
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        let text = delta.get("content").and_then(Value::as_str).unwrap_or("");
        let function_call = delta.get("function_call").filter(|f| f.is_object());

        // Decide the finish first: a blacklist must not leak its canned text.
        let finish = match choice.get("finish_reason").and_then(Value::as_str) {
            Some(reason) => Some(finish_reason(Some(reason), state.calls > 0 || function_call.is_some(), text)?),
            None => None,
        };

        let mut out = Map::new();
        if !state.role_sent {
            state.role_sent = true;
            out.insert("role".into(), "assistant".into());
        }
        if !text.is_empty() {
            out.insert("content".into(), text.into());
        }
        if let Some(call) = function_call {
            if let Some(tool_delta) = call_delta(state, call)? {
                out.insert("tool_calls".into(), json!([tool_delta]));
            }
        }
        if out.len() == 1 && out.contains_key("role") {
            // OpenAI's first chunk is role plus empty content.
            out.insert("content".into(), "".into());
        }
        if !out.is_empty() {
            let choice = stream_choice(index, Value::Object(out), None);
            items.push(StreamItem::Chunk(chunk(vec![choice], include_usage)));
        }
        if let Some(reason) = finish {
            close(index, state, reason, include_usage, items);
        }
        Ok(())
    }

    /// `[DONE]`: close choices that never got a finish reason (GigaChat
    /// always sends one; if not, the text ended normally as far as we can
    /// tell), then the usage chunk if asked for, then `Done`.
    fn finish(&mut self) -> Vec<StreamItem> {
        self.done = true;
        let mut items = Vec::new();
        for (index, state) in &mut self.choices {
            if state.role_sent && !state.finished {
                let reason = if state.calls > 0 { "tool_calls" } else { "stop" };
                close(*index, state, reason, self.include_usage, &mut items);
            }
        }
        if self.include_usage {
            if let Some(usage) = self.usage.take() {
                items.push(StreamItem::Chunk(usage_chunk(usage)));
            }
        }
        items.push(StreamItem::Done);
        items
    }
}

/// Emits the finish chunk of one choice (after `{}` arguments for a call
/// that never got any).
fn close(index: u64, state: &mut ChoiceState, reason: &str, include_usage: bool, items: &mut Vec<StreamItem>) {
    state.finished = true;
    if let Some(call) = state.call.as_mut().filter(|c| !c.args_sent) {
        call.args_sent = true;
        let delta = json!({"tool_calls": [{"index": call.index, "function": {"arguments": "{}"}}]});
        let choice = stream_choice(index, delta, None);
        items.push(StreamItem::Chunk(chunk(vec![choice], include_usage)));
    }
    let choice = stream_choice(index, json!({}), Some(reason));
    items.push(StreamItem::Chunk(chunk(vec![choice], include_usage)));
}

/// The OpenAI `tool_calls[]` delta for a GigaChat `function_call` delta.
///
/// The reference has the call arrive whole, with object arguments; that it
/// always does is unverified, so pieces are accepted too: a piece with a new
/// name starts a new call (with a fresh id), a piece without one continues
/// the current call, string arguments are forwarded as text pieces. Object
/// arguments are sent only as a call's first argument text — a second object
/// could not be appended to valid JSON, so it is ignored.
fn call_delta(state: &mut ChoiceState, call: &Value) -> Result<Option<Value>, TranslateError> {
    let name = call.get("name").and_then(Value::as_str).filter(|n| !n.is_empty());
    let args = call.get("arguments");
    let starts_new = match (&state.call, name) {
        (None, _) => true,
        (Some(current), Some(name)) => current.name != name,
        (Some(_), None) => false,
    };
    if starts_new {
        let name = name.ok_or_else(|| malformed(FORMAT, "function_call delta without a name"))?;
        let text = match args {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        };
        let index = state.calls;
        state.calls += 1;
        state.call = Some(CallState { index, name: name.to_owned(), args_sent: !text.is_empty() });
        return Ok(Some(json!({
            "index": index,
            "id": new_call_id(),
            "type": "function",
            "function": {"name": name, "arguments": text},
        })));
    }
    let Some(current) = state.call.as_mut() else {
        return Ok(None);
    };
    let piece = match args {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(obj @ Value::Object(_)) if !current.args_sent => obj.to_string(),
        _ => return Ok(None),
    };
    current.args_sent = true;
    Ok(Some(json!({"index": current.index, "function": {"arguments": piece}})))
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
