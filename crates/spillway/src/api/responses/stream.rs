//! The chat stream as the Responses API's typed event stream (round2.md
//! §1.4), one chat chunk at a time.
//!
//! `response.created` and `response.in_progress` open it; the text opens a
//! `message` item and its `output_text` part lazily, at its first delta (a
//! tool-only answer has no empty message); each new tool call closes the
//! text and opens a `function_call` item whose argument fragments become
//! `function_call_arguments.delta` events. At `[DONE]` every open item is
//! closed (`…done` events carry the full text) and `response.completed` —
//! or `response.incomplete` for `length`/`content_filter` — ends the
//! stream with the whole response and its usage; there is no `[DONE]`.
//! A chat stream that failed after its first byte ends with an `error`
//! event (code and message both at the top and under `error`, so parsers
//! of the spec's shape and of the recorded nested shape both read it) and
//! `response.failed`. Every event has the next `sequence_number`.
//! [`Events::on_done`] hands the finished response object to whoever keeps
//! it (the handler stores it) before `response.completed` is sent.

use super::super::reframe::{named_event, new_id, ChatEvent, Delta, Reframe, Usage};
use super::response::{call_item, message_item, status_of, text_part, usage, Shell};
use bytes::Bytes;
use serde_json::{json, Value};

/// The open `message` item.
struct Message {
    id: String,
    index: usize,
    /// Finished content parts.
    parts: Vec<Value>,
    /// The part being written: `output_text` or `refusal`, and its text.
    open: Option<(&'static str, String)>,
}

/// A `function_call` item (open until the answer ends: chat may
/// interleave the fragments of parallel calls).
struct Call {
    chat_index: u64,
    id: String,
    index: usize,
    call_id: String,
    name: String,
    arguments: String,
}

/// The translator of one response's stream.
pub struct Events {
    shell: Shell,
    seq: u64,
    started: bool,
    /// Closed items by output index.
    output: Vec<Option<Value>>,
    message: Option<Message>,
    calls: Vec<Call>,
    finish: Option<String>,
    usage: Option<Usage>,
    finished: bool,
    /// Called once with the finished (completed or incomplete) response.
    on_done: Option<OnDone>,
}

/// What receives a stream's finished response object.
pub type OnDone = Box<dyn FnOnce(Value) + Send>;

impl Events {
    /// A stream for the response `shell`.
    pub fn new(shell: Shell) -> Self {
        Self {
            shell,
            seq: 0,
            started: false,
            output: Vec::new(),
            message: None,
            calls: Vec::new(),
            finish: None,
            usage: None,
            finished: false,
            on_done: None,
        }
    }

    /// Hands the finished response object to `f` (not a failed one).
    #[must_use]
    pub fn on_done(mut self, f: OnDone) -> Self {
        self.on_done = Some(f);
        self
    }

    fn emit(&mut self, out: &mut Vec<Bytes>, name: &str, mut data: Value) {
        data["type"] = json!(name);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        out.push(named_event(name, &data));
    }

    fn start(&mut self, out: &mut Vec<Bytes>) {
        if std::mem::replace(&mut self.started, true) {
            return;
        }
        let obj = Value::Object(self.shell.object("in_progress", Vec::new(), Value::Null));
        self.emit(out, "response.created", json!({"response": obj.clone()}));
        self.emit(out, "response.in_progress", json!({"response": obj}));
    }

    fn next_index(&mut self) -> usize {
        self.output.push(None);
        self.output.len() - 1
    }

    /// Appends `delta` to the message's part of `kind`, opening what is needed.
    fn text(&mut self, out: &mut Vec<Bytes>, kind: &'static str, delta: &str) {
        if self.message.is_none() {
            let index = self.next_index();
            let id = new_id("msg_");
            let item = message_item(&id, "in_progress", Vec::new());
            self.emit(out, "response.output_item.added", json!({"output_index": index, "item": item}));
            self.message = Some(Message { id, index, parts: Vec::new(), open: None });
        }
        if self.message.as_ref().and_then(|m| m.open.as_ref()).is_some_and(|(k, _)| *k != kind) {
            self.close_part(out);
        }
        let Some(m) = self.message.as_mut() else { return };
        let (id, index, content_index) = (m.id.clone(), m.index, m.parts.len());
        if m.open.is_none() {
            m.open = Some((kind, String::new()));
            let part = if kind == "refusal" { json!({"type": "refusal", "refusal": ""}) } else { text_part("") };
            let at = json!({"item_id": id, "output_index": index, "content_index": content_index, "part": part});
            self.emit(out, "response.content_part.added", at);
        }
        if let Some((_, text)) = self.message.as_mut().and_then(|m| m.open.as_mut()) {
            text.push_str(delta);
        }
        let mut ev = json!({"item_id": id, "output_index": index, "content_index": content_index, "delta": delta});
        let name = if kind == "refusal" {
            "response.refusal.delta"
        } else {
            ev["logprobs"] = json!([]);
            "response.output_text.delta"
        };
        self.emit(out, name, ev);
    }

    fn close_part(&mut self, out: &mut Vec<Bytes>) {
        let Some(m) = self.message.as_mut() else { return };
        let Some((kind, text)) = m.open.take() else { return };
        let (id, index, content_index) = (m.id.clone(), m.index, m.parts.len());
        let at = json!({"item_id": id, "output_index": index, "content_index": content_index});
        let part = if kind == "refusal" {
            let mut done = at.clone();
            done["refusal"] = json!(text);
            self.emit(out, "response.refusal.done", done);
            json!({"type": "refusal", "refusal": text})
        } else {
            let mut done = at.clone();
            done["text"] = json!(text);
            done["logprobs"] = json!([]);
            self.emit(out, "response.output_text.done", done);
            text_part(&text)
        };
        let mut ev = at;
        ev["part"] = part.clone();
        self.emit(out, "response.content_part.done", ev);
        if let Some(m) = self.message.as_mut() {
            m.parts.push(part);
        }
    }

    fn close_message(&mut self, out: &mut Vec<Bytes>, status: &str) {
        self.close_part(out);
        let Some(m) = self.message.take() else { return };
        let item = message_item(&m.id, status, m.parts);
        self.emit(out, "response.output_item.done", json!({"output_index": m.index, "item": item.clone()}));
        if let Some(slot) = self.output.get_mut(m.index) {
            *slot = Some(item);
        }
    }

    fn tool_call(
        &mut self,
        out: &mut Vec<Bytes>,
        chat_index: u64,
        id: Option<&str>,
        name: Option<&str>,
        args: Option<&str>,
    ) {
        self.close_message(out, "completed");
        let pos = match self.calls.iter().position(|c| c.chat_index == chat_index) {
            Some(pos) => pos,
            None => {
                let index = self.next_index();
                let call = Call {
                    chat_index,
                    id: new_id("fc_"),
                    index,
                    call_id: id.map_or_else(|| new_id("call_"), str::to_string),
                    name: name.unwrap_or_default().to_string(),
                    arguments: String::new(),
                };
                let item = call_item(&call.id, "in_progress", &call.call_id, &call.name, "");
                self.emit(out, "response.output_item.added", json!({"output_index": index, "item": item}));
                self.calls.push(call);
                self.calls.len() - 1
            }
        };
        let Some(fragment) = args.filter(|a| !a.is_empty()) else { return };
        let Some(call) = self.calls.get_mut(pos) else { return };
        call.arguments.push_str(fragment);
        let ev = json!({"item_id": call.id, "output_index": call.index, "delta": fragment});
        self.emit(out, "response.function_call_arguments.delta", ev);
    }

    fn done(&mut self, out: &mut Vec<Bytes>) {
        self.start(out);
        let (status, incomplete) = status_of(self.finish.as_deref());
        let item_status = if status == "completed" { "completed" } else { "incomplete" };
        if self.output.is_empty() {
            // Nothing was said at all: still one (empty) message.
            self.text(out, "output_text", "");
        }
        self.close_message(out, item_status);
        for call in std::mem::take(&mut self.calls) {
            let at =
                json!({"item_id": call.id, "output_index": call.index, "name": call.name, "arguments": call.arguments});
            self.emit(out, "response.function_call_arguments.done", at);
            let item = call_item(&call.id, "completed", &call.call_id, &call.name, &call.arguments);
            self.emit(out, "response.output_item.done", json!({"output_index": call.index, "item": item.clone()}));
            if let Some(slot) = self.output.get_mut(call.index) {
                *slot = Some(item);
            }
        }
        let output = self.output.drain(..).flatten().collect();
        let mut obj = self.shell.object(status, output, usage(self.usage.unwrap_or_default()));
        obj.insert("incomplete_details".into(), incomplete);
        if let Some(f) = self.on_done.take() {
            f(Value::Object(obj.clone()));
        }
        let name = if status == "completed" { "response.completed" } else { "response.incomplete" };
        self.emit(out, name, json!({"response": obj}));
        self.finished = true;
    }

    fn failed(&mut self, out: &mut Vec<Bytes>, message: &str, code: Option<&str>) {
        self.start(out);
        let code = code.unwrap_or("server_error");
        let error = json!({"type": "server_error", "code": code, "message": message, "param": null});
        self.emit(out, "error", json!({"code": code, "message": message, "param": null, "error": error}));
        let output = self.output.drain(..).flatten().collect();
        let mut obj = self.shell.object("failed", output, Value::Null);
        obj.insert("error".into(), json!({"code": "server_error", "message": message}));
        self.emit(out, "response.failed", json!({"response": obj}));
        self.finished = true;
    }
}

impl Reframe for Events {
    fn event(&mut self, ev: ChatEvent, out: &mut Vec<Bytes>) {
        match ev {
            ChatEvent::Chunk(chunk) => {
                self.start(out);
                let d = Delta::of(&chunk);
                if let Some(t) = d.content {
                    self.text(out, "output_text", t);
                }
                if let Some(r) = d.refusal {
                    self.text(out, "refusal", r);
                }
                for (i, id, name, args) in d.tool_calls {
                    self.tool_call(out, i, id, name, args);
                }
                if let Some(f) = d.finish_reason {
                    self.finish = Some(f.to_string());
                }
                if let Some(u) = d.usage {
                    self.usage = Some(Usage::of(u));
                }
            }
            ChatEvent::Done => self.done(out),
            ChatEvent::Failed { message, code } => self.failed(out, &message, code.as_deref()),
        }
    }

    fn finished(&self) -> bool {
        self.finished
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: Vec<ChatEvent>) -> Vec<Value> {
        let (_, echo) = super::super::request::to_chat(br#"{"model":"m","input":"hi"}"#).unwrap();
        let mut t = Events::new(Shell::new("p/m", echo, 1));
        let mut out = Vec::new();
        for e in events {
            t.event(e, &mut out);
        }
        out.iter()
            .map(|b| {
                let text = std::str::from_utf8(b).unwrap();
                serde_json::from_str(text.split_once("data: ").unwrap().1.trim()).unwrap()
            })
            .collect()
    }

    fn chunk(delta: Value, finish: Option<&str>) -> ChatEvent {
        ChatEvent::Chunk(json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))
    }

    #[test]
    fn text_then_a_tool_call() {
        let ev = run(vec![
            chunk(json!({"role": "assistant", "content": "Hi"}), None),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{\"a\""}}]}),
                None,
            ),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}), Some("tool_calls")),
            ChatEvent::Chunk(json!({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 3}})),
            ChatEvent::Done,
        ]);
        let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        assert!(ev.iter().enumerate().all(|(i, e)| e["sequence_number"] == i as u64));
        let done = &ev[13]["response"];
        assert_eq!(done["output"][1]["arguments"], "{\"a\":1}");
        assert_eq!(done["usage"]["input_tokens"], 4);
    }

    #[test]
    fn a_failure_ends_with_error_and_failed() {
        let ev = run(vec![
            chunk(json!({"content": "Hi"}), None),
            ChatEvent::Failed { message: "cut".into(), code: Some("broken_body".into()) },
        ]);
        let n = ev.len();
        assert_eq!((ev[n - 2]["type"].as_str(), ev[n - 2]["error"]["message"].as_str()), (Some("error"), Some("cut")));
        assert_eq!(ev[n - 1]["response"]["status"], "failed");
    }
}
