//! Validation of `POST /v1/chat/completions` bodies.
//!
//! The body is read once into a borrowed tree ([`Json`]) and checked for
//! the fields the gateway relies on; a bad field is a 400 naming it, before
//! any upstream is called. The request keeps the client's bytes: an attempt
//! that sends the body unchanged sends those bytes with only `model`
//! replaced, and the body is parsed into a map (so fields Spillway does not
//! know pass through untouched) only when something needs one — a prompt
//! variant, a load profile, a native adapter, the handoff queue.

use super::json::{Json, JsonView, Kind};
use super::ApiError;
use bytes::Bytes;
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
    /// What the quality judge needs of the prompt (its last user
    /// message's script and length), found once here.
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
            prompt: self.prompt,
            load_relief: self.load_relief.clone(),
        }
    }
}

fn invalid(param: impl Into<String>, message: impl Into<String>) -> ApiError {
    ApiError::InvalidField { param: param.into(), message: message.into() }
}

const ROLES: [&str; 6] = ["system", "developer", "user", "assistant", "tool", "function"];

impl ChatRequest {
    /// Parses and validates a request body.
    pub fn parse(bytes: Bytes) -> Result<Self, ApiError> {
        // One UTF-8 check of the whole body, not one per string.
        let text =
            std::str::from_utf8(&bytes).map_err(|e| ApiError::InvalidJson(format!("the body is not UTF-8: {e}")))?;
        let json: Json<'_> = serde_json::from_str(text).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
        let Json::Object(entries) = &json else {
            return Err(ApiError::InvalidJson("the body must be a JSON object".into()));
        };
        let checked = check(&json)?;
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
        let checked = check(&value)?;
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
                serde_json::to_writer(&mut out, model_id)?;
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

/// What a whole request read as a stream adds (`cascade::whole`), as the
/// first fields of its body.
const STREAM_FIELDS: &str = r#""stream":true,"stream_options":{"include_usage":true},"#;

/// A request body with `model` replaced, serialized without copying it.
pub struct WithModel<'a> {
    /// The body.
    pub body: &'a Map<String, Value>,
    /// The model id to send.
    pub model: &'a str,
    /// With `"stream": true` and `stream_options.include_usage`, in place
    /// of the body's own.
    pub as_stream: bool,
}

impl serde::Serialize for WithModel<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let replaced = |k: &str| k == "model" || (self.as_stream && matches!(k, "stream" | "stream_options"));
        let others = self.body.iter().filter(|(k, _)| !replaced(k));
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        if self.as_stream {
            map.serialize_entry("stream", &true)?;
            map.serialize_entry("stream_options", &StreamOptions { include_usage: true })?;
        }
        for (k, v) in others {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[derive(serde::Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The body one attempt sends: the client's own, or a rewritten copy (a
/// prompt variant, a load profile, a JSON instruction). Reads as a map;
/// copied on the first write.
#[derive(Debug)]
pub struct Outgoing<'a> {
    client: &'a ChatRequest,
    rewritten: Option<Map<String, Value>>,
    /// Sent as a stream with a usage chunk ([`Outgoing::as_stream`]).
    as_stream: bool,
}

impl<'a> Outgoing<'a> {
    /// The client's body, unchanged.
    pub fn new(client: &'a ChatRequest) -> Self {
        Self { client, rewritten: None, as_stream: false }
    }

    /// Asks for the answer as a stream with a usage chunk (a whole answer
    /// read as a stream, `cascade::whole`): `"stream": true` and
    /// `stream_options.include_usage` go into the encoded and the owned
    /// body, without copying the client's (the map read through `Deref`
    /// does not show them).
    pub fn as_stream(&mut self) {
        self.as_stream = true;
    }

    /// The body to change (copied from the client's on first use).
    pub fn to_mut(&mut self) -> &mut Map<String, Value> {
        let client = self.client;
        self.rewritten.get_or_insert_with(|| client.body().clone())
    }

    /// The body, owned.
    pub fn into_owned(self) -> Map<String, Value> {
        let mut body = self.rewritten.unwrap_or_else(|| self.client.body().clone());
        if self.as_stream {
            body.insert("stream".into(), Value::Bool(true));
            body.insert("stream_options".into(), serde_json::json!({"include_usage": true}));
        }
        body
    }

    /// The body as bytes with `model` set to `model_id`.
    pub fn encode_with_model(&self, model_id: &str) -> Result<Vec<u8>, serde_json::Error> {
        match &self.rewritten {
            None => self.client.encode_with_model(model_id, self.as_stream),
            Some(body) => serde_json::to_vec(&WithModel { body, model: model_id, as_stream: self.as_stream }),
        }
    }
}

impl std::ops::Deref for Outgoing<'_> {
    type Target = Map<String, Value>;
    fn deref(&self) -> &Self::Target {
        self.rewritten.as_ref().unwrap_or_else(|| self.client.body())
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

/// Checks a body; what the request keeps of it.
fn check<J: JsonView>(body: &J) -> Result<ChatRequest, ApiError> {
    let model = match body.get("model").map(J::kind) {
        // A model ref names a cascade or an upstream model and ends up in
        // logs, headers and metric labels: control characters (a newline
        // above all) have no place in one.
        Some(Kind::String(m)) if m.chars().any(char::is_control) => {
            return Err(invalid("model", "`model` must not contain control characters"))
        }
        Some(Kind::String(m)) if !m.is_empty() => m.to_owned(),
        Some(Kind::String(_)) => return Err(invalid("model", "`model` must not be empty")),
        Some(_) => return Err(invalid("model", "`model` must be a string")),
        None => return Err(invalid("model", "missing required field `model`")),
    };
    match body.get("messages").map(J::kind) {
        Some(Kind::Array(msgs)) if !msgs.is_empty() => {
            for (i, m) in msgs.iter().enumerate() {
                check_message(i, m)?;
            }
        }
        Some(Kind::Array(_)) => return Err(invalid("messages", "`messages` must not be empty")),
        Some(_) => return Err(invalid("messages", "`messages` must be an array")),
        None => return Err(invalid("messages", "missing required field `messages`")),
    }
    let stream = match body.get("stream").map(J::kind) {
        None | Some(Kind::Null) => false,
        Some(Kind::Bool(b)) => b,
        Some(_) => return Err(invalid("stream", "`stream` must be a boolean")),
    };
    let include_usage = match body.get("stream_options").map(J::kind) {
        None | Some(Kind::Null) => false,
        Some(Kind::Object) => match body.get("stream_options").and_then(|o| o.get("include_usage")).map(J::kind) {
            None | Some(Kind::Null) => false,
            Some(Kind::Bool(b)) => b,
            Some(_) => return Err(invalid("stream_options.include_usage", "must be a boolean")),
        },
        Some(_) => return Err(invalid("stream_options", "`stream_options` must be an object")),
    };
    for field in ["max_tokens", "max_completion_tokens", "n"] {
        match body.get(field) {
            None => {}
            Some(v) if v.is_null() || v.as_u64().is_some_and(|n| n >= 1) => {}
            Some(_) => return Err(invalid(field, format!("`{field}` must be a positive integer"))),
        }
    }
    for (field, lo, hi) in [
        ("temperature", 0.0, 2.0),
        ("top_p", 0.0, 1.0),
        ("presence_penalty", -2.0, 2.0),
        ("frequency_penalty", -2.0, 2.0),
    ] {
        match body.get(field) {
            None => {}
            Some(v) if v.is_null() || v.as_f64().is_some_and(|v| (lo..=hi).contains(&v)) => {}
            Some(_) => return Err(invalid(field, format!("`{field}` must be a number between {lo} and {hi}"))),
        }
    }
    let several_choices = body.get("n").and_then(J::as_u64).is_some_and(|n| n > 1);
    let logprobs = matches!(body.get("logprobs").map(J::kind), Some(Kind::Bool(true)));
    let stream_keys = body.get("stream").is_some() || body.get("stream_options").is_some();
    let has_tools = check_tools(body)?;
    let wants_json = check_response_format(body)?;
    let shapes_output = has_tools || body.get("response_format").is_some_and(|r| !r.is_null());
    let user = ["user", "safety_identifier"]
        .iter()
        .find_map(|k| body.get(k).and_then(J::as_str))
        .map(|u| u.chars().take(256).collect());
    Ok(ChatRequest {
        raw: Bytes::new(),
        body: OnceLock::new(),
        model_at: None,
        model,
        stream,
        include_usage,
        several_choices,
        logprobs,
        stream_keys,
        prompt_tokens: 0,
        shapes_output,
        wants_json,
        caller: None,
        key_id: None,
        end_user: None,
        request_id: None,
        journal: None,
        user,
        prompt: prompt_facts(body),
        load_relief: Vec::new(),
    })
}

/// The quality judge's facts of the last user message (its first text).
fn prompt_facts<J: JsonView>(body: &J) -> crate::quality::text::PromptFacts {
    let messages = body.get("messages").and_then(J::as_array).unwrap_or_default();
    let Some(last) = messages.iter().rev().find(|m| m.get("role").and_then(J::as_str) == Some("user")) else {
        return crate::quality::text::PromptFacts::default();
    };
    let text = match last.get("content").map(J::kind) {
        Some(Kind::String(s)) => s,
        Some(Kind::Array(parts)) => parts.iter().find_map(|p| p.get("text").and_then(J::as_str)).unwrap_or_default(),
        _ => "",
    };
    crate::quality::text::PromptFacts::of(text)
}

/// Checks a message list as a client's `messages` is checked: a prompt
/// template's output goes through this before it replaces the client's.
pub fn check_messages(messages: &[Value]) -> Result<(), ApiError> {
    if messages.is_empty() {
        return Err(invalid("messages", "`messages` must not be empty"));
    }
    messages.iter().enumerate().try_for_each(|(i, m)| check_message(i, m))
}

fn check_message<J: JsonView>(i: usize, m: &J) -> Result<(), ApiError> {
    let p = |f: &str| format!("messages[{i}].{f}");
    if !matches!(m.kind(), Kind::Object) {
        return Err(invalid(format!("messages[{i}]"), "each message must be an object"));
    }
    let role = match m.get("role").map(J::kind) {
        Some(Kind::String(r)) if ROLES.contains(&r) => r,
        Some(Kind::String(r)) => {
            return Err(invalid(p("role"), format!("unknown role `{r}`: expected one of {}", ROLES.join(", "))))
        }
        Some(_) => return Err(invalid(p("role"), "`role` must be a string")),
        None => return Err(invalid(p("role"), "missing required field `role`")),
    };
    match m.get("content").map(J::kind) {
        Some(Kind::String(_)) => {}
        Some(Kind::Array(parts)) => {
            for (j, part) in parts.iter().enumerate() {
                if !part.get("type").is_some_and(J::is_string) {
                    return Err(invalid(
                        format!("messages[{i}].content[{j}].type"),
                        "each content part needs a string `type`",
                    ));
                }
            }
        }
        None | Some(Kind::Null) if role == "assistant" => {}
        None => return Err(invalid(p("content"), "missing required field `content`")),
        Some(_) => return Err(invalid(p("content"), "`content` must be a string or an array of parts")),
    }
    if role == "tool" && !m.get("tool_call_id").is_some_and(J::is_string) {
        return Err(invalid(p("tool_call_id"), "a `tool` message needs a string `tool_call_id`"));
    }
    if let Some(calls) = m.get("tool_calls") {
        let Some(calls) = calls.as_array() else {
            return Err(invalid(p("tool_calls"), "`tool_calls` must be an array"));
        };
        for (j, c) in calls.iter().enumerate() {
            let name_ok = c.get("function").and_then(|f| f.get("name")).is_some_and(J::is_string);
            if !c.get("id").is_some_and(J::is_string) || !name_ok {
                return Err(invalid(
                    format!("messages[{i}].tool_calls[{j}]"),
                    "a tool call needs a string `id` and `function.name`",
                ));
            }
        }
    }
    Ok(())
}

/// Checks `tools` and `tool_choice`; whether any tool is given.
fn check_tools<J: JsonView>(body: &J) -> Result<bool, ApiError> {
    let mut any = false;
    match body.get("tools").map(J::kind) {
        None | Some(Kind::Null) => {}
        Some(Kind::Array(tools)) => {
            for (i, t) in tools.iter().enumerate() {
                any = true;
                let name = t.get("function").and_then(|f| f.get("name")).and_then(J::as_str);
                if t.get("type").and_then(J::as_str) != Some("function") {
                    return Err(invalid(format!("tools[{i}].type"), "only `function` tools are supported"));
                }
                match name {
                    Some(n)
                        if !n.is_empty()
                            && n.len() <= 64
                            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') => {}
                    _ => {
                        return Err(invalid(
                            format!("tools[{i}].function.name"),
                            "a function name must match ^[a-zA-Z0-9_-]{1,64}$",
                        ))
                    }
                }
            }
        }
        Some(_) => return Err(invalid("tools", "`tools` must be an array")),
    }
    match body.get("tool_choice").map(J::kind) {
        None | Some(Kind::Null) | Some(Kind::Object) => Ok(any),
        Some(Kind::String(s)) if ["none", "auto", "required"].contains(&s) => Ok(any),
        Some(_) => Err(invalid("tool_choice", "`tool_choice` must be none, auto, required or an object")),
    }
}

/// Checks `response_format`; whether it asks for JSON.
fn check_response_format<J: JsonView>(body: &J) -> Result<bool, ApiError> {
    let Some(rf) = body.get("response_format").filter(|rf| !rf.is_null()) else {
        return Ok(false);
    };
    match rf.get("type").and_then(J::as_str) {
        Some("text") => Ok(false),
        Some("json_object") => Ok(true),
        Some("json_schema") => {
            let js = rf.get("json_schema");
            if !js.and_then(|j| j.get("name")).is_some_and(J::is_string) {
                return Err(invalid("response_format.json_schema.name", "`json_schema.name` is required"));
            }
            match js.and_then(|j| j.get("schema")).map(J::kind) {
                None | Some(Kind::Object) | Some(Kind::Bool(_)) => Ok(true),
                Some(_) => Err(invalid("response_format.json_schema.schema", "`schema` must be a JSON Schema object")),
            }
        }
        _ => Err(invalid("response_format.type", "expected `text`, `json_object` or `json_schema`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(body: &str) -> String {
        match ChatRequest::parse(Bytes::copy_from_slice(body.as_bytes())) {
            Err(ApiError::InvalidField { param, .. }) => param,
            Err(ApiError::InvalidJson(_)) => "<json>".into(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn names_the_bad_field() {
        assert_eq!(param("{"), "<json>");
        assert_eq!(param("[]"), "<json>");
        assert_eq!(param(r#"{"messages":[{"role":"user","content":"hi"}]}"#), "model");
        assert_eq!(param(r#"{"model":"a"}"#), "messages");
        assert_eq!(param(r#"{"model":"p/x\"} 1\nforged 1","messages":[{"role":"user","content":"x"}]}"#), "model");
        assert_eq!(param(r#"{"model":"p/\u0000","messages":[{"role":"user","content":"x"}]}"#), "model");
        assert_eq!(param(r#"{"model":"p/\u007f","messages":[{"role":"user","content":"x"}]}"#), "model");
        assert_eq!(param(r#"{"model":"a","messages":"hi"}"#), "messages");
        assert_eq!(param(r#"{"model":"a","messages":[]}"#), "messages");
        assert_eq!(param(r#"{"model":"a","messages":[{"role":"bot","content":"x"}]}"#), "messages[0].role");
        assert_eq!(param(r#"{"model":"a","messages":[{"role":"user","content":5}]}"#), "messages[0].content");
        assert_eq!(param(r#"{"model":"a","messages":[{"role":"tool","content":"x"}]}"#), "messages[0].tool_call_id");
        assert_eq!(param(r#"{"model":"a","messages":[{"role":"user","content":"x"}],"stream":"yes"}"#), "stream");
        assert_eq!(param(r#"{"model":"a","messages":[{"role":"user","content":"x"}],"max_tokens":0}"#), "max_tokens");
        assert_eq!(param(r#"{"model":"a","messages":[{"role":"user","content":"x"}],"temperature":3}"#), "temperature");
        assert_eq!(
            param(
                r#"{"model":"a","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a b"}}]}"#
            ),
            "tools[0].function.name"
        );
        assert_eq!(
            param(r#"{"model":"a","messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}}"#),
            "response_format.type"
        );
    }

    #[test]
    fn accepts_a_full_request() {
        let r = ChatRequest::parse(Bytes::from_static(
            br#"{"model":"chat","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"1"}],"response_format":{"type":"json_object"},"x_extra":1}"#,
        ))
        .unwrap();
        assert!(r.stream && r.include_usage && r.wants_json());
        assert_eq!(r.model, "chat");
        assert_eq!(r.body()["x_extra"], 1);
    }

    #[test]
    fn an_unchanged_body_is_sent_as_the_client_wrote_it_with_model_replaced() {
        let body = br#"{ "messages": [{"role":"user","content":"caf\u00e9"}],
            "model" : "chat", "x_vendor": {"keep": [1, 2.50]} }"#;
        let r = ChatRequest::parse(Bytes::from_static(body)).unwrap();
        assert!(r.body.get().is_none(), "no map was built");
        let sent = r.encode_with_model("gpt-\"4\"", false).unwrap();
        let expected = String::from_utf8_lossy(body).replace(r#""chat""#, r#""gpt-\"4\"""#);
        assert_eq!(String::from_utf8(sent).unwrap(), expected);
        assert!(r.body.get().is_none(), "still no map");
    }

    #[test]
    fn a_model_that_cannot_be_replaced_in_place_is_reencoded() {
        for body in [
            &br#"{"model":"ch\u0061t","messages":[{"role":"user","content":"x"}]}"#[..],
            br#"{"model":"old","messages":[{"role":"user","content":"x"}],"model":"chat"}"#,
        ] {
            let r = ChatRequest::parse(Bytes::copy_from_slice(body)).unwrap();
            assert_eq!(r.model, "chat");
            let sent: Value = serde_json::from_slice(&r.encode_with_model("m", false).unwrap()).unwrap();
            assert_eq!(sent["model"], "m");
            assert_eq!(sent["messages"][0]["content"], "x");
        }
    }

    #[test]
    fn a_whole_request_read_as_a_stream_asks_for_a_stream_with_usage_without_a_copy() {
        let stream_fields = serde_json::json!({"stream": true, "stream_options": {"include_usage": true}});
        let body = br#" {"model":"chat","messages":[{"role":"user","content":"x"}],"n":1}"#;
        let r = ChatRequest::parse(Bytes::from_static(body)).unwrap();
        assert!(!r.several_choices && !r.logprobs);
        let mut out = Outgoing::new(&r);
        out.as_stream();
        let sent = out.encode_with_model("m").unwrap();
        assert!(r.body.get().is_none(), "no map was built");
        let text = String::from_utf8(sent).unwrap();
        assert_eq!(
            text,
            r#" {"stream":true,"stream_options":{"include_usage":true},"model":"m","messages":[{"role":"user","content":"x"}],"n":1}"#
        );
        // The client's own `stream: false` and `stream_options` are replaced,
        // not duplicated; so is a rewritten body's; the owned body has them.
        for body in [
            &br#"{"model":"c","stream":false,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"x"}]}"#[..],
            br#"{"model":"c","stream":null,"messages":[{"role":"user","content":"x"}]}"#,
        ] {
            let r = ChatRequest::parse(Bytes::copy_from_slice(body)).unwrap();
            let mut out = Outgoing::new(&r);
            out.as_stream();
            let plain: Value = serde_json::from_slice(&out.encode_with_model("m").unwrap()).unwrap();
            out.to_mut().insert("max_tokens".into(), 5.into());
            let rewritten = out.encode_with_model("m").unwrap();
            for sent in [plain, serde_json::from_slice(&rewritten).unwrap()] {
                assert_eq!(sent["stream"], stream_fields["stream"]);
                assert_eq!(sent["stream_options"], stream_fields["stream_options"]);
                assert_eq!(sent["model"], "m");
            }
            let text = String::from_utf8(rewritten).unwrap();
            assert_eq!(text.matches("\"stream\"").count(), 1, "{text}");
            let owned = out.into_owned();
            assert_eq!(owned["stream"], true);
            assert_eq!(owned["stream_options"]["include_usage"], true);
        }
        let r = ChatRequest::parse(Bytes::from_static(
            br#"{"model":"c","messages":[{"role":"user","content":"x"}],"n":2,"logprobs":true}"#,
        ))
        .unwrap();
        assert!(r.several_choices && r.logprobs);
    }

    #[test]
    fn rewriting_copies_the_body_once() {
        let r = ChatRequest::parse(Bytes::from_static(br#"{"model":"c","messages":[{"role":"user","content":"x"}]}"#))
            .unwrap();
        let mut out = Outgoing::new(&r);
        assert_eq!(out["messages"][0]["content"], "x");
        out.to_mut().insert("max_tokens".into(), 5.into());
        let sent: Value = serde_json::from_slice(&out.encode_with_model("m").unwrap()).unwrap();
        assert_eq!((sent["model"].as_str(), sent["max_tokens"].as_u64()), (Some("m"), Some(5)));
        assert!(r.body().get("max_tokens").is_none(), "the client's body is untouched");
    }

    #[test]
    fn prompt_estimate_is_the_same_on_both_trees() {
        let text = r#"{"model":"c","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hello there"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}"#;
        let json: Json<'_> = serde_json::from_str(text).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(estimate_prompt_tokens(&json), estimate_prompt_tokens(&value));
        assert!(estimate_prompt_tokens(&value) > 12);
        let r = ChatRequest::parse(Bytes::copy_from_slice(text.as_bytes())).unwrap();
        assert_eq!(r.prompt_tokens, estimate_prompt_tokens(&value));
        assert!(r.shapes_output && !r.wants_json());
    }
}
