//! Yandex native NDJSON stream → OpenAI `chat.completion.chunk`s.
//!
//! With `completionOptions.stream: true` Yandex answers with one
//! `{"result":…}` object per line whose text is **cumulative**: each line
//! repeats everything so far (reference §6.2). The gateway core splits the
//! body into lines and feeds each one here; this decoder diffs the text into
//! OpenAI deltas, sends tool calls once the alternative is final, then the
//! finish chunk, the usage chunk if asked for, and `Done`.

use serde_json::{json, Map, Value};

use super::response::{alternatives, finish_reason, map_usage, result_of, tool_calls, FORMAT};
use crate::providers::gigachat::shared::{chunk, malformed, stream_choice, usage_chunk};
use crate::providers::translate::{StreamItem, TranslateError};

/// Decodes one Yandex stream. Create one per attempt.
#[derive(Debug)]
pub struct StreamDecoder {
    /// Whether the client asked for `stream_options.include_usage`.
    include_usage: bool,
    /// Per alternative, by position (Yandex has no choice index).
    alternatives: Vec<AltState>,
    /// The latest usage; Yandex repeats a growing total on every line.
    usage: Option<Value>,
    /// Every alternative reached a final status; later lines are ignored.
    done: bool,
}

#[derive(Debug, Default)]
struct AltState {
    /// The text already sent as deltas; the next line's text must extend it.
    sent: String,
    role_sent: bool,
    finished: bool,
    /// The latest `toolCallList` seen, sent when the alternative is final:
    /// whether Yandex streams calls cumulatively is not known, and a call
    /// sent early could not be taken back.
    calls: Option<Value>,
}

impl StreamDecoder {
    /// A decoder for one stream; `include_usage` mirrors the client's
    /// `stream_options.include_usage`.
    pub fn new(include_usage: bool) -> Self {
        Self { include_usage, alternatives: Vec::new(), usage: None, done: false }
    }

    /// Handles one line of the body.
    ///
    /// The text of each line should extend the text already sent; only the
    /// new suffix goes out. Whether it always does is unverified, so:
    /// - a line whose text is a *prefix* of what was sent (the text shrank)
    ///   sends nothing and keeps the longer text as the base, so nothing is
    ///   repeated when it grows again;
    /// - a line whose text *diverges* from what was sent is `Malformed`: the
    ///   client already has the old text and a delta cannot retract it, so
    ///   continuing would hand it a garbled answer without saying so.
    ///
    /// A `data:` prefix is tolerated (the content type is unverified), an
    /// `{"error":…}` line is an `Upstream` error, a content-filter status an
    /// `Upstream`/`ContentFilter` error.
    pub fn on_line(&mut self, line: &str) -> Result<Vec<StreamItem>, TranslateError> {
        let line = line.trim();
        let line = line.strip_prefix("data:").map_or(line, str::trim_start);
        if self.done || line.is_empty() {
            return Ok(Vec::new());
        }
        if line == "[DONE]" {
            return Ok(self.end());
        }
        let parsed: Value = serde_json::from_str(line).map_err(|e| TranslateError::Unreadable {
            format: FORMAT,
            detail: format!("stream line is not JSON: {e}"),
        })?;
        let result = result_of(&parsed, line.as_bytes())?;
        let alternatives = alternatives(result)?;
        if let Some(usage) = result.get("usage").and_then(map_usage) {
            self.usage = Some(usage);
        }

        let mut items = Vec::new();
        for (index, alternative) in alternatives.iter().enumerate() {
            if self.alternatives.len() <= index {
                self.alternatives.resize_with(index + 1, AltState::default);
            }
            let include_usage = self.include_usage;
            if let Some(state) = self.alternatives.get_mut(index) {
                on_alternative(index as u64, state, alternative, include_usage, &mut items)?;
            }
        }
        if !self.alternatives.is_empty() && self.alternatives.iter().all(|a| a.finished) {
            items.extend(self.end());
        }
        Ok(items)
    }

    /// The end of the stream: close what is still open (only reachable via
    /// a `[DONE]` line, which Yandex is not known to send), usage, `Done`.
    fn end(&mut self) -> Vec<StreamItem> {
        self.done = true;
        let mut items = Vec::new();
        for (index, state) in self.alternatives.iter_mut().enumerate() {
            if state.role_sent && !state.finished {
                state.finished = true;
                let choice = stream_choice(index as u64, json!({}), Some("stop"));
                items.push(StreamItem::Chunk(chunk(vec![choice], self.include_usage)));
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

fn on_alternative(
    index: u64,
    state: &mut AltState,
    alternative: &Value,
    include_usage: bool,
    items: &mut Vec<StreamItem>,
) -> Result<(), TranslateError> {
    if state.finished {
        return Ok(());
    }
    let message = alternative.get("message").unwrap_or(&Value::Null);
    if let Some(calls) = message.get("toolCallList").filter(|c| !c.is_null()) {
        state.calls = Some(json!({ "toolCallList": calls }));
    }
    let status = alternative.get("status").and_then(Value::as_str);
    let finish = finish_reason(status, state.calls.is_some())?;

    let text = message.get("text").and_then(Value::as_str).unwrap_or("");
    let new_text = match text.strip_prefix(state.sent.as_str()) {
        Some(suffix) => suffix,
        None if state.sent.starts_with(text) => "",
        None => return Err(malformed(FORMAT, "cumulative stream text no longer extends the text already sent")),
    };

    let mut delta = Map::new();
    if !state.role_sent {
        state.role_sent = true;
        delta.insert("role".into(), "assistant".into());
    }
    if !new_text.is_empty() {
        delta.insert("content".into(), new_text.into());
    }
    if finish.is_some() {
        if let Some(calls) = state.calls.take() {
            let calls: Vec<Value> = tool_calls(&calls)?
                .into_iter()
                .enumerate()
                .map(|(k, mut call)| {
                    call["index"] = k.into();
                    call
                })
                .collect();
            if !calls.is_empty() {
                delta.insert("tool_calls".into(), calls.into());
            }
        }
    }
    state.sent.push_str(new_text);
    if delta.len() == 1 && delta.contains_key("role") {
        // OpenAI's first chunk is role plus empty content.
        delta.insert("content".into(), "".into());
    }
    if !delta.is_empty() {
        let choice = stream_choice(index, Value::Object(delta), None);
        items.push(StreamItem::Chunk(chunk(vec![choice], include_usage)));
    }
    if let Some(reason) = finish {
        state.finished = true;
        let choice = stream_choice(index, json!({}), Some(reason));
        items.push(StreamItem::Chunk(chunk(vec![choice], include_usage)));
    }
    Ok(())
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
