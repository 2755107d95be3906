//! The one-pass check of the fast path: reads a completion's or a
//! chunk's top level once, without building a JSON tree (borrowed strings,
//! untouched values skipped: the byte scanner of [`crate::api::lex`]), decides
//! whether it needs anything filled in or fixed, and cuts out the fields
//! the gateway's stamp replaces.
//!
//! Called by [`super::raw`] on every whole answer and every stream event of
//! an OpenAI-compatible upstream; any doubt (escaped or repeated keys, a
//! value of the wrong type, tool calls, an in-band error) is a `None` that
//! sends the answer down the general path.

use crate::api::lex::{Lex, Shape};
use crate::api::tokens::Tokens;
use std::borrow::Cow;
use std::ops::Range;

pub(super) const FINISH_REASONS: [&str; 5] = ["stop", "length", "tool_calls", "content_filter", "function_call"];

/// What the check found in the choices.
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(super) struct Checked {
    pub(super) has_answer: bool,
    pub(super) content_chars: usize,
}

/// What the check reads of one choice — `message` in a completion,
/// `delta` in a stream chunk; other fields pass through as bytes. (A field
/// given twice fails the read: the general path decides.)
#[derive(Default)]
#[cfg_attr(test, derive(serde::Deserialize))]
pub(super) struct ChoiceCheck<'a> {
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) index: Shape<'a>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) finish_reason: Shape<'a>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) logprobs: Shape<'a>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) message: Option<MessageCheck<'a>>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) delta: Option<MessageCheck<'a>>,
    /// `message` and `delta` were read (each may be `null`, and only once).
    #[cfg_attr(test, serde(skip))]
    seen: (bool, bool),
}

/// A message or a delta.
#[derive(Default)]
#[cfg_attr(test, derive(serde::Deserialize))]
pub(super) struct MessageCheck<'a> {
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) role: Shape<'a>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) content: Shape<'a>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) refusal: Shape<'a>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) tool_calls: Shape<'a>,
}

#[derive(Default)]
#[cfg_attr(test, derive(serde::Deserialize))]
pub(super) struct UsageCheck<'a> {
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) prompt_tokens: Shape<'a>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) completion_tokens: Shape<'a>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) total_tokens: Shape<'a>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) prompt_tokens_details: Shape<'a>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) completion_tokens_details: Shape<'a>,
}

#[derive(Default)]
#[cfg_attr(test, derive(serde::Deserialize))]
pub(super) struct GroqCheck<'a> {
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) error: Shape<'a>,
}

/// One known field of a struct the check reads; `None` when it is given
/// twice (what serde refuses too).
fn once<'a>(slot: &mut Shape<'a>, lx: &mut Lex<'a>) -> Option<()> {
    if !matches!(slot, Shape::Absent) {
        return None;
    }
    *slot = lx.shape()?;
    Some(())
}

/// A struct the check reads, field by field: from an object by its keys
/// (unknown ones validated and skipped), or — as serde reads a struct too —
/// from an array, its fields in order (fewer left at their defaults, more
/// refused).
trait Fields<'a>: Default {
    const NAMES: &'static [&'static str];
    /// Reads the value of field `name` (any other name is skipped).
    fn set(&mut self, name: &str, lx: &mut Lex<'a>) -> Option<()>;

    /// Fills `self` (at its defaults) from the struct at the cursor, in
    /// place: returned by value, a choice's 272 bytes were copied twice (a
    /// `memcpy` call each) on every answer and every stream event.
    fn fill(&mut self, lx: &mut Lex<'a>) -> Option<()> {
        if lx.peek()? == b'[' {
            let mut names = Self::NAMES.iter();
            lx.elements(|lx| self.set(names.next()?, lx))
        } else {
            lx.members(|key, lx| self.set(key, lx))
        }
    }

    /// Fills `slot` with the struct at the cursor, in place, or leaves it
    /// `None` for `null`.
    fn fill_or_null(slot: &mut Option<Self>, lx: &mut Lex<'a>) -> Option<()> {
        if lx.peek()? == b'n' {
            return matches!(lx.shape()?, Shape::Null).then_some(());
        }
        slot.insert(Self::default()).fill(lx)
    }
}

impl<'a> Fields<'a> for MessageCheck<'a> {
    const NAMES: &'static [&'static str] = &["role", "content", "refusal", "tool_calls"];
    fn set(&mut self, name: &str, lx: &mut Lex<'a>) -> Option<()> {
        match name {
            "role" => once(&mut self.role, lx),
            "content" => once(&mut self.content, lx),
            "refusal" => once(&mut self.refusal, lx),
            "tool_calls" => once(&mut self.tool_calls, lx),
            _ => lx.skip(0),
        }
    }
}

impl<'a> Fields<'a> for ChoiceCheck<'a> {
    const NAMES: &'static [&'static str] = &["index", "finish_reason", "logprobs", "message", "delta"];
    fn set(&mut self, name: &str, lx: &mut Lex<'a>) -> Option<()> {
        match name {
            "index" => once(&mut self.index, lx),
            "finish_reason" => once(&mut self.finish_reason, lx),
            "logprobs" => once(&mut self.logprobs, lx),
            "message" if !std::mem::replace(&mut self.seen.0, true) => {
                MessageCheck::fill_or_null(&mut self.message, lx)
            }
            "delta" if !std::mem::replace(&mut self.seen.1, true) => MessageCheck::fill_or_null(&mut self.delta, lx),
            "message" | "delta" => None,
            _ => lx.skip(0),
        }
    }
}

impl<'a> ChoiceCheck<'a> {
    /// A `choices` array, each choice handed to `each` with its place as
    /// it is read (not gathered first: a vector allocated, and each
    /// choice's few hundred bytes copied into it, on every answer and
    /// every stream event); how many there were.
    fn read_each(lx: &mut Lex<'a>, mut each: impl FnMut(usize, &Self) -> Option<()>) -> Option<usize> {
        let mut count = 0;
        lx.elements(|lx| {
            let mut choice = Self::default();
            choice.fill(lx)?;
            each(count, &choice)?;
            count += 1;
            Some(())
        })?;
        Some(count)
    }
}

impl<'a> Fields<'a> for UsageCheck<'a> {
    const NAMES: &'static [&'static str] =
        &["prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details"];
    fn set(&mut self, name: &str, lx: &mut Lex<'a>) -> Option<()> {
        match name {
            "prompt_tokens" => once(&mut self.prompt_tokens, lx),
            "completion_tokens" => once(&mut self.completion_tokens, lx),
            "total_tokens" => once(&mut self.total_tokens, lx),
            "prompt_tokens_details" => once(&mut self.prompt_tokens_details, lx),
            "completion_tokens_details" => once(&mut self.completion_tokens_details, lx),
            _ => lx.skip(0),
        }
    }
}

impl<'a> Fields<'a> for GroqCheck<'a> {
    const NAMES: &'static [&'static str] = &["error"];
    fn set(&mut self, name: &str, lx: &mut Lex<'a>) -> Option<()> {
        match name {
            "error" => once(&mut self.error, lx),
            _ => lx.skip(0),
        }
    }
}

/// A completion's choices read whole (the test oracle's way).
#[cfg(test)]
pub(super) fn check_choices(choices: &[ChoiceCheck<'_>]) -> Option<Checked> {
    let mut out = Checked { has_answer: false, content_chars: 0 };
    for (i, c) in choices.iter().enumerate() {
        out.add(i, c)?;
    }
    Some(out)
}

impl Checked {
    /// Choice `i` of a completion; `None` when it needs the general path.
    fn add(&mut self, i: usize, c: &ChoiceCheck<'_>) -> Option<()> {
        let out = self;
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
        Some(())
    }
}

pub(super) fn check_usage(u: &UsageCheck<'_>) -> Option<Tokens> {
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
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(super) struct ChunkChecked {
    pub(super) has_token: bool,
    pub(super) finishes: bool,
    /// `choices: []`.
    pub(super) empty: bool,
    pub(super) content_chars: usize,
    /// The content of choice 0's delta (kept for a continuation), when it
    /// is not found in place at [`Self::content_at`] (escaped, or `n > 1`).
    pub(super) content: Box<str>,
    /// Its length in bytes, decoded.
    pub(super) content_len: usize,
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

/// A chunk's choices read whole (the test oracle's way).
#[cfg(test)]
pub(super) fn check_deltas(choices: &[ChoiceCheck<'_>], text: &str) -> Option<ChunkChecked> {
    let mut deltas = Deltas::new(text);
    for (i, c) in choices.iter().enumerate() {
        deltas.add(i, c)?;
    }
    Some(deltas.finish(choices.len()))
}

/// A chunk's choices checked one by one as they are read.
struct Deltas<'t> {
    out: ChunkChecked,
    text: &'t str,
    /// The first choice's content was found in place and not copied: if
    /// more choices follow, [`Self::finish`] copies it.
    in_place: bool,
}

impl<'t> Deltas<'t> {
    fn new(text: &'t str) -> Self {
        Self { out: ChunkChecked::default(), text, in_place: false }
    }

    /// Choice `i`; `None` when the chunk needs the general path.
    fn add(&mut self, i: usize, c: &ChoiceCheck<'_>) -> Option<()> {
        let out = &mut self.out;
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
                // Found in place, it is not copied (the chunk's tail has it)
                // when it is the chunk's one choice: so far, the first.
                if let (Shape::Str(Cow::Borrowed(content)), 0) = (&d.content, i) {
                    out.content_at = offset_in(self.text, content);
                }
                if let Some(t) = d.content.as_str().filter(|t| !t.is_empty()) {
                    out.content_len = t.len();
                    self.in_place = i == 0 && out.content_at.is_some();
                    if !self.in_place {
                        out.content = t.into();
                    }
                }
                out.finish_reason = finish_reason;
            }
            _ => out.other_choice = true,
        }
        let refusal = d.refusal.as_str().is_some_and(|t| !t.is_empty());
        out.has_token |= refusal;
        out.refusal |= refusal;
        Some(())
    }

    /// The chunk's `count` choices checked: content is found in place only
    /// in a chunk of one choice (a first choice's, in place so far, is
    /// copied out when more followed).
    fn finish(mut self, count: usize) -> ChunkChecked {
        let out = &mut self.out;
        out.empty = count == 0;
        if count != 1 {
            if let Some(at) = out.content_at.take().filter(|_| self.in_place) {
                out.content = self.text.get(at..at + out.content_len).unwrap_or_default().into();
            }
        }
        self.out
    }
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
#[cfg_attr(test, derive(Debug, PartialEq))]
pub(super) struct Top {
    /// Where each key's opening quote is, its length (the repeat check
    /// compares lengths before bytes: most keys differ in length, and a
    /// byte comparison with each earlier key was a `memcmp` call), and
    /// whether its entry is kept.
    pub(super) keys: Vec<(usize, usize, bool)>,
    /// A completion's choices, when they passed.
    pub(super) checked: Option<Checked>,
    /// A chunk's choices, when they passed.
    pub(super) chunk: Option<ChunkChecked>,
    pub(super) usage: Option<Tokens>,
    /// `usage` was an object (not `null`): its `completion_tokens` counts.
    pub(super) usage_counted: bool,
    /// Which of `keys` is `usage`.
    pub(super) usage_key: Option<usize>,
    /// Where `usage`'s value is in the tail `split` returns.
    pub(super) usage_in_tail: Option<Range<usize>>,
    /// Where a chunk's content string ([`ChunkChecked::content_at`]) is in
    /// the tail.
    pub(super) content_in_tail: Option<usize>,
}

/// Reads the top level of `text` in one pass: the fields the check needs
/// are read as they go by, the rest validated and skipped. `None` means
/// "the general path decides": not an object, a key with escapes or given
/// twice, or anything to complete or fix.
pub(super) fn top(text: &str, chunk: bool) -> Option<Top> {
    let mut lx = Lex::new(text);
    let mut top = Top { keys: Vec::with_capacity(8), ..Top::default() };
    if !lx.open(b'{', b'}')? {
        loop {
            let (start, key) = lx.key()?;
            let seen = |&(at, len, _): &(usize, usize, bool)| {
                len == key.len() && text.as_bytes().get(at + 1..at + 1 + len) == Some(key.as_bytes())
            };
            if top.keys.iter().any(seen) {
                return None;
            }
            let keep = match key {
                "id" | "created" | "model" => {
                    lx.skip(0)?;
                    false
                }
                "object" => {
                    if lx.shape()?.as_str() == Some("error") {
                        return None;
                    }
                    false
                }
                "error" => {
                    if !matches!(lx.shape()?, Shape::Null) {
                        return None;
                    }
                    true
                }
                "x_groq" => {
                    let mut groq = GroqCheck::default();
                    groq.fill(&mut lx)?;
                    if !matches!(groq.error, Shape::Absent | Shape::Null) {
                        return None;
                    }
                    true
                }
                "choices" if chunk => {
                    let mut deltas = Deltas::new(text);
                    let count = ChoiceCheck::read_each(&mut lx, |i, c| deltas.add(i, c))?;
                    top.chunk = Some(deltas.finish(count));
                    true
                }
                "choices" => {
                    let mut checked = Checked { has_answer: false, content_chars: 0 };
                    ChoiceCheck::read_each(&mut lx, |i, c| checked.add(i, c))?;
                    top.checked = Some(checked);
                    true
                }
                "usage" => {
                    top.usage_key = Some(top.keys.len());
                    let mut usage = None;
                    UsageCheck::fill_or_null(&mut usage, &mut lx)?;
                    match &usage {
                        // `null` stays, and counts as no tokens.
                        None => top.usage = Some(Tokens::default()),
                        Some(u) => {
                            top.usage = Some(check_usage(u)?);
                            top.usage_counted = true;
                        }
                    }
                    true
                }
                "system_fingerprint" | "service_tier" => {
                    if !lx.shape()?.is_string_or_null() {
                        return None;
                    }
                    true
                }
                _ => {
                    lx.skip(0)?;
                    true
                }
            };
            top.keys.push((start, key.len(), keep));
            if !lx.more(b'}')? {
                break;
            }
        }
    }
    lx.at_end().then_some(top)
}

/// Reads a body's top level in one pass and cuts out `id`, `object`,
/// `created` and `model`: what remains, as `,"key":value` runs ready to be
/// written after the gateway's stamp.
pub(super) fn split(text: &str, chunk: bool) -> Option<(Top, String)> {
    let mut top = top(text, chunk)?;
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
            // (The key is `usage`: its first colon is the separator. A
            // byte search: `split_once` went through the char searcher.)
            let colon = entry.bytes().position(|b| b == b':')?;
            let value = entry.get(colon + 1..)?.trim_ascii_start();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(choices: &str) -> ChunkChecked {
        let text =
            format!(r#"{{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{choices}]}}"#);
        top(&text, true).and_then(|t| t.chunk).unwrap_or_else(|| panic!("not checked: {text}"))
    }

    fn delta(index: u32, content: &str) -> String {
        format!(r#"{{"index":{index},"delta":{{"content":{content}}},"finish_reason":null}}"#)
    }

    /// Choices are checked as they are read: a first choice's content is
    /// left in place only when no other choice follows it; the content kept
    /// otherwise is the last non-empty one of choice 0, as when the choices
    /// were gathered and counted first.
    #[test]
    fn content_stays_in_place_only_in_a_chunk_of_one_choice() {
        let one = chunk(&delta(0, r#""Hi""#));
        assert!(one.content_at.is_some() && one.content.is_empty() && one.content_len == 2, "{one:?}");
        let empty = chunk(&delta(0, r#""""#));
        assert!(empty.content_at.is_some() && empty.content_len == 0, "{empty:?}");
        let cases = [
            (format!("{},{}", delta(0, r#""Hi""#), delta(1, r#""Yo""#)), "Hi"),
            (format!("{},{}", delta(1, r#""Yo""#), delta(0, r#""Hi""#)), "Hi"),
            (format!("{},{}", delta(0, r#""Hi""#), delta(0, r#""""#)), "Hi"),
            (format!("{},{}", delta(0, r#""Hi""#), delta(0, r#""a\nb""#)), "a\nb"),
            (format!("{},{}", delta(0, r#""a\nb""#), delta(0, r#""Hi""#)), "Hi"),
        ];
        for (choices, content) in cases {
            let c = chunk(&choices);
            assert_eq!((c.content_at, &*c.content, c.content_len), (None, content, content.len()), "{choices}");
            assert!(c.other_choice || !choices.contains(r#""index":1"#), "{choices}");
        }
        let none = chunk("");
        assert!(none.empty && none.content_at.is_none());
    }
}
