//! Gemini's `streamGenerateContent?alt=sse` → OpenAI chunks (round3.md
//! §2.4).
//!
//! Each SSE event's data is a whole `GenerateContentResponse` holding only
//! the new parts; the last carries `finishReason`, and `usageMetadata` is
//! cumulative. There is no `[DONE]`: the chunk with a `finishReason` ends
//! the answer, so the decoder emits the finish chunk, the usage chunk (when
//! the client asked) and [`StreamItem::Done`] there. A body that closes
//! before it is a broken body (the runner's rule). A function call arrives
//! whole in one part, so each becomes one tool-call chunk.
//!
//! A mid-stream error can come as raw JSON lines without `data:` (the SDK
//! buffers them until the braces balance); the SSE parser skips such lines,
//! so the stream ends without a finish and fails as a broken body — not
//! classified by the error's code (a known limit; `data: {"error":…}` is).

use serde_json::{json, Value};

use super::response::{check_in_band, finish_reason, Candidate, Counter, Usage, FORMAT};
use crate::providers::chunks::ChunkWriter;
use crate::providers::translate::{StreamItem, TranslateError};

/// Translation state of one Gemini stream.
#[derive(Debug, Clone)]
pub struct StreamDecoder {
    out: ChunkWriter,
    /// Anything said so far (text or a call): a safety stop after it ends
    /// the answer with `content_filter`, before it fails the attempt.
    said: bool,
    calls: Counter,
    usage: Option<Usage>,
    done: bool,
}

impl StreamDecoder {
    pub fn new(include_usage: bool) -> Self {
        Self { out: ChunkWriter::new(include_usage), said: false, calls: Counter::default(), usage: None, done: false }
    }

    /// Translates one event's data.
    pub fn on_data(&mut self, data: &str) -> Result<Vec<StreamItem>, TranslateError> {
        if self.done {
            return Ok(Vec::new());
        }
        let body = match serde_json::from_str::<Value>(data) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return Err(TranslateError::Unreadable {
                    format: FORMAT,
                    detail: "an event is not a JSON object".into(),
                })
            }
        };
        check_in_band(&body)?;
        if let Some(u) = Usage::read(&body) {
            self.usage = Some(u);
        }
        let mut candidate = Candidate::default();
        candidate.read(&body, &mut self.calls)?;
        let mut items = Vec::new();
        if !candidate.text.is_empty() {
            self.said = true;
            items.push(self.out.chunk(json!({ "content": candidate.text }), None));
        }
        if !candidate.calls.is_empty() {
            self.said = true;
            items.push(self.out.chunk(json!({ "tool_calls": candidate.calls }), None));
        }
        if let Some(finish) = candidate.finish.as_deref() {
            let reason = finish_reason(finish, self.calls.0 > 0, self.said)?;
            self.done = true;
            items.push(self.out.chunk(json!({}), Some(reason)));
            if let Some(usage) = self.usage.and_then(|u| self.out.usage(u.to_openai())) {
                items.push(usage);
            }
            items.push(StreamItem::Done);
        }
        Ok(items)
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
