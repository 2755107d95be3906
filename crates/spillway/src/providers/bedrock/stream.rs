//! `ConverseStream` events → OpenAI chunks (round3.md §3.4).
//!
//! Each event-stream message names its kind in headers: `:message-type`
//! `event` with an `:event-type` (`messageStart`, `contentBlockStart`,
//! `contentBlockDelta`, `contentBlockStop`, `messageStop`, `metadata`) and
//! the event's body as the JSON payload; `exception` with an
//! `:exception-type` (throttling, a model's stream error, …); `error` with
//! `:error-code`. A `toolUse` block opens with its id and name and its
//! input arrives as JSON text fragments, as OpenAI's arguments do.
//!
//! The answer ends at `messageStop` (the finish chunk) and its usage comes
//! in `metadata`, normally after it; [`StreamItem::Done`] follows whichever
//! of the two comes last (the reference saw `metadata` last, some SDK
//! fixtures first: both are read). A stream that closes after
//! `messageStop` without `metadata` has still finished.

use serde_json::{json, Value};
use std::collections::HashMap;

use super::response::{exception_class, finish_reason, malformed, usage_to_openai, FORMAT};
use crate::providers::chunks::ChunkWriter;
use crate::providers::eventstream::{Message, MessageDecoder};
use crate::providers::translate::{ErrorClass, StreamItem, TranslateError};

/// Translation state of one ConverseStream.
#[derive(Debug, Clone)]
pub struct StreamDecoder {
    out: ChunkWriter,
    said: bool,
    /// Content block index → its OpenAI tool-call index (tool blocks only).
    tools: HashMap<u64, u64>,
    /// `messageStop` came.
    stopped: bool,
    /// The usage from `metadata`, once it came.
    usage: Option<Value>,
    done: bool,
}

impl StreamDecoder {
    pub fn new(include_usage: bool) -> Self {
        Self {
            out: ChunkWriter::new(include_usage),
            said: false,
            tools: HashMap::new(),
            stopped: false,
            usage: None,
            done: false,
        }
    }

    /// Translates one message, given its headers' kind and its payload.
    pub fn on_message(&mut self, message: &Message) -> Result<Vec<StreamItem>, TranslateError> {
        if self.done {
            return Ok(Vec::new());
        }
        match message.header(":message-type").unwrap_or("event") {
            "exception" => {
                let name = message.header(":exception-type").unwrap_or("");
                let text = payload(&message.payload).ok();
                let text = text.as_ref().and_then(|v| v.get("message")).and_then(Value::as_str).unwrap_or("");
                let class = exception_class(name, text).unwrap_or(ErrorClass::Upstream);
                Err(TranslateError::Upstream { class, message: format!("{name}: {text}") })
            }
            "error" => Err(TranslateError::Upstream {
                class: ErrorClass::Upstream,
                message: format!(
                    "{}: {}",
                    message.header(":error-code").unwrap_or("error"),
                    message.header(":error-message").unwrap_or("")
                ),
            }),
            _ => {
                let event = message.header(":event-type").unwrap_or("");
                self.on_event(event, &message.payload)
            }
        }
    }

    fn on_event(&mut self, event: &str, payload_bytes: &[u8]) -> Result<Vec<StreamItem>, TranslateError> {
        if !matches!(event, "messageStart" | "contentBlockStart" | "contentBlockDelta" | "messageStop" | "metadata") {
            // contentBlockStop, and event types added later.
            return Ok(Vec::new());
        }
        let body = payload(payload_bytes)?;
        match event {
            "messageStart" => Ok(vec![self.chunk(json!({ "content": "" }), None)]),
            "contentBlockStart" => self.on_block_start(&body),
            "contentBlockDelta" => self.on_delta(&body),
            "messageStop" => self.on_stop(&body),
            _ => Ok(self.on_metadata(&body)),
        }
    }

    fn on_block_start(&mut self, body: &Value) -> Result<Vec<StreamItem>, TranslateError> {
        let Some(tool) = body.get("start").and_then(|s| s.get("toolUse")) else {
            return Ok(Vec::new());
        };
        let block = block_index(body)?;
        let id = tool.get("toolUseId").and_then(Value::as_str).ok_or_else(|| malformed("toolUse without toolUseId"))?;
        let name = tool.get("name").and_then(Value::as_str).ok_or_else(|| malformed("toolUse without name"))?;
        let k = self.tools.len() as u64;
        self.tools.insert(block, k);
        self.said = true;
        let call = json!({ "index": k, "id": id, "type": "function", "function": { "name": name, "arguments": "" } });
        Ok(vec![self.chunk(json!({ "tool_calls": [call] }), None)])
    }

    fn on_delta(&mut self, body: &Value) -> Result<Vec<StreamItem>, TranslateError> {
        let delta = body.get("delta").ok_or_else(|| malformed("contentBlockDelta without delta"))?;
        if let Some(text) = delta.get("text").and_then(Value::as_str) {
            if text.is_empty() {
                return Ok(Vec::new());
            }
            self.said = true;
            return Ok(vec![self.chunk(json!({ "content": text }), None)]);
        }
        if let Some(piece) = delta.get("toolUse").and_then(|t| t.get("input")).and_then(Value::as_str) {
            let block = block_index(body)?;
            let k = *self
                .tools
                .get(&block)
                .ok_or_else(|| malformed(format!("tool input for block {block}, which never started")))?;
            if piece.is_empty() {
                return Ok(Vec::new());
            }
            let call = json!({ "index": k, "function": { "arguments": piece } });
            return Ok(vec![self.chunk(json!({ "tool_calls": [call] }), None)]);
        }
        // reasoningContent (text, signature, redacted), and new kinds.
        Ok(Vec::new())
    }

    fn on_stop(&mut self, body: &Value) -> Result<Vec<StreamItem>, TranslateError> {
        let stop = body.get("stopReason").and_then(Value::as_str).unwrap_or("end_turn");
        let reason = finish_reason(stop, self.said)?;
        self.stopped = true;
        let mut items = vec![self.chunk(json!({}), Some(reason))];
        if self.usage.is_some() {
            items.extend(self.end());
        }
        Ok(items)
    }

    fn on_metadata(&mut self, body: &Value) -> Vec<StreamItem> {
        if let Some(usage) = body.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage_to_openai(usage));
        }
        if self.stopped {
            self.end()
        } else {
            Vec::new()
        }
    }

    /// The usage chunk (when asked for and known) and the end.
    fn end(&mut self) -> Vec<StreamItem> {
        self.done = true;
        let mut items = Vec::new();
        if let Some(usage) = self.usage.clone().and_then(|u| self.out.usage(u)) {
            items.push(usage);
        }
        items.push(StreamItem::Done);
        items
    }

    fn chunk(&mut self, delta: Value, finish: Option<&'static str>) -> StreamItem {
        self.out.chunk(delta, finish)
    }
}

impl MessageDecoder for StreamDecoder {
    fn decode(&mut self, message: &Message) -> Result<Vec<StreamItem>, TranslateError> {
        self.on_message(message)
    }
}

/// A payload as a JSON object (unreadable: skipped and counted). The
/// padding field `p` some events carry is simply never read.
fn payload(bytes: &[u8]) -> Result<Value, TranslateError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(TranslateError::Unreadable { format: FORMAT, detail: "an event payload is not a JSON object".into() }),
    }
}

fn block_index(body: &Value) -> Result<u64, TranslateError> {
    body.get("contentBlockIndex")
        .and_then(Value::as_u64)
        .ok_or_else(|| malformed("a block event without contentBlockIndex"))
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
