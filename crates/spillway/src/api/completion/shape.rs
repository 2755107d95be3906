//! Whole answers checked against the last one's shape.
//!
//! An upstream writes its answers alike: the same fields in the same
//! order, the same model, choice, finish reason and `usage` layout. What
//! changes from one answer to the next is a few values: the `id`,
//! `created`, the content, the token counts, now and then the
//! `system_fingerprint`. An [`AnswerShape`] is an answer that passed the
//! whole check ([`RawCompletion::check`]) cut into those values (its
//! *slots*) and the bytes between them; the next answer is checked by
//! comparing the bytes between the slots and reading only the slots.
//!
//! Why it is the same check: JSON's structure lies outside its scalar
//! values. A body equal to the shape's outside its slots, each slot
//! holding a value of its slot's kind (a string, or an integer that fits a
//! `u64`), has the shape's keys, nesting and every value the check looks
//! at other than the slots'; and the check reads the slots' values only
//! as their kind (`id`, `model`, `created`, `total_tokens`,
//! `system_fingerprint`), or as the content and the counts it reports,
//! which the fill reads from the new body. Anything else — a field added
//! or moved, another finish reason, a second choice, tool calls — differs
//! outside the slots and takes the whole check, whose answer becomes the
//! new shape. A shape is kept only if filling it from its own answer gives
//! exactly what the whole check gave.

use super::raw::{Found, RawCompletion};
use crate::api::lex::{self, Lex, Str};
use arc_swap::ArcSwapOption;
use bytes::Bytes;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// At most this many slots: an answer that passed the check has one key
/// once, and eight of them make slots (`id`, `created`, `model`,
/// `system_fingerprint`, the content and three counts).
const MAX_SLOTS: usize = 8;

/// What a slot holds, and what of it the check reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Any string.
    Text,
    /// Any integer (`created`, `total_tokens`).
    Integer,
    /// Choice 0's content: its characters, and whether it is blank.
    Content,
    /// `usage.prompt_tokens`.
    Input,
    /// `usage.completion_tokens`.
    Output,
}

/// An answer cut into the values that change from one answer to the next
/// and the bytes between them.
struct AnswerShape {
    /// The answer it was made of.
    text: Box<str>,
    /// Where its slots are in `text` (strings with their quotes), in order.
    slots: Vec<(Range<usize>, Slot)>,
    /// Its top-level entries that follow the stamp (all but `id`,
    /// `object`, `created` and `model`), each from its key's quote to the
    /// end of its value: the runs of its tail. When they lie in one run
    /// (compact JSON, the stamp's entries first: most upstreams), that run
    /// alone, from the comma before it, and `run` is set: a filled answer's
    /// tail is then a slice of its body. With each end, how many slots
    /// come before it.
    entries: Vec<(Range<usize>, [usize; 2])>,
    run: bool,
    /// What the check found, the content's part left out when it has a
    /// slot (a refusal's text still counts as an answer).
    found: Found,
    /// An answer other than its own has fitted it.
    fitted: AtomicBool,
}

impl AnswerShape {
    /// The shape of `body`, an answer that passed the whole check as `raw`; `None`
    /// when it has more than one choice or its check cannot be redone
    /// from its slots.
    fn of(raw: &RawCompletion, body: &Bytes) -> Option<Self> {
        let text = std::str::from_utf8(body).ok()?;
        let mut found = raw.found();
        let mut walk = Walk { slots: Vec::with_capacity(8), entries: Vec::with_capacity(8), refusal: false };
        walk.top(text)?;
        if walk.slots.iter().any(|(_, slot)| *slot == Slot::Content) {
            found.has_answer = walk.refusal;
            found.content_chars = 0;
        }
        let mut entries = walk.entries;
        let run = match (entries.first(), entries.last()) {
            (Some(first), Some(last)) => {
                let comma = first.start.checked_sub(1)?;
                let joined = text.get(comma..last.end)?.as_bytes();
                (joined == raw.tail()).then_some(comma..last.end)
            }
            _ => None,
        };
        if let Some(run) = &run {
            entries = vec![run.clone()];
        }
        if walk.slots.len() > MAX_SLOTS {
            return None;
        }
        let before = |at: usize| walk.slots.iter().take_while(|(slot, _)| slot.end <= at).count();
        let entries = entries.into_iter().map(|e| (e.clone(), [before(e.start), before(e.end)])).collect();
        let shape = Self {
            text: text.into(),
            slots: walk.slots,
            entries,
            run: run.is_some(),
            found,
            fitted: AtomicBool::new(false),
        };
        // Filled from its own answer, it must give what the check gave.
        let again = shape.fill(body)?;
        (again.found() == raw.found() && again.tail() == raw.tail()).then_some(shape)
    }

    /// `body` checked against the shape: `None` when it differs outside
    /// the slots or a slot does not hold a value of its kind. Only the
    /// slots' strings are checked to be UTF-8: the bytes between them are
    /// the shape's own text, and a slot starts and ends at an ASCII byte.
    fn fill(&self, body: &Bytes) -> Option<RawCompletion> {
        let (new, old) = (&body[..], self.text.as_bytes());
        let mut found = self.found;
        // How far the body's bytes have moved from the shape's after each
        // slot (none before the first).
        let mut moved = [0isize; MAX_SLOTS + 1];
        let (mut at, mut from) = (0, 0);
        for ((range, slot), by) in self.slots.iter().zip(moved.iter_mut().skip(1)) {
            let same = old.get(from..range.start)?;
            if new.get(at..at + same.len())? != same {
                return None;
            }
            at += same.len();
            at = match slot {
                Slot::Text => lex::string_at(new, at)?.0,
                Slot::Content => {
                    let (end, content) = lex::string_at(new, at)?;
                    let (blank, chars) = match content {
                        // No control characters in a plain run: a blank is a space.
                        Str::Ascii(text) => (text.iter().all(|&b| b == b' '), text.len()),
                        Str::Text(text) => (text.trim().is_empty(), super::raw::chars(&text)),
                    };
                    found.has_answer |= !blank;
                    found.content_chars += chars;
                    end
                }
                Slot::Integer => lex::integer_at(new, at)?.0,
                Slot::Input => {
                    let (end, n) = lex::integer_at(new, at)?;
                    found.usage.as_mut()?.input = n;
                    end
                }
                Slot::Output => {
                    let (end, n) = lex::integer_at(new, at)?;
                    found.usage.as_mut()?.output = n;
                    end
                }
            };
            from = range.end;
            *by = at as isize - from as isize;
        }
        if new.get(at..)? != old.get(from..)? {
            return None;
        }
        let place = |at: usize, slots: usize| at.checked_add_signed(*moved.get(slots)?);
        let tail = match &self.entries[..] {
            [(run, [s, e])] if self.run => {
                let (start, end) = (place(run.start, *s)?, place(run.end, *e)?);
                (start <= end && end <= body.len()).then(|| body.slice(start..end))?
            }
            entries => {
                let mut own = Vec::with_capacity(new.len());
                for (entry, [s, e]) in entries {
                    own.push(b',');
                    own.extend_from_slice(new.get(place(entry.start, *s)?..place(entry.end, *e)?)?);
                }
                Bytes::from(own)
            }
        };
        Some(RawCompletion::from_found(body.clone(), tail, found))
    }
}

/// One walk over an answer that passed the whole check, finding its slots
/// and its tail's entries (as `scan::split` cuts them).
struct Walk {
    slots: Vec<(Range<usize>, Slot)>,
    entries: Vec<Range<usize>>,
    /// Choice 0's refusal has text.
    refusal: bool,
}

impl Walk {
    fn top(&mut self, text: &str) -> Option<()> {
        let mut lx = Lex::new(text);
        let mut keys = Vec::with_capacity(8);
        if !lx.open(b'{', b'}')? {
            loop {
                let (start, key) = lx.key()?;
                keys.push((start, !matches!(key, "id" | "object" | "created" | "model")));
                match key {
                    "id" | "model" | "system_fingerprint" => self.string(&mut lx, Slot::Text)?,
                    "created" => self.integer(&mut lx, Slot::Integer)?,
                    "choices" => self.choices(&mut lx)?,
                    "usage" if lx.peek()? == b'{' => lx.members(|key, lx| match key {
                        "prompt_tokens" => self.integer(lx, Slot::Input),
                        "completion_tokens" => self.integer(lx, Slot::Output),
                        "total_tokens" => self.integer(lx, Slot::Integer),
                        _ => lx.skip(0),
                    })?,
                    _ => lx.skip(0)?,
                }
                if !lx.more(b'}')? {
                    break;
                }
            }
        }
        // Each entry runs from its key's quote to the next key's (or the
        // closing brace), less the comma and blanks between.
        let close = text.trim_ascii_end().len().checked_sub(1)?;
        for (i, &(start, kept)) in keys.iter().enumerate() {
            let end = keys.get(i + 1).map_or(close, |&(next, _)| next);
            let entry = text.get(start..end)?.trim_ascii_end();
            let entry = entry.strip_suffix(',').unwrap_or(entry).trim_ascii_end();
            if kept {
                self.entries.push(start..start + entry.len());
            }
        }
        Some(())
    }

    /// One choice, an object whose `message` is one (anything else, and
    /// more choices, make no shape).
    fn choices(&mut self, lx: &mut Lex<'_>) -> Option<()> {
        if lx.open(b'[', b']')? {
            return Some(());
        }
        if lx.peek()? != b'{' {
            return None;
        }
        lx.members(|key, lx| match key {
            "message" if lx.peek()? == b'{' => lx.members(|key, lx| match key {
                "content" => self.string(lx, Slot::Content),
                "refusal" => {
                    if let Some(b'"') = lx.peek() {
                        let (_, refusal) = lx.string()?;
                        self.refusal = !refusal.is_empty();
                        return Some(());
                    }
                    lx.skip(0)
                }
                _ => lx.skip(0),
            }),
            "message" => None,
            _ => lx.skip(0),
        })?;
        (!lx.more(b']')?).then_some(())
    }

    /// A string's slot, when the value is a string.
    fn string(&mut self, lx: &mut Lex<'_>, slot: Slot) -> Option<()> {
        if lx.peek()? != b'"' {
            return lx.skip(0);
        }
        let (open, _) = lx.string()?;
        self.slots.push((open..lx.pos(), slot));
        Some(())
    }

    /// An integer's slot, when the value is one that fits a `u64`.
    fn integer(&mut self, lx: &mut Lex<'_>, slot: Slot) -> Option<()> {
        if !lx.peek()?.is_ascii_digit() {
            return lx.skip(0);
        }
        let from = lx.pos();
        if let (_, Some(_)) = lx.number_text()? {
            self.slots.push((from..lx.pos(), slot));
        }
        Some(())
    }
}

/// The shape of a provider's last whole answer, shared by its attempts on
/// every serving thread: read without a lock, replaced when an answer
/// differs from it.
///
/// An upstream whose answers never fit the last one's shape (values the
/// shape does not slot that change every time: `logprobs`, per-answer
/// annotations) would pay for a new shape on every answer (a walk and a
/// copy of it, about as much again as the check). A shape that has not
/// fitted an answer is replaced on one miss in `RETRY` (16) only.
#[derive(Default)]
pub struct AnswerShapes {
    last: ArcSwapOption<AnswerShape>,
    /// Misses since the last shape was made.
    misses: AtomicU32,
}

/// One miss in this many makes a new shape while the last one has fitted
/// nothing.
const RETRY: u32 = 16;

/// No shape is made of a longer answer: a shape keeps a copy of its
/// answer for as long as the provider lives, and an upstream may send up
/// to [`crate::providers::http::MAX_BODY`] (an answer this long is checked
/// whole; its check costs far more than the copy's saving matters).
const MAX_SHAPED: usize = 256 * 1024;

impl std::fmt::Debug for AnswerShapes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AnswerShapes")
    }
}

impl AnswerShapes {
    /// [`RawCompletion::check`], against the last answer's shape first.
    pub fn check(&self, body: Bytes) -> Option<RawCompletion> {
        let last = self.last.load();
        if let Some(shape) = last.as_ref() {
            if let Some(raw) = shape.fill(&body) {
                if !shape.fitted.load(Ordering::Relaxed) {
                    shape.fitted.store(true, Ordering::Relaxed);
                }
                return Some(raw);
            }
        }
        let raw = RawCompletion::check(body.clone())?;
        if body.len() > MAX_SHAPED {
            return Some(raw);
        }
        let unfit = last.as_ref().is_some_and(|shape| !shape.fitted.load(Ordering::Relaxed));
        if unfit && self.misses.fetch_add(1, Ordering::Relaxed) % RETRY != RETRY - 1 {
            return Some(raw);
        }
        if let Some(shape) = AnswerShape::of(&raw, &body) {
            self.misses.store(0, Ordering::Relaxed);
            self.last.store(Some(Arc::new(shape)));
        }
        Some(raw)
    }

    /// An answer checked against the last one's shape only (`None` when it
    /// differs, or there is none yet).
    #[cfg(test)]
    pub(super) fn fill(&self, body: &Bytes) -> Option<RawCompletion> {
        self.last.load().as_ref().and_then(|shape| shape.fill(body))
    }
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod tests;
