//! The fast path's answers: an upstream's whole completion
//! ([`RawCompletion`]) or stream chunk ([`RawChunk`]) that already has
//! every field OpenAI's schema requires, kept as its bytes.
//!
//! The adapter of `kind: openai` checks each answer here as it arrives
//! (one pass of `scan.rs`, no tree); what passes goes to the client
//! as those bytes behind the gateway's stamp, and the runner reads what it
//! needs of it (an answer at all, a first token, usage) from what the check
//! found.

use super::scan::{split, FINISH_REASONS};
use super::slots::offset_in;
use crate::api::lex::write_string;
use crate::api::tokens::{estimate_tokens, Tokens};
use crate::api::wire::{self, Stamp};
use bytes::Bytes;
use serde_json::Value;
use std::fmt;
use std::ops::Range;

/// An upstream completion that already has every field the schema
/// requires, kept as bytes.
#[derive(Clone)]
pub struct RawCompletion {
    bytes: Bytes,
    /// Its top-level entries other than `id`, `object`, `created` and
    /// `model`, as `,"key":value` runs ready to be written after the stamp:
    /// a slice of `bytes` when they lie in one run there (an assembled
    /// answer's, and most upstreams' checked against a shape), else put
    /// together.
    tail: Bytes,
    stamp: Option<Stamp>,
    has_answer: bool,
    usage: Option<Tokens>,
    /// `usage` was an object (not `null`): its `completion_tokens` counts.
    usage_counted: bool,
    /// Characters of the choices' text.
    content_chars: usize,
    /// An assembled answer's text and whether it refused, as the quality
    /// judge reads them ([`super::Completion::first_choice`]): kept from
    /// assembly rather than parsed back out of the bytes.
    assembled: Option<(String, bool)>,
}

impl fmt::Debug for RawCompletion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawCompletion").field("body", &String::from_utf8_lossy(&self.bytes)).finish_non_exhaustive()
    }
}

impl RawCompletion {
    /// A completion put together from a stream's parts (one choice, no tool
    /// calls; `cascade::whole`): `content`, `refusal`, `finish_reason` (one
    /// of the schema's) and `usage` (a checked object's JSON).
    /// `Err` with `content` back for a finish reason the schema does not
    /// know.
    pub fn assembled(
        content: String,
        refusal: Option<&str>,
        finish_reason: &str,
        usage: Option<(&[u8], Tokens)>,
    ) -> Result<Self, String> {
        if !FINISH_REASONS.contains(&finish_reason) {
            return Err(content);
        }
        // Written once, as the body; the tail is its slice.
        const OPEN: &[u8] = br#"{"object":"chat.completion""#;
        let mut bytes = Vec::with_capacity(content.len() + 224);
        bytes.extend_from_slice(OPEN);
        bytes.extend_from_slice(br#","choices":[{"index":0,"message":{"role":"assistant","content":"#);
        write_string(&mut bytes, &content);
        bytes.extend_from_slice(br#","refusal":"#);
        match refusal {
            Some(refusal) => write_string(&mut bytes, refusal),
            None => bytes.extend_from_slice(b"null"),
        }
        bytes.extend_from_slice(br#"},"logprobs":null,"finish_reason":"#);
        write_string(&mut bytes, finish_reason);
        bytes.extend_from_slice(b"}]");
        if let Some((json, _)) = usage {
            bytes.extend_from_slice(br#","usage":"#);
            bytes.extend_from_slice(json);
        }
        bytes.push(b'}');
        let bytes = Bytes::from(bytes);
        let tail = bytes.slice(OPEN.len()..bytes.len() - 1);
        let refused = refusal.is_some_and(|r| !r.is_empty()) || finish_reason == "content_filter";
        Ok(Self {
            bytes,
            tail,
            stamp: None,
            has_answer: !content.trim().is_empty() || refusal.is_some_and(|r| !r.is_empty()),
            usage: usage.map(|(_, t)| t),
            usage_counted: usage.is_some(),
            content_chars: content.chars().count(),
            assembled: Some((content, refused)),
        })
    }

    /// Checks an upstream body; `None` when it needs the general path
    /// (something to complete or fix, tool calls, an in-band error, not a
    /// completion at all).
    pub fn check(bytes: Bytes) -> Option<Self> {
        let text = std::str::from_utf8(&bytes).ok()?;
        let (top, tail) = split(text, false)?;
        let checked = top.checked?;
        Some(Self {
            tail: Bytes::from(tail.into_bytes()),
            stamp: None,
            has_answer: checked.has_answer,
            usage: top.usage,
            usage_counted: top.usage_counted,
            content_chars: checked.content_chars,
            bytes,
            assembled: None,
        })
    }

    /// What the check found, apart from the bytes.
    pub(super) fn found(&self) -> Found {
        Found {
            has_answer: self.has_answer,
            usage: self.usage,
            usage_counted: self.usage_counted,
            content_chars: self.content_chars,
        }
    }

    /// Its entries after the stamp's, as `,"key":value` runs.
    pub(super) fn tail(&self) -> &[u8] {
        &self.tail
    }

    /// An upstream's body whose check found `found` and cut out `tail`
    /// (checked against a shape: `shape.rs`).
    pub(super) fn from_found(bytes: Bytes, tail: Bytes, found: Found) -> Self {
        let Found { has_answer, usage, usage_counted, content_chars } = found;
        Self { bytes, tail, stamp: None, has_answer, usage, usage_counted, content_chars, assembled: None }
    }

    /// Sets the gateway's id, `created` and `model`, written in front of
    /// the upstream's other fields.
    pub fn stamp(&mut self, stamp: Stamp) {
        self.stamp = Some(stamp);
    }

    /// The upstream's body as it came (or as it was assembled).
    pub fn body(&self) -> &[u8] {
        &self.bytes
    }

    /// An assembled answer's text and whether it refused; `None` for an
    /// upstream's own body.
    pub fn assembled_text(&self) -> Option<(&str, bool)> {
        self.assembled.as_ref().map(|(text, refused)| (text.as_str(), *refused))
    }

    /// It carries some content or a refusal (tool calls take the general
    /// path).
    pub fn has_answer(&self) -> bool {
        self.has_answer
    }

    /// The counts of its `usage`, when it has one (`null` counts as 0).
    pub fn tokens(&self) -> Option<Tokens> {
        self.usage
    }

    /// `usage.completion_tokens`; without a `usage` object,
    /// [`estimate_tokens`] over the choices' text.
    pub fn completion_tokens(&self) -> u64 {
        match self.usage {
            Some(t) if self.usage_counted => t.output,
            _ => estimate_tokens(self.content_chars),
        }
    }

    /// The answer as a tree, stamped if it was.
    pub fn into_value(self) -> Result<Value, &'static str> {
        let mut v: Value = serde_json::from_slice(&self.bytes).map_err(|_| "the body is not JSON")?;
        if let Some(stamp) = &self.stamp {
            wire::completion(&mut v, stamp)?;
        }
        Ok(v)
    }

    /// The body the client receives: the stamp, then the upstream's
    /// fields.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.tail.len() + 128);
        match &self.stamp {
            Some(s) => {
                write_stamp(s, "chat.completion", &mut out);
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

/// What the check of a whole answer found in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Found {
    pub(super) has_answer: bool,
    pub(super) usage: Option<Tokens>,
    pub(super) usage_counted: bool,
    pub(super) content_chars: usize,
}

/// An upstream stream chunk that needs nothing but the stamp, kept as the
/// bytes to write after it.
#[derive(Clone, PartialEq, Eq)]
pub struct RawChunk {
    /// Its entries after the stamp's, as `,"key":value` runs: a slice of
    /// the upstream's read when the event came whole in one and its entries
    /// lie in one run (nothing copied), else put together.
    pub(super) tail: Bytes,
    /// Its `usage`, boxed: one chunk of a stream has it, and every event
    /// is moved through the stream's layers by value (small, it moves in
    /// registers rather than by a call to copy it).
    pub(super) usage: Option<Box<ChunkUsage>>,
    pub(super) content: Text,
    /// Characters of content (an event is far shorter than 4 GiB).
    pub(super) content_chars: u32,
    /// Choice 0's `finish_reason`: its place in the known ones, plus one
    /// (0: none).
    pub(super) finish: u8,
    pub(super) has_token: bool,
    pub(super) finishes: bool,
    pub(super) usage_only: bool,
    pub(super) other_choice: bool,
    pub(super) refusal: bool,
}

/// A chunk's counted `usage` object.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct ChunkUsage {
    pub(super) tokens: Tokens,
    /// Where the object is in the chunk's tail, when it is there.
    pub(super) at: Option<Range<usize>>,
}

impl ChunkUsage {
    /// The counted usage of a checked chunk, boxed (`None` when it has none).
    fn of(tokens: Option<Tokens>, at: Option<Range<usize>>) -> Option<Box<Self>> {
        tokens.map(|tokens| Box::new(Self { tokens, at }))
    }
}

/// A known finish reason as [`RawChunk`] keeps it (its place plus one).
fn finish_code(reason: Option<&'static str>) -> u8 {
    reason.and_then(|r| super::scan::FINISH_REASONS.iter().position(|known| *known == r)).map_or(0, |i| i as u8 + 1)
}

/// An event's length as kept in a [`RawChunk`].
pub(super) fn short(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
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
        Self::check_at(data).map(|(chunk, _)| chunk)
    }

    /// The whole check, and where the content string is in `data` and in
    /// the chunk's tail when a shape can be made of it.
    pub(super) fn check_at(data: &str) -> Option<(Self, Option<(usize, usize)>)> {
        let (top, tail) = split(data, true)?;
        let checked = top.chunk?;
        let at = checked.content_at.zip(top.content_in_tail);
        let content = match (checked.content_at, top.content_in_tail) {
            (Some(_), Some(in_tail)) => Text::InTail(short(in_tail)..short(in_tail + checked.content_len)),
            (Some(from), None) => Text::Own(data.get(from..from + checked.content_len)?.into()),
            (None, _) => Text::Own(checked.content),
        };
        let counted = top.usage_counted;
        let chunk = Self {
            tail: Bytes::from(tail.into_bytes()),
            usage: ChunkUsage::of(top.usage.filter(|_| counted), top.usage_in_tail.filter(|_| counted)),
            content,
            content_chars: short(checked.content_chars),
            finish: finish_code(checked.finish_reason),
            has_token: checked.has_token,
            finishes: checked.finishes,
            usage_only: checked.empty && counted,
            other_choice: checked.other_choice,
            refusal: checked.refusal,
        };
        Some((chunk, at))
    }

    /// Its tail (to see whether it is a slice of the read it came in).
    #[cfg(test)]
    pub(super) fn tail(&self) -> &Bytes {
        &self.tail
    }

    /// Choice 0's `finish_reason`, when this chunk sets it.
    pub fn finish_reason(&self) -> Option<&'static str> {
        super::scan::FINISH_REASONS.get(usize::from(self.finish).checked_sub(1)?).copied()
    }

    /// A delta carries refusal text (only the tree has it).
    pub fn has_refusal(&self) -> bool {
        self.refusal
    }

    /// The `usage` object as the upstream wrote it, when it has one.
    pub fn usage_json(&self) -> Option<&[u8]> {
        let at = self.usage.as_ref()?.at.clone()?;
        self.tail.get(at)
    }

    /// The content of choice 0's delta ("" when none).
    pub fn content(&self) -> &str {
        std::str::from_utf8(self.content_bytes()).unwrap_or_default()
    }

    /// [`Self::content`] as its bytes: UTF-8, checked when the chunk was
    /// (text put together from these is checked once, as a whole:
    /// [`super::TextBuf`]).
    pub fn content_bytes(&self) -> &[u8] {
        match &self.content {
            Text::InTail(at) => self.tail.get(at.start as usize..at.end as usize).unwrap_or_default(),
            Text::Own(text) => text.as_bytes(),
        }
    }

    /// It has a choice other than 0 (an `n > 1` stream).
    pub fn other_choice(&self) -> bool {
        self.other_choice
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
        self.usage.as_ref().map(|u| u.tokens)
    }

    /// Characters of content its deltas carry (for a usage estimate).
    pub fn content_chars(&self) -> usize {
        self.content_chars as usize
    }

    /// The SSE event the client receives: the gateway's stamp, then the
    /// upstream's fields.
    pub fn encode(&self, stamp: &Stamp) -> Bytes {
        let mut out = Vec::with_capacity(self.tail.len() + 160);
        self.encode_into(&chunk_prefix(stamp), &mut out);
        Bytes::from(out)
    }

    /// Appends the SSE event to `out`: `prefix` ([`chunk_prefix`] of the
    /// stream's stamp, made once a stream), then the upstream's fields —
    /// the stamp spliced in as bytes, nothing serialized per event.
    pub fn encode_into(&self, prefix: &[u8], out: &mut Vec<u8>) {
        out.reserve(prefix.len() + self.tail.len() + 3);
        out.extend_from_slice(prefix);
        out.extend_from_slice(&self.tail);
        out.extend_from_slice(b"}\n\n");
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

/// A stream's last checked chunk with one choice and a plain content
/// string: what [`RawChunk::check_like`] compares the next event with
/// first. Upstreams write every event of a stream alike (the same id,
/// `created`, model and field order), so most events differ from it only
/// inside that string: two comparisons and one string read, the cheapest
/// check there is (the provider's shapes, `chunk_shape.rs`, take the
/// rest).
#[derive(Default)]
pub(super) struct LastChunk {
    /// The event's data up to its content string's opening quote
    /// (included).
    head: Vec<u8>,
    /// The event's data from its content string's closing quote on.
    foot: Vec<u8>,
    /// The checked chunk.
    chunk: Option<RawChunk>,
    /// Where its content string is in its tail.
    in_tail: Range<usize>,
    /// Where its tail starts in its data and how many bytes follow the tail
    /// there, when the tail is one run of the data (compact JSON with the
    /// stamp's entries first, as upstreams write it): a chunk like it is
    /// then that run of its own data.
    run: Option<(usize, usize)>,
}

impl LastChunk {
    /// Keeps `chunk`, checked from `data` (the same bytes as text the
    /// whole check or a shape's fill read: UTF-8), when its content
    /// string is in place at `at` (in the data and in its tail).
    pub(super) fn keep(&mut self, data: &[u8], chunk: &RawChunk, at: Option<(usize, usize)>) {
        let Some((at, at_tail)) = at else { return };
        let len = chunk.content_bytes().len();
        let (Some(head), Some(foot)) = (data.get(..at), data.get(at + len..)) else { return };
        self.head.clear();
        self.head.extend_from_slice(head);
        self.foot.clear();
        self.foot.extend_from_slice(foot);
        self.in_tail = at_tail..at_tail + len;
        let close = data.trim_ascii_end().len().saturating_sub(1);
        self.run = data
            .get(..close)
            .filter(|before| before.ends_with(&chunk.tail))
            .map(|_| (close - chunk.tail.len(), data.len() - close));
        self.chunk = Some(chunk.clone());
    }

    /// `data` checked against it: `None` when it differs from it outside
    /// the content string, or the new string is not one plain JSON string
    /// (a quote, a control character, an escape cut at its end); the tail
    /// a slice of `piece` (which `data` is read from, if it is) when it
    /// can be.
    pub(super) fn fill_in(&self, data: &[u8], piece: Option<&Bytes>) -> Option<RawChunk> {
        let like = self.chunk.as_ref()?;
        let end = data.len().checked_sub(self.foot.len())?;
        if end < self.head.len() || !data.starts_with(&self.head) || !data.ends_with(&self.foot) {
            return None;
        }
        // The head and foot are the shape's own (UTF-8) text: only the
        // string between them is new.
        let raw = data.get(self.head.len()..end)?;
        let (has_text, content_chars, content) = match string_body(raw, || data.get(self.head.len() - 1..end + 1))? {
            Body::Ascii => (!raw.is_empty(), raw.len(), self.in_tail(raw.len())),
            Body::Text(text) => (!text.is_empty(), chars(text), self.in_tail(raw.len())),
            Body::Decoded(text) => {
                // The escapes as written stay in the tail: they must be UTF-8 too.
                std::str::from_utf8(raw).ok()?;
                (!text.is_empty(), chars(&text), Text::Own(text.into()))
            }
        };
        let in_piece = piece.and_then(|p| Some(p).zip(offset_in(p, data)));
        let tail = match self.run.zip(in_piece) {
            Some(((from, after), (piece, at))) => piece.slice(at + from..at + data.len() - after),
            _ => {
                let mut tail = Vec::with_capacity(like.tail.len() + raw.len() - self.in_tail.len());
                tail.extend_from_slice(like.tail.get(..self.in_tail.start)?);
                tail.extend_from_slice(raw);
                tail.extend_from_slice(like.tail.get(self.in_tail.end..)?);
                Bytes::from(tail)
            }
        };
        let moved = |at: usize| if at >= self.in_tail.end { at + raw.len() - self.in_tail.len() } else { at };
        let usage = like
            .usage
            .as_ref()
            .map(|u| Box::new(ChunkUsage { tokens: u.tokens, at: u.at.clone().map(|r| moved(r.start)..moved(r.end)) }));
        Some(RawChunk {
            tail,
            usage,
            content,
            content_chars: short(content_chars),
            has_token: has_text || like.refusal,
            ..*like
        })
    }

    /// The content string of a chunk like the shape, `len` bytes long,
    /// where it is in that chunk's tail.
    fn in_tail(&self, len: usize) -> Text {
        Text::InTail(short(self.in_tail.start)..short(self.in_tail.start + len))
    }
}

/// A JSON string's body as [`string_body`] read it.
enum Body<'a> {
    /// Plain ASCII: the bytes are the text.
    Ascii,
    /// Plain UTF-8 text, without escapes.
    Text(&'a str),
    /// Text with escapes, decoded.
    Decoded(String),
}

/// The text of a JSON string's body `bytes` (between its quotes), `None`
/// unless it is one whole string; `quoted` gives it with its quotes for
/// decoding escapes.
fn string_body<'a>(bytes: &'a [u8], quoted: impl FnOnce() -> Option<&'a [u8]>) -> Option<Body<'a>> {
    // Most text has nothing to look at twice, and is ASCII: no UTF-8 pass.
    // (Folds without early exit: they vectorize.)
    if !bytes.iter().fold(false, |seen, &b| seen | (b == b'"') | (b == b'\\') | (b < 0x20)) {
        if bytes.is_ascii() {
            return Some(Body::Ascii);
        }
        return std::str::from_utf8(bytes).ok().map(Body::Text);
    }
    let mut escaped = false;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' | 0..=0x1f => return None,
            b'\\' => {
                escaped = true;
                // The escape must end inside the string: `\u` and 4 digits,
                // or one character (checked when decoded).
                i += if bytes.get(i + 1) == Some(&b'u') { 6 } else { 2 };
                if i > bytes.len() {
                    return None;
                }
            }
            _ => i += 1,
        }
    }
    if !escaped {
        return std::str::from_utf8(bytes).ok().map(Body::Text);
    }
    serde_json::from_slice::<String>(quoted()?).ok().map(Body::Decoded)
}

/// The characters of `text`: its bytes that do not continue a character
/// (one pass the compiler can vectorize).
pub(super) fn chars(text: &str) -> usize {
    text.bytes().filter(|&b| b & 0xC0 != 0x80).count()
}

/// A chunk's content: where it is in the tail when the upstream wrote it
/// without escapes (nothing to copy out), or its decoded text.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum Text {
    InTail(Range<u32>),
    Own(Box<str>),
}

/// What every checked chunk of a stream stamped with `stamp` starts with:
/// `data: {"id":…,"object":"chat.completion.chunk","created":…,"model":…`,
/// the upstream's own fields (each written as `,"key":value`) to follow.
pub fn chunk_prefix(stamp: &Stamp) -> Vec<u8> {
    let mut out = Vec::with_capacity(stamp.id.len() + stamp.model.len() + 96);
    out.extend_from_slice(b"data: ");
    write_stamp(stamp, "chat.completion.chunk", &mut out);
    out
}

/// `{"id":…,"object":<object>,"created":…,"model":…`: the stamp, written
/// in front of an upstream's own fields.
fn write_stamp(stamp: &Stamp, object: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"id\":\"");
    out.extend_from_slice(stamp.id.as_bytes());
    out.extend_from_slice(b"\",\"object\":\"");
    out.extend_from_slice(object.as_bytes());
    out.extend_from_slice(b"\",\"created\":");
    out.extend_from_slice(crate::digits::decimal(stamp.created, &mut [0; 20]));
    out.extend_from_slice(b",\"model\":");
    write_string(out, &stamp.model);
}
