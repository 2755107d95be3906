//! Validation of `POST /v1/chat/completions` bodies.
//!
//! The body is read once into a borrowed tree ([`Json`]) and checked for
//! the fields the gateway relies on; a bad field is a 400 naming it, before
//! any upstream is called. The request keeps the client's bytes: an attempt
//! that sends the body unchanged sends those bytes with only `model`
//! replaced, and the body is parsed into a map (so fields Spillway does not
//! know pass through untouched) only when something needs one — a prompt
//! variant, a load profile, a native adapter, the handoff queue.
//!
//! - `check`: the checks of each field.
//! - `outgoing`: the body an attempt sends ([`Outgoing`], [`WithModel`]).
//! - this file: the request itself and the prompt's size estimate.

mod check;
mod outgoing;

pub use check::check_messages;
pub use outgoing::{Outgoing, WithModel};

use super::json::{Json, JsonView, Kind};
use super::ApiError;
use bytes::Bytes;
use check::check;
use outgoing::STREAM_FIELDS;
use serde_json::{Map, Value};
use std::ops::Range;
use std::sync::OnceLock;

/// A validated chat request.
#[derive(Debug)]
pub struct ChatRequest {
    /// The body as the client sent it.
    raw: Bytes,
    /// The body as a map, parsed on first use.
    body: OnceLock<Map<String, Value>>,
    /// Where `model`'s string (quotes included) is in `raw`, when it can
    /// be replaced in place (given once, without escapes).
    model_at: Option<Range<usize>>,
    /// The requested cascade, model ref or `auto`.
    pub model: String,
    /// `stream: true`.
    pub stream: bool,
    /// `stream_options.include_usage: true`.
    pub include_usage: bool,
    /// `n` above 1: several choices asked for.
    pub several_choices: bool,
    /// `logprobs: true`.
    pub logprobs: bool,
    /// The body names `stream` or `stream_options` (so they cannot be put
    /// in front of the client's bytes without a duplicate key).
    stream_keys: bool,
    /// The prompt's estimated size in tokens.
    pub prompt_tokens: u64,
    /// `response_format` or `tools` is given (JSON checks may apply).
    pub shapes_output: bool,
    wants_json: bool,
    /// The client key that sent it, when clients have keys: the handoff
    /// queue derives the item's owner from it ([`crate::handoff::key_id`]).
    pub caller: Option<crate::secret::Secret>,
    /// The virtual key that sent it (`keys:`): stored responses and handoff
    /// items are owned by it.
    pub key_id: Option<String>,
    /// The end user of a virtual key's request (kept with a handoff item).
    pub end_user: Option<String>,
    /// The request's id (`x-request-id`): sent upstream with every attempt
    /// and kept with a handoff item.
    pub request_id: Option<crate::telemetry::RequestId>,
    /// The request's journal (request log, traces), when they are on.
    pub journal: Option<std::sync::Arc<crate::journal::Journal>>,
    /// The end user the client named (`user`, else `safety_identifier`),
    /// at most 256 characters: the request log's `user`.
    pub user: Option<String>,
    /// The body's own `user` string: the end user a virtual key's limits
    /// count when no `x-spillway-user` header names one.
    pub body_user: Option<String>,
    /// The body's `max_completion_tokens`, else `max_tokens`, else
    /// `max_output_tokens`: what a key's admission reserves.
    pub max_tokens: Option<u64>,
    /// What the quality judge needs of the prompt (its last user
    /// message's script and length), found once here (left at its default
    /// when parsed for a gateway whose cascades judge nothing:
    /// [`Self::parse_judged`]).
    pub prompt: crate::quality::text::PromptFacts,
    /// The providers (with `load:`) on which this request's caller runs
    /// one load profile lighter than the load calls for: it is at or under
    /// its fair share of their recent traffic while another caller is
    /// above (set by the server from `tenancy::fair::load_relief`; empty —
    /// no allocation — for most requests).
    pub load_relief: Vec<String>,
}

impl Clone for ChatRequest {
    fn clone(&self) -> Self {
        let body = OnceLock::new();
        if let Some(map) = self.body.get() {
            let _ = body.set(map.clone());
        }
        Self {
            raw: self.raw.clone(),
            body,
            model_at: self.model_at.clone(),
            model: self.model.clone(),
            stream: self.stream,
            include_usage: self.include_usage,
            several_choices: self.several_choices,
            logprobs: self.logprobs,
            stream_keys: self.stream_keys,
            prompt_tokens: self.prompt_tokens,
            shapes_output: self.shapes_output,
            wants_json: self.wants_json,
            caller: self.caller.clone(),
            key_id: self.key_id.clone(),
            end_user: self.end_user.clone(),
            request_id: self.request_id.clone(),
            journal: self.journal.clone(),
            user: self.user.clone(),
            body_user: self.body_user.clone(),
            max_tokens: self.max_tokens,
            prompt: self.prompt,
            load_relief: self.load_relief.clone(),
        }
    }
}

impl ChatRequest {
    /// Parses and validates a request body.
    pub fn parse(bytes: Bytes) -> Result<Self, ApiError> {
        Self::parse_judged(bytes, true)
    }

    /// [`Self::parse`]; `judged`: whether the quality judge may read the
    /// prompt ([`Self::prompt`]) — when no cascade judges answers, the
    /// prompt's facts are not worked out (a pass over up to 2 KiB of it).
    pub fn parse_judged(bytes: Bytes, judged: bool) -> Result<Self, ApiError> {
        // One UTF-8 check of the whole body, not one per string.
        let text =
            std::str::from_utf8(&bytes).map_err(|e| ApiError::InvalidJson(format!("the body is not UTF-8: {e}")))?;
        let json = match Json::scan(text) {
            Some(json) => json,
            None => serde_json::from_str(text).map_err(|e| ApiError::InvalidJson(e.to_string()))?,
        };
        let Json::Object(entries) = &json else {
            return Err(ApiError::InvalidJson("the body must be a JSON object".into()));
        };
        let mut checked = check(&json)?;
        if judged {
            checked.prompt = check::prompt_facts(&json);
        }
        let mut models = entries.iter().filter(|(k, _)| k == "model");
        let model_at = match (models.next(), models.next()) {
            (Some((_, Json::String(std::borrow::Cow::Borrowed(m)))), None) => {
                let start = (m.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize).wrapping_sub(1);
                let range = start..start.wrapping_add(m.len() + 2);
                text.get(range.clone()).is_some_and(|q| q.get(1..=m.len()) == Some(*m)).then_some(range)
            }
            _ => None,
        };
        let prompt_tokens = estimate_prompt_tokens(&json);
        drop(json);
        Ok(Self { raw: bytes, body: OnceLock::new(), model_at, prompt_tokens, ..checked })
    }

    /// Validates an already parsed body.
    pub fn from_map(body: Map<String, Value>) -> Result<Self, ApiError> {
        let value = Value::Object(body);
        let mut checked = check(&value)?;
        checked.prompt = check::prompt_facts(&value);
        let raw = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        let prompt_tokens = estimate_prompt_tokens(&value);
        let Value::Object(map) = value else { return Err(ApiError::InvalidJson("not an object".into())) };
        Ok(Self { raw, body: OnceLock::from(map), prompt_tokens, ..checked })
    }

    /// The body as a map (parsed from the client's bytes on first use).
    pub fn body(&self) -> &Map<String, Value> {
        self.body.get_or_init(|| match serde_json::from_slice(&self.raw) {
            Ok(Value::Object(map)) => map,
            // Parsed and checked once already: cannot happen.
            _ => Map::new(),
        })
    }

    /// The client's body with `model` set to `model_id`, as bytes: the
    /// client's own bytes with one string replaced when possible.
    ///
    /// `as_stream`: also with `"stream": true` and
    /// `stream_options.include_usage` (a whole answer read as a stream),
    /// written in front of the client's fields when it named neither.
    pub fn encode_with_model(&self, model_id: &str, as_stream: bool) -> Result<Vec<u8>, serde_json::Error> {
        // Where the client's first field starts (after its `{`).
        let open = self.raw.iter().position(|b| !b.is_ascii_whitespace()).map(|at| at + 1);
        let spliced = self.model_at.as_ref().zip(open).filter(|_| !(as_stream && self.stream_keys));
        match spliced.and_then(|(at, open)| {
            Some((self.raw.get(..open)?, self.raw.get(open..at.start)?, self.raw.get(at.end..)?))
        }) {
            Some((head, before, after)) => {
                let mut out = Vec::with_capacity(self.raw.len() + model_id.len() + STREAM_FIELDS.len());
                out.extend_from_slice(head);
                if as_stream {
                    out.extend_from_slice(STREAM_FIELDS.as_bytes());
                }
                out.extend_from_slice(before);
                crate::api::lex::write_string(&mut out, model_id);
                out.extend_from_slice(after);
                Ok(out)
            }
            None => serde_json::to_vec(&WithModel { body: self.body(), model: model_id, as_stream }),
        }
    }

    /// The client asked for JSON (`json_object` or `json_schema`).
    pub fn wants_json(&self) -> bool {
        self.wants_json
    }
}

/// A cheap estimate of a prompt's size in tokens: about four characters a
/// token over the messages' text, tool calls and tools, plus a few tokens
/// of overhead per message. Good enough to skip models that clearly cannot
/// hold the prompt; the upstream's own context error covers the rest.
pub fn estimate_prompt_tokens<J: JsonView>(body: &J) -> u64 {
    let Some(messages) = body.get("messages").and_then(J::as_array) else {
        return 0;
    };
    let mut chars = 0usize;
    for m in messages {
        chars += match m.get("content").map(J::kind) {
            Some(Kind::String(s)) => s.len(),
            Some(Kind::Array(parts)) => {
                parts.iter().filter_map(|p| p.get("text").and_then(J::as_str)).map(str::len).sum()
            }
            _ => 0,
        };
        if let Some(calls) = m.get("tool_calls") {
            chars += calls.encoded_len();
        }
    }
    let tools = body.get("tools").map(J::encoded_len).unwrap_or(0);
    super::tokens::estimate_tokens(chars + tools) + 4 * messages.len() as u64
}

#[cfg(test)]
mod tests;
