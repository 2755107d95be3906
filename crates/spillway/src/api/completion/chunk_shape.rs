//! Stream chunks checked against the shapes of the provider's earlier
//! chunks.
//!
//! An upstream writes the chunks of its streams alike: a first chunk with
//! the role, chunks of content, a chunk with the finish reason, at times
//! one with `usage` — each kind the same from one stream to the next but
//! for its id, `created`, its content, its counts, and (OpenAI's, on by
//! default) a random `obfuscation` string in every chunk. A
//! [`ChunkShape`] holds, for one stream, the provider's shapes of those
//! kinds ([`super::slots::Slotted`]: a checked chunk cut into those values
//! and the bytes between them), shared by every stream of the provider
//! through [`ChunkShapes`]; a chunk equal to one of them outside its
//! slots, each slot holding a value of its kind, is one the whole check
//! ([`RawChunk::check`]) would pass with the same findings, and only its
//! slots are read. A chunk like none takes the whole check, and what
//! passes it becomes a new shape (kept only if filling it from its own
//! chunk gives exactly what the whole check gave).

use super::raw::{short, ChunkUsage, LastChunk, RawChunk, Text};
use super::slots::Slotted;
use crate::api::lex::Str;
use crate::api::tokens::Tokens;
use arc_swap::ArcSwapOption;
use bytes::Bytes;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// At most this many shapes a provider: a stream's kinds of chunk (the
/// role's, content, the finish, usage) and room for a few more.
const MAX_SHAPES: usize = 8;

/// No shape is made of a longer chunk: a shape keeps a copy of its chunk
/// for as long as the provider lives, and an event may be far longer than
/// the few hundred bytes of a chunk of a stream (such a chunk is checked
/// whole).
const MAX_MOLDED: usize = 16 * 1024;

/// A stream that has made this many shapes in a row that no later chunk
/// fitted (chunks that differ every time outside the slots: a value the
/// shape does not slot) makes a new one on one miss in [`RETRY`] only: a
/// shape costs about as much again as the whole check.
const STRIKES: u32 = 3;
const RETRY: u32 = 16;

/// Where a chunk's content string is in its data and in its tail, when it
/// is there as written (no escapes): what a [`LastChunk`] is made of.
type InPlace = Option<(usize, usize)>;

/// A checked chunk cut into its slots, with what its check found.
struct Mold {
    slotted: Slotted,
    /// The chunk it was made of.
    like: RawChunk,
    /// A chunk other than its own has fitted it.
    fitted: AtomicBool,
}

impl Mold {
    /// The shape of `data`, a chunk that passed the whole check as `chunk`.
    fn of(data: &str, chunk: &RawChunk) -> Option<Self> {
        let slotted = Slotted::of(data, &chunk.tail, true)?;
        // Content without a slot is the same in every chunk like it: the
        // chunk's own copy.
        if !slotted.has_content() && !matches!(chunk.content, Text::Own(_)) {
            return None;
        }
        let mold = Self { slotted, like: chunk.clone(), fitted: AtomicBool::new(false) };
        (mold.fill(data.as_bytes(), None).map(|(again, _)| again).as_ref() == Some(chunk)).then_some(mold)
    }

    /// `data` (a slice of `piece`, if it is) checked against the shape;
    /// with the chunk, where its content string is in `data` and in the
    /// chunk's tail when it is in place there.
    fn fill(&self, data: &[u8], piece: Option<&Bytes>) -> Option<(RawChunk, InPlace)> {
        let filled = self.slotted.fill(data)?;
        let like = &self.like;
        let tail = self.slotted.tail(data, piece, &filled)?;
        let mut in_place = None;
        let (content, content_chars, has_token) = match &filled.content {
            None => (like.content.clone(), like.content_chars, like.has_token),
            Some((at, text)) => {
                let (content, chars, len) = match text {
                    Str::Ascii(text) => (None, text.len(), text.len()),
                    Str::Text(Cow::Borrowed(text)) => (None, super::raw::chars(text), text.len()),
                    Str::Text(Cow::Owned(text)) => {
                        (Some(Text::Own(text.as_str().into())), super::raw::chars(text), text.len())
                    }
                };
                let content = match content {
                    Some(own) => own,
                    None => {
                        let start = self.slotted.in_tail(&filled, *at)?;
                        in_place = Some((*at, start));
                        Text::InTail(short(start)..short(start + len))
                    }
                };
                (content, short(chars), len > 0 || like.refusal)
            }
        };
        let usage = match &like.usage {
            None => None,
            Some(u) => {
                let tokens = Tokens {
                    input: filled.input.unwrap_or(u.tokens.input),
                    output: filled.output.unwrap_or(u.tokens.output),
                };
                let at = match u.at {
                    Some(_) => Some(self.slotted.usage_in_tail(&filled)?),
                    None => None,
                };
                Some(Box::new(ChunkUsage { tokens, at }))
            }
        };
        Some((RawChunk { tail, usage, content, content_chars, has_token, ..*like }, in_place))
    }
}

impl RawChunk {
    /// [`Self::check`] for the next event of a stream, against what the
    /// stream and its provider saw before (`shape`: `chunk_shape.rs`): an
    /// event equal to an earlier checked one outside its slots (its
    /// content string; across streams also its id, `created`, counts,
    /// `obfuscation`) has the same structure (JSON's structure lies
    /// outside its scalar values), so only the slots are read. Anything
    /// else takes the whole check, and a chunk that passes it becomes a
    /// new shape.
    ///
    /// `data` as the upstream sent it: only what is read is checked to be
    /// UTF-8 (the slots' strings, or the whole event when it takes the
    /// whole check; not UTF-8 is a `None`).
    pub fn check_like(data: &[u8], shape: &mut ChunkShape) -> Option<Self> {
        Self::check_like_in(data, None, shape)
    }

    /// [`Self::check_like`] for `data` read in place from `piece` (the
    /// upstream's read it is a slice of, if it is): a chunk like a shape
    /// whose entries after the stamp's lie in one run keeps its tail as a
    /// slice of the piece, uncopied.
    pub fn check_like_in(data: &[u8], piece: Option<&Bytes>, shape: &mut ChunkShape) -> Option<Self> {
        shape.check(data, piece)
    }
}

/// The shapes of a provider's chunks, shared by its streams on every
/// serving thread: read once a stream, without a lock.
#[derive(Default)]
pub struct ChunkShapes {
    last: ArcSwapOption<Vec<Arc<Mold>>>,
}

impl std::fmt::Debug for ChunkShapes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChunkShapes")
    }
}

/// What one stream checks its chunks against ([`RawChunk::check_like`]):
/// its own last chunk first (its content string alone differs in most
/// events), then its provider's chunk shapes.
pub struct ChunkShape {
    last: LastChunk,
    /// Which shape `last` was made from (its address), and whether a chunk
    /// has fitted it since: a stream whose chunks fit the same shape but
    /// never `last` (OpenAI's, a new `obfuscation` in each) does not make
    /// it again for each.
    last_from: usize,
    last_fitted: bool,
    shared: Arc<ChunkShapes>,
    shapes: Option<Arc<Vec<Arc<Mold>>>>,
    /// The shape the last chunk fitted: the next is tried against it first,
    /// then the ones after it (a stream's kinds come in the order their
    /// shapes were made).
    next: usize,
    /// The last shape this stream made, and how many it made in a row that
    /// nothing fitted.
    made: Option<Arc<Mold>>,
    strikes: u32,
    misses: u32,
}

impl Default for ChunkShape {
    /// A stream's shapes of its own (no provider's).
    fn default() -> Self {
        Self::of(&Arc::new(ChunkShapes::default()))
    }
}

impl ChunkShape {
    /// A stream's view of `shared`, its provider's shapes.
    pub fn of(shared: &Arc<ChunkShapes>) -> Self {
        Self {
            last: LastChunk::default(),
            last_from: 0,
            last_fitted: false,
            shared: shared.clone(),
            shapes: shared.last.load_full(),
            next: 0,
            made: None,
            strikes: 0,
            misses: 0,
        }
    }

    /// [`RawChunk::check_like_in`]: the stream's last chunk, the
    /// provider's shapes, then the whole check.
    pub(super) fn check(&mut self, data: &[u8], piece: Option<&Bytes>) -> Option<RawChunk> {
        if let Some(chunk) = self.last.fill_in(data, piece) {
            self.last_fitted = true;
            return Some(chunk);
        }
        if let Some((chunk, at, from)) = self.fill_from(data, piece) {
            if from != self.last_from || self.last_fitted {
                self.last.keep(data, &chunk, at);
                (self.last_from, self.last_fitted) = (from, false);
            }
            return Some(chunk);
        }
        let text = std::str::from_utf8(data).ok()?;
        let (chunk, at) = RawChunk::check_at(text)?;
        self.last.keep(data, &chunk, at);
        (self.last_from, self.last_fitted) = (0, false);
        self.keep(text, &chunk);
        Some(chunk)
    }

    /// `data` checked against the provider's shapes: `None` when it fits
    /// none; with the chunk, where its content is in place (as
    /// [`Mold::fill`]) and which shape it fitted (its address).
    fn fill_from(&mut self, data: &[u8], piece: Option<&Bytes>) -> Option<(RawChunk, InPlace, usize)> {
        let shapes = self.shapes.as_ref()?;
        let n = shapes.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            let Some(mold) = shapes.get(i) else { continue };
            if let Some((chunk, at)) = mold.fill(data, piece) {
                self.next = i;
                if !mold.fitted.load(Ordering::Relaxed) {
                    mold.fitted.store(true, Ordering::Relaxed);
                }
                return Some((chunk, at, Arc::as_ptr(mold) as usize));
            }
        }
        None
    }

    /// `data` checked against the provider's shapes only.
    #[cfg(test)]
    pub(super) fn fill_in(&mut self, data: &[u8], piece: Option<&Bytes>) -> Option<RawChunk> {
        self.fill_from(data, piece).map(|(chunk, _, _)| chunk)
    }

    /// [`Self::fill_in`] on a copy.
    #[cfg(test)]
    pub(super) fn fill(&mut self, data: &[u8]) -> Option<RawChunk> {
        self.fill_in(data, None)
    }

    /// `chunk`, which `data` passed the whole check as, made a shape (and
    /// the provider's), unless this stream's shapes keep not fitting.
    fn keep(&mut self, data: &str, chunk: &RawChunk) {
        if data.len() > MAX_MOLDED {
            return;
        }
        if let Some(made) = &self.made {
            if made.fitted.load(Ordering::Relaxed) {
                self.strikes = 0;
            } else if self.strikes >= STRIKES {
                self.misses += 1;
                if self.misses % RETRY != 0 {
                    return;
                }
            } else {
                self.strikes += 1;
            }
        }
        let Some(mold) = Mold::of(data, chunk) else { return };
        let mold = Arc::new(mold);
        let mut shapes: Vec<Arc<Mold>> = self.shapes.as_deref().cloned().unwrap_or_default();
        if shapes.len() >= MAX_SHAPES {
            // One nothing fitted goes first, else the oldest.
            let unfit = shapes.iter().position(|m| !m.fitted.load(Ordering::Relaxed)).unwrap_or(0);
            shapes.remove(unfit);
        }
        shapes.push(mold.clone());
        self.next = shapes.len() - 1;
        let shapes = Arc::new(shapes);
        self.shared.last.store(Some(shapes.clone()));
        self.shapes = Some(shapes);
        self.made = Some(mold);
    }
}

#[cfg(test)]
#[path = "chunk_shape_tests.rs"]
mod tests;
