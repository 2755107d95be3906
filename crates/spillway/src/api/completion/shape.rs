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
//! exactly what the whole check gave. (The cutting and the comparing are
//! `slots.rs`'s, shared with the shapes of stream chunks.)

use super::chunk_shape::{ChunkShape, ChunkShapes};
use super::raw::{Found, RawCompletion};
use super::slots::Slotted;
use crate::api::lex::Str;
use arc_swap::ArcSwapOption;
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// An answer cut into the values that change from one answer to the next
/// and the bytes between them.
struct AnswerShape {
    slotted: Slotted,
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
        let slotted = Slotted::of(text, raw.tail(), false)?;
        let mut found = raw.found();
        if slotted.has_content() {
            found.has_answer = slotted.refusal;
            found.content_chars = 0;
        }
        let shape = Self { slotted, found, fitted: AtomicBool::new(false) };
        // Filled from its own answer, it must give what the check gave.
        let again = shape.fill(body)?;
        (again.found() == raw.found() && again.tail() == raw.tail()).then_some(shape)
    }

    /// `body` checked against the shape: `None` when it differs outside
    /// the slots or a slot does not hold a value of its kind.
    fn fill(&self, body: &Bytes) -> Option<RawCompletion> {
        let filled = self.slotted.fill(body)?;
        let mut found = self.found;
        if let Some((_, content)) = &filled.content {
            let (blank, chars) = match content {
                // No control characters in a plain run: a blank is a space.
                Str::Ascii(text) => (text.iter().all(|&b| b == b' '), text.len()),
                Str::Text(text) => (text.trim().is_empty(), super::raw::chars(text)),
            };
            found.has_answer |= !blank;
            found.content_chars += chars;
        }
        if let Some(n) = filled.input {
            found.usage.as_mut()?.input = n;
        }
        if let Some(n) = filled.output {
            found.usage.as_mut()?.output = n;
        }
        let tail = self.slotted.tail(body, Some(body), &filled)?;
        Some(RawCompletion::from_found(body.clone(), tail, found))
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
    /// The shapes of its streams' chunks.
    chunks: Arc<ChunkShapes>,
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
    /// A new stream's view of the provider's chunk shapes.
    pub fn stream(&self) -> ChunkShape {
        ChunkShape::of(&self.chunks)
    }

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
pub(super) mod tests;
