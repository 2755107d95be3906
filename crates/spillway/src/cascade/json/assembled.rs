//! A streamed answer put back together ([`Assembled`]) from what each
//! chunk's check found, and [`buffered`]: a JSON answer's stream read to
//! its end, validated, and sent on as a short clean stream.

use super::{check_completion, JsonPlan};
use crate::api::completion::{Completion, RawCompletion, TextBuf, Tokens};
use crate::cascade::plan::Target;
use crate::outcome::{AttemptError, Failure};
use crate::providers::{ChunkStream, StreamItem};
use crate::quality::Signals;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::borrow::Cow;
use tokio::time::{timeout_at, Instant};

/// A streamed answer put back together.
#[derive(Default)]
pub(in crate::cascade) struct Assembled {
    content: TextBuf,
    refusal: Option<String>,
    /// id, name, arguments — by tool-call index.
    calls: Vec<(String, String, String)>,
    pub(in crate::cascade) finish: Option<Value>,
    usage: Option<Usage>,
}

/// A stream's `usage` object: a tree from a translated chunk, or the bytes
/// of a checked one (with its counts).
enum Usage {
    Tree(Value),
    Raw(Vec<u8>, Tokens),
}

impl Usage {
    fn into_value(self) -> Option<Value> {
        match self {
            Self::Tree(v) => Some(v),
            Self::Raw(json, _) => serde_json::from_slice(&json).ok(),
        }
    }
}

impl Assembled {
    /// The answer as a whole `chat.completion` (choice 0), not yet stamped:
    /// written as bytes (as the fast path keeps an upstream's), or as a
    /// tree when it has tool calls or a finish reason the schema does not
    /// know (the stamp completes and fixes those).
    pub(in crate::cascade) fn into_completion(self) -> Completion {
        let finish = match &self.finish {
            None => Some("stop".to_owned()),
            Some(f) => f.as_str().map(str::to_owned),
        };
        let Some(finish) = finish.filter(|_| self.calls.is_empty()) else { return self.into_tree() };
        let Self { content, refusal, calls, finish: f, usage: u } = self;
        let content = content.into_string();
        // The checked chunk's usage bytes as they are; a translated chunk's
        // tree written out.
        let usage = match &u {
            Some(Usage::Raw(json, tokens)) => Some((Cow::Borrowed(json.as_slice()), *tokens)),
            Some(Usage::Tree(v)) if v.is_object() => {
                serde_json::to_vec(v).ok().map(|json| (Cow::Owned(json), Tokens::of(v)))
            }
            Some(Usage::Tree(_)) | None => None,
        };
        let written = usage.as_ref().map(|(json, tokens)| (json.as_ref(), *tokens));
        match RawCompletion::assembled(content, refusal.as_deref(), &finish, written) {
            Ok(raw) => Completion::Raw(raw),
            // A finish reason the schema does not know: the tree fixes it.
            Err(content) => Self { content: content.into(), refusal, calls, finish: f, usage: u }.into_tree(),
        }
    }

    /// The answer as a tree (tool calls, or a finish reason to fix).
    fn into_tree(self) -> Completion {
        let Self { content, refusal, calls, finish, usage } = self;
        let content = content.into_string();
        let tool_calls: Vec<Value> = calls
            .into_iter()
            .map(
                |(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}),
            )
            .collect();
        let text = if content.is_empty() && !tool_calls.is_empty() { Value::Null } else { Value::String(content) };
        let mut message = json!({"role": "assistant", "content": text, "refusal": refusal});
        if !tool_calls.is_empty() {
            message["tool_calls"] = Value::Array(tool_calls);
        }
        let finish = finish.unwrap_or_else(|| json!("stop"));
        let mut whole = json!({
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
        });
        if let Some(u) = usage.and_then(Usage::into_value) {
            whole["usage"] = u;
        }
        Completion::Value(whole)
    }

    /// Takes in one stream item. A checked chunk ([`StreamItem::Raw`]) is
    /// read from what its check found, without a tree; the rest (tool
    /// calls, refusals, translated chunks) as trees.
    pub(in crate::cascade) fn absorb_item(&mut self, item: StreamItem) {
        match item {
            StreamItem::Raw(r) if !r.has_refusal() && !r.other_choice() => {
                self.content.push_checked(r.content_bytes());
                if let Some(finish) = r.finish_reason() {
                    self.finish = Some(Value::String(finish.into()));
                }
                if let (Some(json), Some(tokens)) = (r.usage_json(), r.tokens()) {
                    self.usage = Some(Usage::Raw(json.to_vec(), tokens));
                }
            }
            other => {
                if let Some(v) = other.into_value() {
                    self.absorb(&v);
                }
            }
        }
    }

    fn absorb(&mut self, chunk: &Value) {
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(Usage::Tree(u.clone()));
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else { return };
        if let Some(fr) = choice.get("finish_reason").filter(|f| !f.is_null()) {
            self.finish = Some(fr.clone());
        }
        let Some(delta) = choice.get("delta") else { return };
        if let Some(c) = delta.get("content").and_then(Value::as_str) {
            self.content.push_str(c);
        }
        if let Some(r) = delta.get("refusal").and_then(Value::as_str) {
            self.refusal.get_or_insert_with(String::new).push_str(r);
        }
        for tc in delta.get("tool_calls").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
            let i = tc.get("index").and_then(Value::as_u64).unwrap_or(0).min(64) as usize;
            if self.calls.len() <= i {
                self.calls.resize(i + 1, Default::default());
            }
            if let Some(id) = tc.get("id").and_then(Value::as_str) {
                self.calls[i].0 = id.to_string();
            }
            if let Some(f) = tc.get("function") {
                if let Some(n) = f.get("name").and_then(Value::as_str) {
                    self.calls[i].1.push_str(n);
                }
                if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                    self.calls[i].2.push_str(a);
                }
            }
        }
    }
}

/// Reads a stream to its end, validates the assembled answer, and returns
/// the chunks to send: the clean JSON as one content chunk (or the checked
/// tool calls), the finish chunk, the usage chunk if any.
pub async fn buffered(
    head: Vec<StreamItem>,
    mut rest: ChunkStream,
    deadline: Instant,
    plan: &JsonPlan,
    target: &Target,
    signals: &mut Signals,
) -> Result<Vec<Value>, AttemptError> {
    let mut acc = Assembled::default();
    head.into_iter().for_each(|c| acc.absorb_item(c));
    let mut done = false;
    while !done {
        match timeout_at(deadline, rest.next()).await {
            Err(_) => {
                return Err(AttemptError::new(Failure::Timeout, "the JSON stream did not finish before the deadline"))
            }
            Ok(None) if acc.finish.is_some() => done = true,
            Ok(None) => return Err(AttemptError::new(Failure::BrokenBody, "the stream ended without a finish signal")),
            Ok(Some(Err(e))) => return Err(e),
            Ok(Some(Ok(StreamItem::Done))) => done = true,
            Ok(Some(Ok(StreamItem::Skipped))) => {}
            Ok(Some(Ok(item))) => acc.absorb_item(item),
        }
    }
    let Assembled { content, calls, finish, usage, .. } = acc;
    let content = content.into_string();
    let tool_calls: Vec<Value> = calls
        .into_iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
        .collect();
    let mut message = json!({"role": "assistant", "content": content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    let mut whole = json!({"choices": [{"index": 0, "message": message}]});
    check_completion(&mut whole, plan, target, signals)?;
    let message = &whole["choices"][0]["message"];
    let mut delta = json!({"role": "assistant"});
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        let indexed: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| json!({"index": i, "id": c["id"], "type": "function", "function": c["function"]}))
            .collect();
        delta["tool_calls"] = Value::Array(indexed);
    } else {
        delta["content"] = message["content"].clone();
    }
    let chunk = |delta: Value, finish: Value| json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut out = vec![chunk(delta, Value::Null), chunk(json!({}), finish.unwrap_or_else(|| json!("stop")))];
    if let Some(u) = usage.and_then(Usage::into_value) {
        out.push(json!({"object": "chat.completion.chunk", "choices": [], "usage": u}));
    }
    Ok(out)
}
