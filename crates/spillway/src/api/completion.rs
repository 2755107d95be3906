//! Answers on their way from an upstream to a client: whole
//! `chat.completion`s and `chat.completion.chunk`s of a stream.
//!
//! Most answers of OpenAI-compatible upstreams already validate against
//! OpenAI's schema: only `id`, `created` and `model` change on the way
//! through. For those, [`RawCompletion::check`] (and [`RawChunk::check`],
//! per stream event) reads the body once without building a JSON tree
//! (borrowed strings, untouched values kept as their bytes) and the answer
//! is written out as the upstream's bytes behind the gateway's own stamp.
//! Anything else — a field to fill in, tool calls, escaped or repeated
//! keys, an in-band error — takes the general path: a [`serde_json::Value`]
//! completed by [`super::wire`]. Both paths give the client the same fields
//! and values.

use super::wire::{self, Stamp};
use bytes::Bytes;
use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// Token counts of an answer's `usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// `prompt_tokens`.
    pub input: u64,
    /// `completion_tokens`.
    pub output: u64,
}

impl Tokens {
    /// Reads a `usage` object; missing or non-integer counts are 0.
    pub fn of(usage: &Value) -> Self {
        let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        Self { input: n("prompt_tokens"), output: n("completion_tokens") }
    }
}

/// A whole answer: checked upstream bytes, or a parsed tree.
#[derive(Debug, Clone)]
pub enum Completion {
    /// A parsed body (native adapters, answers that needed completing,
    /// answers whose JSON content was checked).
    Value(Value),
    /// An upstream body that needs nothing but the stamp.
    Raw(RawCompletion),
}

impl From<Value> for Completion {
    fn from(v: Value) -> Self {
        Self::Value(v)
    }
}

impl Completion {
    /// Stamps the gateway's id, `created` and `model` and completes what
    /// the schema requires; `Err` when the body is not a completion.
    pub fn stamp(&mut self, stamp: Stamp) -> Result<(), &'static str> {
        match self {
            Self::Value(v) => wire::completion(v, &stamp),
            Self::Raw(r) => {
                r.stamp = Some(stamp);
                Ok(())
            }
        }
    }

    /// The answer carries some content, a refusal or a tool call.
    pub fn has_answer(&self) -> bool {
        match self {
            Self::Value(v) => wire::completion_has_answer(v),
            Self::Raw(r) => r.has_answer,
        }
    }

    /// The counts of its `usage`, when it has one.
    pub fn tokens(&self) -> Option<Tokens> {
        match self {
            Self::Value(v) => v.get("usage").map(Tokens::of),
            Self::Raw(r) => r.usage,
        }
    }

    /// `usage.completion_tokens`; without usage, an estimate of four
    /// characters a token over the choices' text.
    pub fn completion_tokens(&self) -> u64 {
        match self {
            Self::Value(v) => crate::load::tokens::completion_tokens(v),
            Self::Raw(r) => match r.usage {
                Some(t) if r.usage_counted => t.output,
                _ => r.content_chars.div_ceil(4) as u64,
            },
        }
    }

    /// The answer as a tree (for checks that need one; stamped if it was).
    pub fn into_value(self) -> Result<Value, &'static str> {
        match self {
            Self::Value(v) => Ok(v),
            Self::Raw(r) => {
                let mut v: Value = serde_json::from_slice(&r.bytes).map_err(|_| "the body is not JSON")?;
                if let Some(stamp) = &r.stamp {
                    wire::completion(&mut v, stamp)?;
                }
                Ok(v)
            }
        }
    }

    /// The body the client receives.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Self::Value(v) => serde_json::to_vec(v).unwrap_or_default(),
            Self::Raw(r) => r.to_bytes(),
        }
    }
}

/// An upstream completion that already has every field the schema
/// requires, kept as bytes.
#[derive(Clone)]
pub struct RawCompletion {
    /// The body as received.
    bytes: Bytes,
    /// Its top-level entries other than `id`, `object`, `created` and
    /// `model`, as `,"key":value` runs ready to be written after the stamp.
    tail: Vec<u8>,
    stamp: Option<Stamp>,
    has_answer: bool,
    usage: Option<Tokens>,
    /// `usage` was an object (not `null`): its `completion_tokens` counts.
    usage_counted: bool,
    /// Characters of the choices' text.
    content_chars: usize,
}

impl fmt::Debug for RawCompletion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawCompletion").field("body", &String::from_utf8_lossy(&self.bytes)).finish_non_exhaustive()
    }
}

const FINISH_REASONS: [&str; 5] = ["stop", "length", "tool_calls", "content_filter", "function_call"];

/// What the check found in the choices.
struct Checked {
    has_answer: bool,
    content_chars: usize,
}

/// What kind of JSON value a field holds, read in the same pass as its
/// neighbours and not kept (strings borrowed unless they have escapes).
/// `Absent` when the field is missing — distinct from `null`.
#[derive(Default)]
enum Shape<'a> {
    #[default]
    Absent,
    Null,
    Str(Cow<'a, str>),
    Int(u64),
    Object,
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Shape<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Shape<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Shape::Null)
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Shape::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Shape::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Shape::Int(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(u64::try_from(v).map_or(Shape::Other, Shape::Int))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Shape::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Shape::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Shape::Object)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Shape::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl Shape<'_> {
    fn is_string_or_null(&self) -> bool {
        matches!(self, Self::Str(_) | Self::Null)
    }
    fn is_object_or_null(&self) -> bool {
        matches!(self, Self::Object | Self::Null)
    }
    fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// What the check reads of one choice — `message` in a completion,
/// `delta` in a stream chunk; other fields pass through as bytes. (A field
/// given twice fails the read: the general path decides.)
#[derive(Deserialize)]
struct ChoiceCheck<'a> {
    #[serde(default, borrow)]
    index: Shape<'a>,
    #[serde(default, borrow)]
    finish_reason: Shape<'a>,
    #[serde(default, borrow)]
    logprobs: Shape<'a>,
    #[serde(default, borrow)]
    message: Option<MessageCheck<'a>>,
    #[serde(default, borrow)]
    delta: Option<MessageCheck<'a>>,
}

/// A message or a delta.
#[derive(Deserialize)]
struct MessageCheck<'a> {
    #[serde(default, borrow)]
    role: Shape<'a>,
    #[serde(default, borrow)]
    content: Shape<'a>,
    #[serde(default, borrow)]
    refusal: Shape<'a>,
    #[serde(default, borrow)]
    tool_calls: Shape<'a>,
}

#[derive(Deserialize)]
struct UsageCheck<'a> {
    #[serde(default, borrow)]
    prompt_tokens: Shape<'a>,
    #[serde(default, borrow)]
    completion_tokens: Shape<'a>,
    #[serde(default, borrow)]
    total_tokens: Shape<'a>,
    #[serde(default, borrow)]
    prompt_tokens_details: Shape<'a>,
    #[serde(default, borrow)]
    completion_tokens_details: Shape<'a>,
}

#[derive(Deserialize)]
struct GroqCheck<'a> {
    #[serde(default, borrow)]
    error: Shape<'a>,
}

fn check_choices(choices: &[ChoiceCheck<'_>]) -> Option<Checked> {
    let mut out = Checked { has_answer: false, content_chars: 0 };
    for (i, c) in choices.iter().enumerate() {
        if !matches!(c.index, Shape::Int(n) if u64::try_from(i).ok() == Some(n)) {
            return None;
        }
        if !c.finish_reason.as_str().is_some_and(|r| FINISH_REASONS.contains(&r)) || !c.logprobs.is_object_or_null() {
            return None;
        }
        let m = c.message.as_ref()?;
        if m.role.as_str() != Some("assistant") || !matches!(m.tool_calls, Shape::Absent) {
            return None;
        }
        if !m.content.is_string_or_null() || !m.refusal.is_string_or_null() {
            return None;
        }
        if let Some(text) = m.content.as_str() {
            out.has_answer |= !text.trim().is_empty();
            out.content_chars += text.chars().count();
        }
        out.has_answer |= m.refusal.as_str().is_some_and(|r| !r.is_empty());
    }
    Some(out)
}

fn check_usage(u: &UsageCheck<'_>) -> Option<Tokens> {
    let details_ok = |d: &Shape<'_>| matches!(d, Shape::Absent | Shape::Object);
    match (&u.prompt_tokens, &u.completion_tokens, &u.total_tokens) {
        (Shape::Int(input), Shape::Int(output), Shape::Int(_))
            if details_ok(&u.prompt_tokens_details) && details_ok(&u.completion_tokens_details) =>
        {
            Some(Tokens { input: *input, output: *output })
        }
        _ => None,
    }
}

const DELTA_ROLES: [&str; 5] = ["developer", "system", "user", "assistant", "tool"];

/// What the check found in a chunk's choices.
#[derive(Default)]
struct ChunkChecked {
    has_token: bool,
    finishes: bool,
    empty: bool,
    content_chars: usize,
}

fn check_deltas(choices: &[ChoiceCheck<'_>]) -> Option<ChunkChecked> {
    let mut out = ChunkChecked { empty: choices.is_empty(), ..ChunkChecked::default() };
    for c in choices {
        if !matches!(c.index, Shape::Int(_)) || !matches!(c.logprobs, Shape::Absent | Shape::Null) {
            return None;
        }
        match &c.finish_reason {
            Shape::Null => {}
            Shape::Str(r) if FINISH_REASONS.contains(&r.as_ref()) => out.finishes = true,
            _ => return None,
        }
        let d = c.delta.as_ref()?;
        let role_ok = match &d.role {
            Shape::Absent => true,
            Shape::Str(r) => DELTA_ROLES.contains(&r.as_ref()),
            _ => false,
        };
        let text_ok = |s: &Shape<'_>| matches!(s, Shape::Absent | Shape::Null | Shape::Str(_));
        if !role_ok || !matches!(d.tool_calls, Shape::Absent) || !text_ok(&d.content) || !text_ok(&d.refusal) {
            return None;
        }
        out.has_token |= d.content.as_str().is_some_and(|t| !t.is_empty());
        out.content_chars += d.content.as_str().map_or(0, |t| t.chars().count());
        out.has_token |= d.refusal.as_str().is_some_and(|t| !t.is_empty());
    }
    Some(out)
}

/// An upstream stream chunk that needs nothing but the stamp, kept as the
/// bytes to write after it.
#[derive(Clone, PartialEq, Eq)]
pub struct RawChunk {
    tail: Vec<u8>,
    has_token: bool,
    finishes: bool,
    usage_only: bool,
    usage: Option<Tokens>,
    content_chars: usize,
}

impl fmt::Debug for RawChunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawChunk").field("tail", &String::from_utf8_lossy(&self.tail)).finish_non_exhaustive()
    }
}

impl RawChunk {
    /// Checks one event's data; `None` when it needs the general path (the
    /// same rules as [`RawCompletion::check`], for deltas).
    pub fn check(data: &str) -> Option<Self> {
        let (top, tail) = split(data, true)?;
        let checked = top.chunk?;
        Some(Self {
            tail,
            has_token: checked.has_token,
            finishes: checked.finishes,
            usage_only: checked.empty && top.usage_counted,
            usage: top.usage.filter(|_| top.usage_counted),
            content_chars: checked.content_chars,
        })
    }

    /// It carries the first token: some content or a refusal.
    pub fn has_token(&self) -> bool {
        self.has_token
    }

    /// It ends its choice (`finish_reason` set).
    pub fn finishes(&self) -> bool {
        self.finishes
    }

    /// The usage-only chunk (`choices: []` with usage).
    pub fn is_usage_chunk(&self) -> bool {
        self.usage_only
    }

    /// The counts of its `usage` object, when it has one.
    pub fn tokens(&self) -> Option<Tokens> {
        self.usage
    }

    /// Characters of content its deltas carry (for a usage estimate).
    pub fn content_chars(&self) -> usize {
        self.content_chars
    }

    /// The SSE event the client receives: the gateway's stamp, then the
    /// upstream's fields.
    pub fn encode(&self, stamp: &Stamp) -> Bytes {
        let mut out = Vec::with_capacity(self.tail.len() + 160);
        out.extend_from_slice(b"data: {\"id\":\"");
        out.extend_from_slice(stamp.id.as_bytes());
        out.extend_from_slice(b"\",\"object\":\"chat.completion.chunk\",\"created\":");
        out.extend_from_slice(stamp.created.to_string().as_bytes());
        out.extend_from_slice(b",\"model\":");
        // A string always serializes.
        let _ = serde_json::to_writer(&mut out, &stamp.model);
        out.extend_from_slice(&self.tail);
        out.extend_from_slice(b"}\n\n");
        Bytes::from(out)
    }

    /// The chunk as a tree, without the fields the stamp replaces.
    pub fn into_value(self) -> Value {
        let mut text = Vec::with_capacity(self.tail.len() + 2);
        text.push(b'{');
        text.extend_from_slice(self.tail.get(1..).unwrap_or_default());
        text.push(b'}');
        // Checked JSON, reassembled from whole entries: it parses.
        serde_json::from_slice(&text).unwrap_or(Value::Null)
    }
}

/// What one pass over the top level of a body finds.
#[derive(Default)]
struct Top {
    /// Where each key's opening quote is, and whether its entry is kept.
    keys: Vec<(usize, bool)>,
    checked: Option<Checked>,
    chunk: Option<ChunkChecked>,
    usage: Option<Tokens>,
    usage_counted: bool,
}

/// Reads the top level of `text` in one pass: the fields the check needs
/// are read as they go by, the rest skipped. An error means "the general
/// path decides": not an object, a key with escapes or given twice, or
/// anything to complete or fix.
struct TopSeed<'a> {
    text: &'a str,
    /// A `chat.completion.chunk` (deltas), not a `chat.completion`.
    chunk: bool,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'de> {
    type Value = Top;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Top, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'de> {
    type Value = Top;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a chat.completion object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let general = || A::Error::custom("needs the general path");
        let mut top = Top { keys: Vec::with_capacity(8), ..Top::default() };
        // Keys without escapes are borrowed from the text itself.
        while let Some(key) = map.next_key::<&'de str>()? {
            let seen = |&(at, _): &(usize, bool)| {
                self.text
                    .get(at + 1..)
                    .is_some_and(|t| t.starts_with(key) && t.as_bytes().get(key.len()) == Some(&b'"'))
            };
            if top.keys.iter().any(seen) {
                return Err(general());
            }
            let start = (key.as_ptr() as usize).wrapping_sub(self.text.as_ptr() as usize).wrapping_sub(1);
            let quoted = start.checked_add(key.len() + 2).and_then(|end| self.text.get(start..end));
            if quoted.is_none_or(|q| q.get(1..=key.len()) != Some(key) || !q.starts_with('"')) {
                return Err(general());
            }
            let keep = match key {
                "id" | "created" | "model" => {
                    map.next_value::<IgnoredAny>()?;
                    false
                }
                "object" => {
                    if map.next_value::<Shape<'_>>()?.as_str() == Some("error") {
                        return Err(general());
                    }
                    false
                }
                "error" => {
                    if !matches!(map.next_value::<Shape<'_>>()?, Shape::Null) {
                        return Err(general());
                    }
                    true
                }
                "x_groq" => {
                    if !matches!(map.next_value::<GroqCheck<'_>>()?.error, Shape::Absent | Shape::Null) {
                        return Err(general());
                    }
                    true
                }
                "choices" if self.chunk => {
                    let choices: Vec<ChoiceCheck<'_>> = map.next_value()?;
                    top.chunk = Some(check_deltas(&choices).ok_or_else(general)?);
                    true
                }
                "choices" => {
                    let choices: Vec<ChoiceCheck<'_>> = map.next_value()?;
                    top.checked = Some(check_choices(&choices).ok_or_else(general)?);
                    true
                }
                "usage" => {
                    match map.next_value::<Option<UsageCheck<'_>>>()? {
                        // `null` stays, and counts as no tokens.
                        None => top.usage = Some(Tokens::default()),
                        Some(u) => {
                            top.usage = Some(check_usage(&u).ok_or_else(general)?);
                            top.usage_counted = true;
                        }
                    }
                    true
                }
                "system_fingerprint" | "service_tier" => {
                    if !map.next_value::<Shape<'_>>()?.is_string_or_null() {
                        return Err(general());
                    }
                    true
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    true
                }
            };
            top.keys.push((start, keep));
        }
        Ok(top)
    }
}

/// Reads a body's top level in one pass and cuts out `id`, `object`,
/// `created` and `model`: what remains, as `,"key":value` runs ready to be
/// written after the gateway's stamp.
fn split(text: &str, chunk: bool) -> Option<(Top, Vec<u8>)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let top = TopSeed { text, chunk }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    // Each entry runs from its key's quote to the next key's quote (or the
    // closing brace); written out without its separating comma.
    let close = text.trim_end().len().checked_sub(1)?;
    let mut tail = Vec::with_capacity(text.len());
    for (i, &(start, keep)) in top.keys.iter().enumerate() {
        if !keep {
            continue;
        }
        let end = top.keys.get(i + 1).map_or(close, |&(next, _)| next);
        let entry = text.get(start..end)?.trim_end();
        let entry = entry.strip_suffix(',').unwrap_or(entry).trim_end();
        tail.push(b',');
        tail.extend_from_slice(entry.as_bytes());
    }
    Some((top, tail))
}

impl RawCompletion {
    /// Checks an upstream body; `None` when it needs the general path
    /// (something to complete or fix, tool calls, an in-band error, not a
    /// completion at all).
    pub fn check(bytes: Bytes) -> Option<Self> {
        let text = std::str::from_utf8(&bytes).ok()?;
        let (top, tail) = split(text, false)?;
        let checked = top.checked?;
        Some(Self {
            tail,
            stamp: None,
            has_answer: checked.has_answer,
            usage: top.usage,
            usage_counted: top.usage_counted,
            content_chars: checked.content_chars,
            bytes,
        })
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.tail.len() + 128);
        match &self.stamp {
            Some(s) => {
                out.extend_from_slice(b"{\"id\":\"");
                out.extend_from_slice(s.id.as_bytes());
                out.extend_from_slice(b"\",\"object\":\"chat.completion\",\"created\":");
                out.extend_from_slice(s.created.to_string().as_bytes());
                out.extend_from_slice(b",\"model\":");
                // A string always serializes.
                let _ = serde_json::to_writer(&mut out, &s.model);
                out.extend_from_slice(&self.tail);
            }
            None => {
                out.push(b'{');
                out.extend_from_slice(self.tail.get(1..).unwrap_or_default());
            }
        }
        out.push(b'}');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stamp() -> Stamp {
        Stamp { id: "chatcmpl-1".into(), created: 7, model: "p/m".into() }
    }

    /// The fast path and the general path give the client the same body.
    fn both_paths(body: &Value) -> (Value, Value) {
        both_paths_bytes(&serde_json::to_vec(body).unwrap())
    }

    fn both_paths_bytes(bytes: &[u8]) -> (Value, Value) {
        let mut raw =
            Completion::Raw(RawCompletion::check(Bytes::copy_from_slice(bytes)).expect("takes the fast path"));
        raw.stamp(stamp()).unwrap();
        let mut general = Completion::Value(serde_json::from_slice(bytes).unwrap());
        general.stamp(stamp()).unwrap();
        assert_eq!(raw.has_answer(), general.has_answer());
        assert_eq!(raw.tokens(), general.tokens());
        assert_eq!(raw.completion_tokens(), general.completion_tokens());
        let raw_out: Value = serde_json::from_slice(&raw.to_bytes()).unwrap();
        let general_out: Value = serde_json::from_slice(&general.to_bytes()).unwrap();
        (raw_out, general_out)
    }

    fn conformant() -> Value {
        json!({
            "id": "up-1", "object": "chat.completion", "created": 1, "model": "upstream-name",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi \"there\"\n", "refusal": null},
                         "logprobs": null, "finish_reason": "stop", "x_extra": [1, 2]}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 6, "total_tokens": 15,
                      "completion_tokens_details": {"reasoning_tokens": 0}},
            "system_fingerprint": "fp", "x_vendor": {"a": true}
        })
    }

    #[test]
    fn a_conformant_answer_is_stamped_without_a_tree() {
        let (raw, general) = both_paths(&conformant());
        assert_eq!(raw, general);
        assert_eq!(raw["id"], "chatcmpl-1");
        assert_eq!(raw["model"], "p/m");
        assert_eq!(raw["created"], 7);
        assert_eq!(raw["x_vendor"]["a"], true);
    }

    #[test]
    fn layout_and_order_do_not_matter() {
        let pretty = serde_json::to_vec_pretty(&conformant()).unwrap();
        let (raw, general) = both_paths_bytes(&pretty);
        assert_eq!(raw, general);
        // The replaced fields last, with odd spacing.
        let body = br#" { "choices" : [ {"index":0,"message":{"role":"assistant","content":"a","refusal":null},"logprobs":null,"finish_reason":"length"} ] ,
            "x" : 1 , "model":"m" ,"id" : "i", "created":5 ,"object":"chat.completion" }
        "#;
        let (raw, general) = both_paths_bytes(body);
        assert_eq!(raw, general);
        assert_eq!(raw["x"], 1);
    }

    #[test]
    fn null_and_missing_usage_agree_with_the_general_path() {
        let mut v = conformant();
        v["usage"] = Value::Null;
        let (raw, general) = both_paths(&v);
        assert_eq!(raw, general);
        v.as_object_mut().unwrap().remove("usage");
        let (raw, general) = both_paths(&v);
        assert_eq!(raw, general);
    }

    #[test]
    fn empty_answers_are_seen() {
        let mut v = conformant();
        v["choices"][0]["message"]["content"] = json!(" \n ");
        let c = Completion::Raw(RawCompletion::check(serde_json::to_vec(&v).unwrap().into()).unwrap());
        assert!(!c.has_answer());
        v["choices"][0]["message"]["refusal"] = json!("no");
        let c = Completion::Raw(RawCompletion::check(serde_json::to_vec(&v).unwrap().into()).unwrap());
        assert!(c.has_answer());
    }

    #[test]
    fn anything_to_fix_takes_the_general_path() {
        type Change = Box<dyn Fn(&mut Value)>;
        let cases: Vec<Change> = vec![
            Box::new(|v| v["choices"][0]["message"].as_object_mut().unwrap().remove("refusal").map(drop).unwrap()),
            Box::new(|v| v["choices"][0].as_object_mut().unwrap().remove("logprobs").map(drop).unwrap()),
            Box::new(|v| v["choices"][0]["index"] = json!(3)),
            Box::new(|v| v["choices"][0]["finish_reason"] = json!("eos")),
            Box::new(|v| v["choices"][0]["finish_reason"] = json!("error")),
            Box::new(|v| v["choices"][0]["message"]["role"] = json!("model")),
            Box::new(|v| v["choices"][0]["message"]["content"] = json!([{"type": "text", "text": "a"}])),
            Box::new(|v| v["choices"][0]["message"]["tool_calls"] = json!([])),
            Box::new(|v| v["usage"] = json!({"prompt_tokens": 1, "completion_tokens": 2})),
            Box::new(|v| v["usage"] = json!("many")),
            Box::new(|v| v["usage"]["prompt_tokens_details"] = Value::Null),
            Box::new(|v| v["usage"]["total_tokens"] = json!(15.0)),
            Box::new(|v| v["error"] = json!({"message": "boom"})),
            Box::new(|v| v["object"] = json!("error")),
            Box::new(|v| v["x_groq"] = json!({"error": "stopped"})),
            Box::new(|v| v["system_fingerprint"] = json!(5)),
            Box::new(|v| v.as_object_mut().unwrap().remove("choices").map(drop).unwrap()),
        ];
        for (i, change) in cases.iter().enumerate() {
            let mut v = conformant();
            change(&mut v);
            assert!(RawCompletion::check(serde_json::to_vec(&v).unwrap().into()).is_none(), "case {i}: {v}");
        }
        let repeated = br#"{"choices":[{"index":0,"index":0,"message":{"role":"assistant","content":"a","refusal":null},"logprobs":null,"finish_reason":"stop"}]}"#;
        for body in
            [&b"[1]"[..], b"{\"a\\u0062\":1,\"choices\":[]}", b"{\"choices\":[],\"choices\":[]}", b"\xff", repeated]
        {
            assert!(RawCompletion::check(Bytes::from_static(body)).is_none());
        }
    }

    #[test]
    fn x_groq_without_an_error_passes_through() {
        let mut v = conformant();
        v["x_groq"] = json!({"id": "req_1", "error": null});
        let (raw, general) = both_paths(&v);
        assert_eq!(raw, general);
    }

    #[test]
    fn into_value_keeps_the_stamp() {
        let mut c = Completion::Raw(RawCompletion::check(serde_json::to_vec(&conformant()).unwrap().into()).unwrap());
        c.stamp(stamp()).unwrap();
        let v = c.into_value().unwrap();
        assert_eq!(v["id"], "chatcmpl-1");
        assert_eq!(v["model"], "p/m");
    }

    /// A chunk through both paths: what the client receives, and what the
    /// runner reads of it.
    fn both_chunk_paths(chunk: &Value) -> (Value, Value) {
        let text = chunk.to_string();
        let raw = RawChunk::check(&text).expect("takes the fast path");
        assert_eq!(raw.has_token(), wire::chunk_has_token(chunk), "{chunk}");
        assert_eq!(raw.finishes(), wire::chunk_finishes(chunk), "{chunk}");
        assert_eq!(raw.is_usage_chunk(), wire::is_usage_chunk(chunk), "{chunk}");
        assert_eq!(raw.tokens(), chunk.get("usage").filter(|u| u.is_object()).map(Tokens::of), "{chunk}");
        let event = |b: Bytes| -> Value {
            let text = String::from_utf8(b.to_vec()).unwrap();
            let json = text.strip_prefix("data: ").and_then(|t| t.strip_suffix("\n\n")).unwrap();
            serde_json::from_str(json).unwrap()
        };
        let mut general = chunk.clone();
        wire::chunk(&mut general, &stamp());
        (event(raw.encode(&stamp())), event(crate::api::sse::encode_json(&general)))
    }

    #[test]
    fn conformant_chunks_are_stamped_without_a_tree() {
        for chunk in [
            json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "system_fingerprint": "fp",
                   "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "say \"hi\"\n"}, "finish_reason": null}], "x_groq": {"id": "q"}}),
            json!({"choices": [{"index": 0, "delta": {"refusal": "no"}, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": null}),
            json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}),
            json!({"choices": [{"index": 1, "delta": {"content": "b"}, "finish_reason": "length"}], "x_vendor": [1]}),
        ] {
            let (raw, general) = both_chunk_paths(&chunk);
            assert_eq!(raw, general, "{chunk}");
            assert_eq!(raw["id"], "chatcmpl-1");
            assert_eq!(raw["object"], "chat.completion.chunk");
            let back = RawChunk::check(&chunk.to_string()).unwrap().into_value();
            assert_eq!(back.get("choices"), chunk.get("choices"));
        }
    }

    #[test]
    fn chunks_with_anything_to_fix_take_the_general_path() {
        for chunk in [
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0}]}, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "a"}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": "error"}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": "eos"}]}),
            json!({"choices": [{"index": 0, "message": {"content": "a"}, "finish_reason": null}]}),
            json!({"choices": [{"delta": {"content": "a"}, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "delta": {"role": "model"}, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "delta": {"content": [{"type": "text", "text": "a"}]}, "finish_reason": null}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": null, "logprobs": {"content": []}}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 3}}),
            json!({"choices": [], "error": {"message": "boom"}}),
            json!({"object": "error", "message": "old vllm"}),
            json!({"usage": null}),
        ] {
            assert!(RawChunk::check(&chunk.to_string()).is_none(), "{chunk}");
        }
    }
}
