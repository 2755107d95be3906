//! Writing OpenAI `chat.completion.chunk`s from a native stream's events:
//! one choice, the role on the first chunk of the stream, `usage: null` on
//! every chunk when the client asked for a usage chunk (which then comes
//! last, with empty `choices`). Shared by the stream decoders of
//! `anthropic`, `gemini` and `bedrock`, so their chunks have one shape.

use serde_json::{json, Map, Value};

use super::translate::StreamItem;

/// The chunk writer of one stream.
#[derive(Debug, Clone)]
pub(crate) struct ChunkWriter {
    /// The client asked for `stream_options.include_usage`.
    include_usage: bool,
    /// Whether `delta.role` was sent; OpenAI clients expect it first.
    role_sent: bool,
}

impl ChunkWriter {
    pub(crate) fn new(include_usage: bool) -> Self {
        Self { include_usage, role_sent: false }
    }

    /// One chunk with a single choice. The first of the stream also
    /// carries the role, whatever event it came from.
    pub(crate) fn chunk(&mut self, mut delta: Value, finish: Option<&'static str>) -> StreamItem {
        if !self.role_sent {
            self.role_sent = true;
            delta["role"] = Value::from("assistant");
        }
        let mut chunk = Map::new();
        chunk.insert("object".into(), Value::from("chat.completion.chunk"));
        chunk.insert(
            "choices".into(),
            json!([{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }]),
        );
        if self.include_usage {
            chunk.insert("usage".into(), Value::Null);
        }
        StreamItem::Chunk(Value::Object(chunk))
    }

    /// The usage chunk, when the client asked for one.
    pub(crate) fn usage(&self, usage: Value) -> Option<StreamItem> {
        self.include_usage
            .then(|| StreamItem::Chunk(json!({ "object": "chat.completion.chunk", "choices": [], "usage": usage })))
    }
}
