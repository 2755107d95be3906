//! Applying the normalization layer (SPEC §7) to an attempt's answer.
//!
//! When the request asks for JSON (`response_format` `json_object` or
//! `json_schema`), the answer's content is extracted, repaired, renamed
//! toward the schema and validated; the client receives the clean JSON.
//! Tool-call `arguments` are checked the same way against each tool's
//! `parameters`. An answer that stays invalid is an `invalid_output`
//! attempt failure: the next model is tried, the breaker is not touched.
//!
//! A streamed JSON answer is validated first, then streamed (SPEC §7): the
//! upstream stream is read to its end and the client gets the clean JSON as
//! a short stream. Streams without `response_format` are never buffered.

use super::plan::Target;
use crate::api::completion::{Completion, RawCompletion, Tokens};
use crate::api::{ApiError, ChatRequest};
use crate::metrics::NormalizeLabels;
use crate::normalize::{self, Expected, NormalizeResult, SchemaCache};
use crate::outcome::{AttemptError, Failure};
use crate::providers::{ChunkStream, StreamItem};
use crate::quality::{Signal, Signals};
use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::time::{timeout_at, Instant};

/// What a request expects of its answers' JSON.
#[derive(Debug, Default)]
pub struct JsonPlan {
    /// The content must be JSON (`response_format`).
    pub content: Option<Expected>,
    /// Tool name → what its arguments must be (shared with the tickets
    /// that judge a streamed answer's tool calls at its end).
    pub tools: Arc<HashMap<String, Expected>>,
    /// The instruction added for models without native `response_format`.
    pub instruction: Option<String>,
    /// The same in Russian, used after a Russian system prompt.
    pub instruction_ru: Option<String>,
}

impl JsonPlan {
    /// Reads the request; `None` when it asks for no JSON at all. A
    /// malformed schema is the client's error (400).
    pub fn of(req: &ChatRequest, cache: &SchemaCache) -> Result<Option<Self>, ApiError> {
        let bad = |e: normalize::ResponseFormatError| ApiError::InvalidField {
            param: "response_format".into(),
            message: format!("invalid response_format: {e}"),
        };
        if !req.shapes_output {
            return Ok(None);
        }
        let rf = req.body().get("response_format").filter(|v| !v.is_null());
        let content = match rf {
            Some(rf) => normalize::expected_from_response_format(rf, cache).map_err(bad)?,
            None => None,
        };
        let mut tools = HashMap::new();
        for tool in req.body().get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
            let Some(name) = tool.get("function").and_then(|f| f.get("name")).and_then(Value::as_str) else {
                continue;
            };
            let expected = normalize::expected_from_tool(tool, cache).map_err(|e| ApiError::InvalidField {
                param: "tools".into(),
                message: format!("invalid parameters schema of tool `{name}`: {e}"),
            })?;
            tools.insert(name.to_string(), expected);
        }
        if content.is_none() && tools.is_empty() {
            return Ok(None);
        }
        let instruction = content.as_ref().and(rf).and_then(normalize::schema_instruction);
        let instruction_ru =
            content.as_ref().and(rf).and_then(|rf| normalize::schema_instruction_in(rf, normalize::Lang::Ru));
        Ok(Some(Self { content, tools: Arc::new(tools), instruction, instruction_ru }))
    }

    /// Streams must be read whole before they are forwarded.
    pub fn buffers_streams(&self) -> bool {
        self.content.is_some()
    }
}

/// For a provider without native `response_format`: drop the field (it may
/// be rejected) and put the schema into the prompt as an instruction.
pub fn instruct(body: &mut Map<String, Value>, plan: &JsonPlan) {
    let Some(instruction) = &plan.instruction else {
        return;
    };
    body.remove("response_format");
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return;
    };
    let first_system =
        messages.iter_mut().find(|m| matches!(m.get("role").and_then(Value::as_str), Some("system" | "developer")));
    match first_system.and_then(|m| m.get_mut("content")) {
        Some(Value::String(s)) => {
            // In the system prompt's language when that is Russian.
            let text = match &plan.instruction_ru {
                Some(ru) if normalize::is_russian(s) => ru,
                _ => instruction,
            };
            s.push_str("\n\n");
            s.push_str(text);
        }
        _ => messages.insert(0, json!({"role": "system", "content": instruction})),
    }
}

fn count(target: &Target, result: NormalizeResult) {
    target.metrics.normalized(result.metric_label());
}

/// Normalizes a whole completion in place, every choice (`n` > 1 asks for
/// several, and each must keep the promise); `Err` is an `invalid_output`
/// failure.
/// What the checks found for the quality judge goes into `signals`
/// (repaired, invalid content, invalid tool arguments).
pub fn check_completion(
    v: &mut Value,
    plan: &JsonPlan,
    target: &Target,
    signals: &mut Signals,
) -> Result<(), AttemptError> {
    let Some(choices) = v.get_mut("choices").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    for message in choices.iter_mut().filter_map(|c| c.get_mut("message")) {
        check_message(message, plan, target, signals)?;
    }
    Ok(())
}

fn check_message(
    message: &mut Value,
    plan: &JsonPlan,
    target: &Target,
    signals: &mut Signals,
) -> Result<(), AttemptError> {
    let has_calls = message.get("tool_calls").and_then(Value::as_array).is_some_and(|c| !c.is_empty());
    if let (Some(expected), false) = (&plan.content, has_calls) {
        let text = message.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
        match normalize::normalize(&text, expected) {
            Ok(n) => {
                count(target, n.result);
                if n.result == NormalizeResult::Repaired {
                    signals.add(Signal::JsonRepaired);
                }
                message["content"] = Value::String(n.json);
            }
            Err(e) => {
                count(target, NormalizeResult::Invalid);
                signals.add(Signal::JsonInvalid);
                return Err(AttemptError::new(Failure::InvalidOutput, format!("content: {e}")));
            }
        }
    }
    if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for call in calls {
            let Some(f) = call.get_mut("function") else { continue };
            let name = f.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            let Some(expected) = plan.tools.get(&name) else {
                if !plan.tools.is_empty() {
                    signals.add(Signal::ToolArgsInvalid);
                    return Err(AttemptError::new(Failure::InvalidOutput, format!("call of unknown tool `{name}`")));
                }
                continue;
            };
            let args = f.get("arguments").and_then(Value::as_str).unwrap_or_default();
            // A tool without parameters may be called with no arguments at all.
            let args = if args.trim().is_empty() { "{}" } else { args };
            match normalize::normalize(args, expected) {
                Ok(n) => {
                    count(target, n.result);
                    if n.result == NormalizeResult::Repaired {
                        signals.add(Signal::JsonRepaired);
                    }
                    f["arguments"] = Value::String(n.json);
                }
                Err(e) => {
                    count(target, NormalizeResult::Invalid);
                    signals.add(Signal::ToolArgsInvalid);
                    return Err(AttemptError::new(Failure::InvalidOutput, format!("arguments of `{name}`: {e}")));
                }
            }
        }
    }
    Ok(())
}

/// Judges the tool calls a stream sent as they were (name, arguments),
/// at its end: a stream without JSON content is forwarded, not buffered,
/// so its calls reached the client unchecked — it cannot be taken back,
/// but the model's quality window learns of it. A call of an unknown
/// tool, or arguments that are not valid for the tool's schema as sent
/// (needing repair counts: the client got them unrepaired), is
/// `tool_args_invalid`.
pub fn judge_streamed_calls(calls: &[(String, String)], tools: &HashMap<String, Expected>) -> Signals {
    let invalid = calls.iter().any(|(name, args)| match tools.get(name) {
        None => !tools.is_empty(),
        Some(expected) => {
            // A tool without parameters may be called with no arguments at all.
            let args = if args.trim().is_empty() { "{}" } else { args };
            !matches!(normalize::normalize(args, expected), Ok(n) if n.result == NormalizeResult::Valid)
        }
    });
    if invalid {
        Signals::NONE.with(Signal::ToolArgsInvalid)
    } else {
        Signals::NONE
    }
}

/// A streamed answer put back together.
#[derive(Default)]
pub(super) struct Assembled {
    content: String,
    refusal: Option<String>,
    /// id, name, arguments — by tool-call index.
    calls: Vec<(String, String, String)>,
    pub(super) finish: Option<Value>,
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
    pub(super) fn into_completion(self) -> Completion {
        let finish = match &self.finish {
            None => Some("stop"),
            Some(f) => f.as_str(),
        };
        if let Some(finish) = finish.filter(|_| self.calls.is_empty()) {
            // The checked chunk's usage bytes as they are; a translated
            // chunk's tree written out.
            let usage = match &self.usage {
                Some(Usage::Raw(json, tokens)) => Some((std::borrow::Cow::Borrowed(json.as_slice()), *tokens)),
                Some(Usage::Tree(v)) if v.is_object() => {
                    serde_json::to_vec(v).ok().map(|json| (std::borrow::Cow::Owned(json), Tokens::of(v)))
                }
                Some(Usage::Tree(_)) | None => None,
            };
            let usage = usage.as_ref().map(|(json, tokens)| (json.as_ref(), *tokens));
            if let Some(raw) = RawCompletion::assembled(&self.content, self.refusal.as_deref(), finish, usage) {
                return Completion::Raw(raw);
            }
        }
        let Self { content, refusal, calls, finish, usage } = self;
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
    pub(super) fn absorb_item(&mut self, item: StreamItem) {
        match item {
            StreamItem::Raw(r) if !r.has_refusal() && !r.other_choice() => {
                self.content.push_str(r.content());
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

/// The per-model normalization counts for `/admin/state`: valid, repaired, invalid.
pub fn counts(metrics: &crate::metrics::Metrics, provider: &str, model: &str) -> [u64; 3] {
    crate::metrics::NORMALIZE_RESULTS.map(|result| {
        metrics
            .normalize
            .get_or_create(&NormalizeLabels { provider: provider.into(), model: model.into(), result })
            .get()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> JsonPlan {
        let rf = json!({"type": "json_object"});
        JsonPlan {
            instruction: normalize::schema_instruction(&rf),
            instruction_ru: normalize::schema_instruction_in(&rf, normalize::Lang::Ru),
            ..JsonPlan::default()
        }
    }

    fn system_after(system: &str) -> String {
        let mut body = json!({"messages": [{"role": "system", "content": system}, {"role": "user", "content": "x"}],
                              "response_format": {"type": "json_object"}});
        let Some(map) = body.as_object_mut() else { return String::new() };
        instruct(map, &plan());
        assert!(body.get("response_format").is_none());
        body["messages"][0]["content"].as_str().unwrap_or_default().to_string()
    }

    #[test]
    fn the_instruction_follows_the_system_prompts_language() {
        let ru = system_after("Ты — ассистент банка. Отвечай вежливо.");
        assert!(ru.starts_with("Ты — ассистент банка."), "{ru}");
        assert!(ru.contains(normalize::OBJECT_INSTRUCTION_START_RU), "{ru}");
        let en = system_after("You are a bank assistant.");
        assert!(en.contains(normalize::OBJECT_INSTRUCTION_START), "{en}");
        assert!(!en.contains(normalize::OBJECT_INSTRUCTION_START_RU));
    }

    fn raw(data: &str) -> StreamItem {
        StreamItem::Raw(crate::api::completion::RawChunk::check(data).expect("a checked chunk"))
    }

    fn assembled(items: Vec<StreamItem>) -> Completion {
        let mut acc = Assembled::default();
        items.into_iter().for_each(|i| acc.absorb_item(i));
        acc.into_completion()
    }

    #[test]
    fn checked_chunks_are_assembled_as_bytes_with_the_upstreams_usage() {
        let usage =
            r#"{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":2}}"#;
        let c = assembled(vec![
            raw(
                r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
            ),
            raw(
                r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi \"you\""},"finish_reason":null}]}"#,
            ),
            raw(
                r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"length"}]}"#,
            ),
            raw(&format!(
                r#"{{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage" : {usage}}}"#
            )),
        ]);
        let Completion::Raw(raw) = &c else { panic!("not the bytes path: {c:?}") };
        assert!(raw.has_answer());
        assert_eq!(c.tokens(), Some(Tokens { input: 5, output: 3 }));
        let v: Value = serde_json::from_slice(&c.to_bytes()).unwrap();
        assert_eq!(v["choices"][0]["message"], json!({"role": "assistant", "content": "Hi \"you\"!", "refusal": null}));
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        assert_eq!(v["usage"], serde_json::from_str::<Value>(usage).unwrap(), "the usage object as sent");
    }

    #[test]
    fn refusals_and_tool_calls_are_assembled_from_trees() {
        let c = assembled(vec![raw(
            r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"refusal":"I can't"},"finish_reason":"stop"}]}"#,
        )]);
        assert!(c.has_answer());
        let v: Value = serde_json::from_slice(&c.to_bytes()).unwrap();
        assert_eq!(v["choices"][0]["message"]["refusal"], "I can't");
        let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]});
        let c = assembled(vec![StreamItem::Chunk(call)]);
        let Completion::Value(v) = c else { panic!("tool calls take the tree") };
        assert_eq!(v["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "f");
        assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    }
}
