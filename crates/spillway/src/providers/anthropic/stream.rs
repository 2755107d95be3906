//! Anthropic streaming events → OpenAI `chat.completion.chunk`s.
//!
//! Sits between the gateway's SSE line parser and the cascade runner's
//! first-chunk peek: the parser hands over one event at a time (its `event:`
//! name and joined `data:`), [`StreamDecoder::on_event`] turns it into zero
//! or more OpenAI chunks, and `message_stop` into [`StreamItem::Done`]. An
//! `error` event, which Anthropic may send after HTTP 200, becomes a
//! classified [`TranslateError::Upstream`] so the runner can still fall
//! through if nothing reached the client yet (reference §4.3, §4.5).

use std::collections::HashMap;

use serde_json::{json, Value};

use super::response::{classify_value, finish_reason, malformed, UsageTally};
use crate::providers::chunks::ChunkWriter;
use crate::providers::translate::{StreamItem, TranslateError};

/// Translation state for one Anthropic stream; one decoder per attempt.
#[derive(Debug, Clone)]
pub struct StreamDecoder {
    /// Writes the chunks: the role first, `usage: null` on each and a usage
    /// chunk before the end when the client asked for it.
    out: ChunkWriter,
    /// Every started content block by Anthropic index → its OpenAI
    /// tool-call index; `None` for blocks that are not `tool_use` (text,
    /// thinking, server tools), whose JSON deltas are not the client's.
    blocks: HashMap<u64, Option<u64>>,
    next_tool_index: u64,
    /// Latest counts: input from `message_start`, output (cumulative) from
    /// `message_delta`. `None` until the upstream reported any.
    usage: Option<UsageTally>,
    stop_reason: Option<String>,
    /// Set at `message_stop`; anything after it is ignored.
    done: bool,
}

impl StreamDecoder {
    /// A decoder for a fresh stream.
    pub fn new(include_usage: bool) -> Self {
        Self {
            out: ChunkWriter::new(include_usage),
            blocks: HashMap::new(),
            next_tool_index: 0,
            usage: None,
            stop_reason: None,
            done: false,
        }
    }

    /// Translates one SSE event. `event` is the `event:` name, if any;
    /// `data` the event's joined `data:` lines.
    ///
    /// Unknown event and delta types are ignored, since Anthropic adds new
    /// ones over time; a known event whose data is not the expected JSON is
    /// [`TranslateError::Malformed`].
    pub fn on_event(&mut self, event: Option<&str>, data: &str) -> Result<Vec<StreamItem>, TranslateError> {
        if self.done {
            return Ok(Vec::new());
        }
        // Anthropic always names its events, and the data's `type` repeats
        // the name; without a name, fall back to the `type`.
        let (name, parsed) = match event.filter(|e| !e.is_empty() && *e != "message") {
            Some(name) if !is_known(name) => return Ok(Vec::new()),
            Some(name) => (name.to_owned(), parse(name, data)?),
            None => {
                let parsed = parse("unnamed", data)?;
                let name = match parsed.get("type").and_then(Value::as_str) {
                    Some(kind) => kind.to_owned(),
                    // A bare `{"error": …}` is a failure in every dialect
                    // (reference §9.1), even without Anthropic's `type`.
                    None if parsed.get("error").is_some() => "error".to_owned(),
                    None => String::new(),
                };
                (name, parsed)
            }
        };
        match name.as_str() {
            "message_start" => Ok(self.on_message_start(&parsed)),
            "content_block_start" => self.on_block_start(&parsed),
            "content_block_delta" => self.on_block_delta(&parsed),
            "message_delta" => Ok(self.on_message_delta(&parsed)),
            "message_stop" => Ok(self.on_message_stop()),
            "error" => {
                let (class, message) = classify_value(None, &parsed);
                Err(TranslateError::Upstream { class, message })
            }
            // ping, content_block_stop, and unknown types without a name.
            _ => Ok(Vec::new()),
        }
    }

    fn on_message_start(&mut self, event: &Value) -> Vec<StreamItem> {
        if let Some(usage) = event.get("message").and_then(|m| m.get("usage")).and_then(Value::as_object) {
            self.usage.get_or_insert_with(UsageTally::default).update(usage);
        }
        // OpenAI's first chunk: the role, with empty content.
        vec![self.chunk(json!({ "content": "" }), None)]
    }

    fn on_block_start(&mut self, event: &Value) -> Result<Vec<StreamItem>, TranslateError> {
        let index = block_index(event)?;
        let block = event
            .get("content_block")
            .filter(|b| b.is_object())
            .ok_or_else(|| malformed("content_block_start without content_block"))?;
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                self.blocks.insert(index, None);
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                Ok(self.text_chunk(text))
            }
            Some("tool_use") => {
                let id = block.get("id").and_then(Value::as_str).ok_or_else(|| malformed("tool_use without id"))?;
                let name =
                    block.get("name").and_then(Value::as_str).ok_or_else(|| malformed("tool_use without name"))?;
                let k = self.next_tool_index;
                self.next_tool_index += 1;
                self.blocks.insert(index, Some(k));
                // The input normally arrives as input_json_delta pieces and
                // the start carries `{}`; should a full input come up front,
                // it is the whole argument string.
                let arguments = match block.get("input") {
                    Some(Value::Object(input)) if !input.is_empty() => Value::Object(input.clone()).to_string(),
                    _ => String::new(),
                };
                let call = json!({
                    "index": k, "id": id, "type": "function",
                    "function": { "name": name, "arguments": arguments },
                });
                Ok(vec![self.chunk(json!({ "tool_calls": [call] }), None)])
            }
            // thinking, redacted_thinking, server tools: not for OpenAI.
            _ => {
                self.blocks.insert(index, None);
                Ok(Vec::new())
            }
        }
    }

    fn on_block_delta(&mut self, event: &Value) -> Result<Vec<StreamItem>, TranslateError> {
        let index = block_index(event)?;
        let delta = event
            .get("delta")
            .filter(|d| d.is_object())
            .ok_or_else(|| malformed("content_block_delta without delta"))?;
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                let text =
                    delta.get("text").and_then(Value::as_str).ok_or_else(|| malformed("text_delta without text"))?;
                Ok(self.text_chunk(text))
            }
            Some("input_json_delta") => {
                let piece = delta
                    .get("partial_json")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("input_json_delta without partial_json"))?;
                let k = match self.blocks.get(&index) {
                    Some(Some(k)) => *k,
                    // A server tool's input, say: not a client tool call.
                    Some(None) => return Ok(Vec::new()),
                    None => return Err(malformed(format!("input_json_delta for block {index}, which never started"))),
                };
                // Anthropic often opens with an empty piece; it adds nothing.
                if piece.is_empty() {
                    return Ok(Vec::new());
                }
                let call = json!({ "index": k, "function": { "arguments": piece } });
                Ok(vec![self.chunk(json!({ "tool_calls": [call] }), None)])
            }
            // thinking_delta, signature_delta, citations_delta, and new ones.
            _ => Ok(Vec::new()),
        }
    }

    fn on_message_delta(&mut self, event: &Value) -> Vec<StreamItem> {
        if let Some(reason) = event.get("delta").and_then(|d| d.get("stop_reason")).and_then(Value::as_str) {
            self.stop_reason = Some(reason.to_owned());
        }
        // Cumulative counts: the last value wins (reference §4.3).
        if let Some(usage) = event.get("usage").and_then(Value::as_object) {
            self.usage.get_or_insert_with(UsageTally::default).update(usage);
        }
        Vec::new()
    }

    fn on_message_stop(&mut self) -> Vec<StreamItem> {
        self.done = true;
        let reason = finish_reason(self.stop_reason.as_deref());
        let mut items = vec![self.chunk(json!({}), Some(reason))];
        // Without any counts from upstream, no usage chunk: a made-up zero
        // would undercount cost silently (reference §9.3).
        if let Some(usage) = self.usage.and_then(|u| self.out.usage(u.to_openai())) {
            items.push(usage);
        }
        items.push(StreamItem::Done);
        items
    }

    /// A content chunk, or nothing for an empty piece (which would only be
    /// noise, and must not count as first content).
    fn text_chunk(&mut self, text: &str) -> Vec<StreamItem> {
        if text.is_empty() {
            return Vec::new();
        }
        vec![self.chunk(json!({ "content": text }), None)]
    }

    /// One OpenAI chunk with a single choice. The first chunk of the stream
    /// also carries the role, even if `message_start` never came.
    fn chunk(&mut self, delta: Value, finish: Option<&'static str>) -> StreamItem {
        self.out.chunk(delta, finish)
    }
}

/// The event names this decoder understands; others are skipped unparsed.
fn is_known(name: &str) -> bool {
    matches!(
        name,
        "message_start"
            | "content_block_start"
            | "content_block_delta"
            | "content_block_stop"
            | "message_delta"
            | "message_stop"
            | "ping"
            | "error"
    )
}

/// An event's data as a JSON object. Data that is not one is unreadable
/// (skipped and counted by the runner) — except an `error` event's, which
/// fails the stream whatever it says.
fn parse(name: &str, data: &str) -> Result<Value, TranslateError> {
    let unreadable = |detail: String| if name == "error" { malformed(detail) } else { unreadable(detail) };
    match serde_json::from_str::<Value>(data) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(unreadable(format!("{name} event data is not a JSON object"))),
        Err(e) => Err(unreadable(format!("{name} event data is not JSON: {e}"))),
    }
}

fn unreadable(detail: String) -> TranslateError {
    TranslateError::Unreadable { format: super::response::FORMAT, detail }
}

fn block_index(event: &Value) -> Result<u64, TranslateError> {
    event.get("index").and_then(Value::as_u64).ok_or_else(|| malformed("content block event without index"))
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
