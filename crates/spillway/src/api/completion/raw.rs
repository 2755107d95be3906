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
    /// `model`, as `,"key":value` runs ready to be written after the stamp.
    tail: Vec<u8>,
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
        let mut tail = Vec::with_capacity(content.len() + 192);
        tail.extend_from_slice(br#","choices":[{"index":0,"message":{"role":"assistant","content":"#);
        // Strings always serialize.
        let _ = serde_json::to_writer(&mut tail, &content);
        tail.extend_from_slice(br#","refusal":"#);
        let _ = serde_json::to_writer(&mut tail, &refusal);
        tail.extend_from_slice(br#"},"logprobs":null,"finish_reason":"#);
        let _ = serde_json::to_writer(&mut tail, finish_reason);
        tail.extend_from_slice(b"}]");
        if let Some((json, _)) = usage {
            tail.extend_from_slice(br#","usage":"#);
            tail.extend_from_slice(json);
        }
        let mut bytes = Vec::with_capacity(tail.len() + 32);
        bytes.extend_from_slice(br#"{"object":"chat.completion""#);
        bytes.extend_from_slice(&tail);
        bytes.push(b'}');
        let refused = refusal.is_some_and(|r| !r.is_empty()) || finish_reason == "content_filter";
        Ok(Self {
            bytes: Bytes::from(bytes),
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
            tail,
            stamp: None,
            has_answer: checked.has_answer,
            usage: top.usage,
            usage_counted: top.usage_counted,
            content_chars: checked.content_chars,
            bytes,
            assembled: None,
        })
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
    content: Box<str>,
    other_choice: bool,
    finish_reason: Option<&'static str>,
    refusal: bool,
    /// Where the `usage` object is in `tail`, when it has one.
    usage_at: Option<Range<usize>>,
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
            content: checked.content,
            other_choice: checked.other_choice,
            finish_reason: checked.finish_reason,
            refusal: checked.refusal,
            usage_at: top.usage_in_tail.filter(|_| top.usage_counted),
        })
    }

    /// Choice 0's `finish_reason`, when this chunk sets it.
    pub fn finish_reason(&self) -> Option<&'static str> {
        self.finish_reason
    }

    /// A delta carries refusal text (only the tree has it).
    pub fn has_refusal(&self) -> bool {
        self.refusal
    }

    /// The `usage` object as the upstream wrote it, when it has one.
    pub fn usage_json(&self) -> Option<&[u8]> {
        self.usage_at.clone().and_then(|at| self.tail.get(at))
    }

    /// The content of choice 0's delta ("" when none).
    pub fn content(&self) -> &str {
        &self.content
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
    out.extend_from_slice(stamp.created.to_string().as_bytes());
    out.extend_from_slice(b",\"model\":");
    // A string always serializes.
    let _ = serde_json::to_writer(&mut *out, &stamp.model);
}
