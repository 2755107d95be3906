//! The chat stream as Anthropic's stream events (round2.md §3.2), one chat
//! chunk at a time.
//!
//! `message_start` opens it (with the prompt's estimated `input_tokens`:
//! the chat stream tells the real count only in its usage chunk, which
//! `message_delta` repeats). Text opens a text block at its first delta;
//! each new tool call closes the open block and opens a `tool_use` block,
//! its argument fragments `input_json_delta`s. Blocks are numbered from 0
//! and one is open at a time. At `[DONE]`: the last `content_block_stop`,
//! `message_delta` with the stop reason and usage, `message_stop` — no
//! `[DONE]`. A chat stream that failed after its first byte ends with an
//! `error` event in Anthropic's shape.

use super::super::reframe::{named_event, new_id, ChatEvent, Delta, Reframe, Usage};
use super::response::stop_reason;
use bytes::Bytes;
use serde_json::{json, Value};

/// The translator of one message's stream.
pub struct Events {
    id: String,
    model: String,
    input_tokens: u64,
    started: bool,
    /// Blocks opened so far (the next block's index).
    blocks: usize,
    /// The open block: `None` for text, the chat tool-call index for a tool.
    open: Option<Option<u64>>,
    /// Chat tool-call index → block index.
    calls: Vec<(u64, usize)>,
    finish: Option<String>,
    usage: Option<Usage>,
    finished: bool,
}

impl Events {
    /// A stream for a message of `model` whose prompt is about `input_tokens` long.
    pub fn new(model: &str, input_tokens: u64) -> Self {
        Self {
            id: new_id("msg_"),
            model: model.to_string(),
            input_tokens,
            started: false,
            blocks: 0,
            open: None,
            calls: Vec::new(),
            finish: None,
            usage: None,
            finished: false,
        }
    }

    fn emit(out: &mut Vec<Bytes>, name: &str, mut data: Value) {
        data["type"] = json!(name);
        out.push(named_event(name, &data));
    }

    fn start(&mut self, out: &mut Vec<Bytes>) {
        if std::mem::replace(&mut self.started, true) {
            return;
        }
        let message = json!({"id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": 0}});
        Self::emit(out, "message_start", json!({"message": message}));
    }

    fn close(&mut self, out: &mut Vec<Bytes>) {
        if self.open.take().is_some() {
            Self::emit(out, "content_block_stop", json!({"index": self.blocks - 1}));
        }
    }

    fn open(&mut self, out: &mut Vec<Bytes>, which: Option<u64>, block: Value) {
        self.close(out);
        Self::emit(out, "content_block_start", json!({"index": self.blocks, "content_block": block}));
        self.open = Some(which);
        self.blocks += 1;
    }

    fn text(&mut self, out: &mut Vec<Bytes>, text: &str) {
        if self.open != Some(None) {
            self.open(out, None, json!({"type": "text", "text": ""}));
        }
        let delta = json!({"index": self.blocks - 1, "delta": {"type": "text_delta", "text": text}});
        Self::emit(out, "content_block_delta", delta);
    }

    fn tool(&mut self, out: &mut Vec<Bytes>, i: u64, id: Option<&str>, name: Option<&str>, args: Option<&str>) {
        let index = match self.calls.iter().find(|(c, _)| *c == i) {
            Some(&(_, index)) => index,
            None => {
                let id = id.map_or_else(|| new_id("toolu_"), str::to_string);
                let block = json!({"type": "tool_use", "id": id, "name": name.unwrap_or_default(), "input": {}});
                self.open(out, Some(i), block);
                self.calls.push((i, self.blocks - 1));
                self.blocks - 1
            }
        };
        if let Some(fragment) = args.filter(|a| !a.is_empty()) {
            let delta = json!({"index": index, "delta": {"type": "input_json_delta", "partial_json": fragment}});
            Self::emit(out, "content_block_delta", delta);
        }
    }

    fn done(&mut self, out: &mut Vec<Bytes>) {
        self.start(out);
        if self.blocks == 0 {
            self.open(out, None, json!({"type": "text", "text": ""}));
        }
        self.close(out);
        let u = self.usage.unwrap_or_default();
        let input = if self.usage.is_some() { u.prompt.saturating_sub(u.cached) } else { self.input_tokens };
        let delta = json!({"delta": {"stop_reason": stop_reason(self.finish.as_deref()), "stop_sequence": null},
            "usage": {"input_tokens": input, "output_tokens": u.completion, "cache_read_input_tokens": u.cached}});
        Self::emit(out, "message_delta", delta);
        Self::emit(out, "message_stop", json!({}));
        self.finished = true;
    }
}

impl Reframe for Events {
    fn event(&mut self, ev: ChatEvent, out: &mut Vec<Bytes>) {
        match ev {
            ChatEvent::Chunk(chunk) => {
                self.start(out);
                let d = Delta::of(&chunk);
                if let Some(t) = d.content.or(d.refusal) {
                    self.text(out, t);
                }
                for (i, id, name, args) in d.tool_calls {
                    self.tool(out, i, id, name, args);
                }
                if let Some(f) = d.finish_reason {
                    self.finish = Some(f.to_string());
                }
                if let Some(u) = d.usage {
                    self.usage = Some(Usage::of(u));
                }
            }
            ChatEvent::Done => self.done(out),
            ChatEvent::Failed { message, .. } => {
                let error = json!({"type": "api_error", "message": message});
                Self::emit(out, "error", json!({"error": error}));
                self.finished = true;
            }
        }
    }

    fn finished(&self) -> bool {
        self.finished
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(delta: Value, finish: Option<&str>) -> ChatEvent {
        ChatEvent::Chunk(json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))
    }

    #[test]
    fn text_then_tool_use() {
        let mut t = Events::new("p/m", 9);
        let mut out = Vec::new();
        for e in [
            chunk(json!({"role": "assistant", "content": "Hi"}), None),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "w", "arguments": "{\"c\":"}}]}),
                None,
            ),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}), Some("tool_calls")),
            ChatEvent::Chunk(json!({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 5}})),
            ChatEvent::Done,
        ] {
            t.event(e, &mut out);
        }
        let ev: Vec<Value> = out
            .iter()
            .map(|b| {
                let text = std::str::from_utf8(b).unwrap();
                let (head, data) = text.split_once("\ndata: ").unwrap();
                let v: Value = serde_json::from_str(data.trim()).unwrap();
                assert_eq!(head.strip_prefix("event: "), v["type"].as_str(), "event name = data.type");
                v
            })
            .collect();
        let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
            ]
        );
        assert_eq!(ev[4]["content_block"]["id"], "call_1");
        assert_eq!(ev[6]["index"], 1);
        assert_eq!(
            (ev[8]["delta"]["stop_reason"].as_str(), ev[8]["usage"]["output_tokens"].as_u64()),
            (Some("tool_use"), Some(5))
        );
    }
}
