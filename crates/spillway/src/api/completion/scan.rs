//! The one-pass check of the fast path: reads a completion's or a
//! chunk's top level once, without building a JSON tree (borrowed strings,
//! untouched values skipped), decides whether it needs anything filled in
//! or fixed, and cuts out the fields the gateway's stamp replaces.
//!
//! Called by [`super::raw`] on every whole answer and every stream event of
//! an OpenAI-compatible upstream; any doubt (escaped or repeated keys, a
//! value of the wrong type, tool calls, an in-band error) is a `None` that
//! sends the answer down the general path.

use crate::api::tokens::Tokens;
use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

pub(super) const FINISH_REASONS: [&str; 5] = ["stop", "length", "tool_calls", "content_filter", "function_call"];

/// What the check found in the choices.
pub(super) struct Checked {
    pub(super) has_answer: bool,
    pub(super) content_chars: usize,
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
pub(super) struct ChunkChecked {
    pub(super) has_token: bool,
    pub(super) finishes: bool,
    /// `choices: []`.
    pub(super) empty: bool,
    pub(super) content_chars: usize,
    /// The content of choice 0's delta (kept for a continuation).
    pub(super) content: Box<str>,
    /// A choice other than 0 (`n > 1`): such streams are not continued.
    pub(super) other_choice: bool,
    /// Choice 0's `finish_reason`, when set.
    pub(super) finish_reason: Option<&'static str>,
    /// Some choice's delta carries refusal text.
    pub(super) refusal: bool,
    /// Where the content string of a chunk's one choice starts in its text
    /// (after the opening quote), when the text holds it as it is (no
    /// escapes): what a [`super::raw::ChunkShape`] is made of.
    pub(super) content_at: Option<usize>,
}

fn check_deltas(choices: &[ChoiceCheck<'_>], text: &str) -> Option<ChunkChecked> {
    let mut out = ChunkChecked { empty: choices.is_empty(), ..ChunkChecked::default() };
    for c in choices {
        if !matches!(c.index, Shape::Int(_)) || !matches!(c.logprobs, Shape::Absent | Shape::Null) {
            return None;
        }
        let finish_reason = match &c.finish_reason {
            Shape::Null => None,
            Shape::Str(r) => Some(*FINISH_REASONS.iter().find(|known| **known == r.as_ref())?),
            _ => return None,
        };
        out.finishes |= finish_reason.is_some();
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
        match c.index {
            Shape::Int(0) => {
                if let Some(t) = d.content.as_str().filter(|t| !t.is_empty()) {
                    out.content = t.into();
                }
                out.finish_reason = finish_reason;
            }
            _ => out.other_choice = true,
        }
        let refusal = d.refusal.as_str().is_some_and(|t| !t.is_empty());
        out.has_token |= refusal;
        out.refusal |= refusal;
        if let (Shape::Int(0), Shape::Str(Cow::Borrowed(content)), 1) = (&c.index, &d.content, choices.len()) {
            out.content_at = offset_in(text, content);
        }
    }
    Some(out)
}

/// Where `part`, a string borrowed from `text` between quotes, starts in
/// it.
fn offset_in(text: &str, part: &str) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let quoted = text.as_bytes().get(at.checked_sub(1)?..=at + part.len())?;
    let inside = quoted.get(1..quoted.len() - 1);
    (quoted.first() == Some(&b'"') && quoted.last() == Some(&b'"') && inside == Some(part.as_bytes())).then_some(at)
}

/// What one pass over the top level of a body finds.
#[derive(Default)]
pub(super) struct Top {
    /// Where each key's opening quote is, its length (the repeat check
    /// compares lengths before bytes: most keys differ in length, and a
    /// byte comparison with each earlier key was a `memcmp` call), and
    /// whether its entry is kept.
    keys: Vec<(usize, usize, bool)>,
    /// A completion's choices, when they passed.
    pub(super) checked: Option<Checked>,
    /// A chunk's choices, when they passed.
    pub(super) chunk: Option<ChunkChecked>,
    pub(super) usage: Option<Tokens>,
    /// `usage` was an object (not `null`): its `completion_tokens` counts.
    pub(super) usage_counted: bool,
    /// Which of `keys` is `usage`.
    usage_key: Option<usize>,
    /// Where `usage`'s value is in the tail `split` returns.
    pub(super) usage_in_tail: Option<Range<usize>>,
    /// Where a chunk's content string ([`ChunkChecked::content_at`]) is in
    /// the tail.
    pub(super) content_in_tail: Option<usize>,
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
            let seen = |&(at, len, _): &(usize, usize, bool)| {
                len == key.len() && self.text.get(at + 1..at + 1 + len) == Some(key)
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
                    top.chunk = Some(check_deltas(&choices, self.text).ok_or_else(general)?);
                    true
                }
                "choices" => {
                    let choices: Vec<ChoiceCheck<'_>> = map.next_value()?;
                    top.checked = Some(check_choices(&choices).ok_or_else(general)?);
                    true
                }
                "usage" => {
                    top.usage_key = Some(top.keys.len());
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
            top.keys.push((start, key.len(), keep));
        }
        Ok(top)
    }
}

/// Reads a body's top level in one pass and cuts out `id`, `object`,
/// `created` and `model`: what remains, as `,"key":value` runs ready to be
/// written after the gateway's stamp.
pub(super) fn split(text: &str, chunk: bool) -> Option<(Top, String)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut top = TopSeed { text, chunk }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    // Each entry runs from its key's quote to the next key's quote (or the
    // closing brace); written out without its separating comma.
    let close = text.trim_ascii_end().len().checked_sub(1)?;
    let mut tail = String::with_capacity(text.len());
    for (i, &(start, _, keep)) in top.keys.iter().enumerate() {
        if !keep {
            continue;
        }
        let end = top.keys.get(i + 1).map_or(close, |&(next, _, _)| next);
        let entry = text.get(start..end)?.trim_ascii_end();
        let entry = entry.strip_suffix(',').unwrap_or(entry).trim_ascii_end();
        tail.push(',');
        if top.usage_key == Some(i) {
            // `"usage"`, maybe blanks, `:`, maybe blanks, the value.
            let value = entry.split_once(':').map(|(_, v)| v.trim_ascii_start())?;
            let at = tail.len() + (entry.len() - value.len());
            top.usage_in_tail = Some(at..at + value.len());
        }
        if let Some(at) =
            top.chunk.as_ref().and_then(|c| c.content_at).filter(|at| (start..start + entry.len()).contains(at))
        {
            top.content_in_tail = Some(tail.len() + at - start);
        }
        tail.push_str(entry);
    }
    Some((top, tail))
}
