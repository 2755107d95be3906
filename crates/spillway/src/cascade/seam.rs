//! Where an instructed continuation meets the partial answer: finding what
//! the next model repeats, anywhere in the partial answer, and sending only
//! what is new.
//!
//! A model told to continue a cut answer (`Mode::Instruct`) often repeats
//! the end of it — or starts over, from the first word or from the start of
//! one of its sentences (issue 24 §2: a partial of 590 characters, a model
//! that restarted, 3,280 characters for an answer of 2,690). The new text
//! is followed, as it arrives, along every place of the partial answer it
//! could be repeating from ([`Seam::feed`]):
//!
//! - any position in the last [`TAIL_CHARS`] characters (the repeated end,
//!   cut with [`overlap`]'s rules: four characters or whole words);
//! - the start of the partial answer and of each of its sentences (after
//!   `.`, `!`, `?`, `…` or a line break), anywhere in it, leading
//!   whitespace of the new text aside.
//!
//! While the new text could still be a repetition it is held back, but at
//! most [`HOLD`] bytes of it: past that, a repetition is taken as certain,
//! and the new text is dropped — not held — for as long as it keeps
//! repeating the partial answer. Where it reaches the end of the partial
//! answer, what follows is new and is sent; where it departs from it, it
//! is sent from there (the client already has what was dropped: it is in
//! the partial answer). Text that stops matching before [`HOLD`] bytes is
//! sent whole, less a repeated end.
//!
//! Cost: one substring search of the partial answer (at most 1 MiB) when
//! the first text arrives, then a comparison per candidate place per
//! delta; the candidates thin out within a few characters.

use crate::api::continuation::overlap;

/// The most bytes of the next model's text held back while deciding.
pub const HOLD: usize = 256;

/// The end of the partial answer, in characters, where a repetition may
/// start at any position (not only at a sentence's start).
pub const TAIL_CHARS: usize = 512;

/// Bytes of the new text's start searched for in the partial answer: a
/// sentence start found by it is then compared in full.
const PROBE: usize = 32;

/// One place of the partial answer the new text may be repeating from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    /// Where the repetition starts in the partial answer.
    from: usize,
    /// The next byte of the partial answer the new text must match.
    at: usize,
    /// Leading whitespace of the new text passed over (sentence starts).
    skip: usize,
}

/// The seam of one instructed continuation; see the module docs.
#[derive(Debug, Default)]
pub struct Seam {
    /// New text held back (only before a repetition is certain).
    held: String,
    places: Vec<Place>,
    /// The places were looked for (once the new text had a visible character).
    found: bool,
    /// A repetition longer than [`HOLD`] was seen: repeated text is dropped.
    sure: bool,
    /// Bytes of `held` known to repeat the end of the partial answer.
    cut: usize,
}

impl Seam {
    /// Takes the next text of the new model. `Some(text)` once the seam is
    /// decided: what to send now (maybe empty); after it, text passes as is.
    /// `None`: held or dropped, nothing to send yet.
    pub fn feed(&mut self, partial: &str, text: &str) -> Option<String> {
        if text.is_empty() {
            return None;
        }
        if self.sure {
            return self.follow(partial, text);
        }
        let before = self.held.len();
        self.held.push_str(text);
        if !self.found {
            if self.held.trim_start().is_empty() {
                return None;
            }
            self.found = true;
            self.places = places(partial, &self.held);
            self.advance(partial, 0);
        } else {
            self.advance(partial, before);
        }
        if self.places.is_empty() {
            return Some(self.held[self.cut..].to_string());
        }
        if self.held.len() >= HOLD {
            self.sure = true;
            self.held = String::new();
        }
        None
    }

    /// The new model's text ended while the seam was open: what to send.
    pub fn finish(&mut self, partial: &str) -> String {
        if self.sure {
            return String::new();
        }
        let whole = self.places.iter().any(|p| p.at == partial.len());
        let tail = tail_start(partial);
        let cut = if whole { self.held.len() } else { self.cut.max(overlap(&partial[tail..], &self.held)) };
        self.held[cut..].to_string()
    }

    /// The bytes held back now (never much more than [`HOLD`]).
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Moves every place over `held[from..]`, dropping those it departs
    /// from; a place it takes to the end of the partial answer marks the
    /// repeated part of `held` (when [`overlap`]'s rules accept it).
    fn advance(&mut self, partial: &str, from: usize) {
        let held = self.held.as_bytes();
        let mut cut = self.cut;
        self.places.retain_mut(|p| {
            let start = from.max(p.skip);
            let new = held.get(start..).unwrap_or_default();
            let rest = partial.as_bytes().get(p.at..).unwrap_or_default();
            let common = common_prefix(rest, new);
            if common == new.len() {
                p.at += common;
                return true;
            }
            if common == rest.len() && accepted(partial, p.from) {
                cut = cut.max(start + common);
            }
            false
        });
        self.cut = cut;
    }

    /// After a certain repetition: drops `text` while it repeats the
    /// partial answer; sends what follows its end or where it departs.
    fn follow(&mut self, partial: &str, text: &str) -> Option<String> {
        let (mut ended, mut departed) = (None::<usize>, 0);
        self.places.retain_mut(|p| {
            let rest = partial.as_bytes().get(p.at..).unwrap_or_default();
            let common = common_prefix(rest, text.as_bytes());
            if common == text.len() && p.at + common < partial.len() {
                p.at += common;
                return true;
            }
            if common == rest.len() {
                ended = Some(ended.map_or(common, |e| e.max(common)));
            } else {
                departed = departed.max(common);
            }
            false
        });
        if let Some(n) = ended {
            self.places.clear();
            return Some(text[n..].to_string());
        }
        if self.places.is_empty() {
            let mut n = departed;
            while !text.is_char_boundary(n) {
                n -= 1;
            }
            return Some(text[n..].to_string());
        }
        None
    }
}

/// Where the last [`TAIL_CHARS`] characters of `partial` start.
fn tail_start(partial: &str) -> usize {
    partial.char_indices().rev().nth(TAIL_CHARS - 1).map_or(0, |(i, _)| i)
}

/// Whether a repetition from `from` to the end of `partial` is taken as
/// one: [`overlap`]'s rules (four characters, or whole words ending in a
/// space), which a sentence start meets by starting a word.
fn accepted(partial: &str, from: usize) -> bool {
    let repeated = &partial[from..];
    let starts_word = partial[..from].chars().next_back().is_none_or(char::is_whitespace);
    repeated.chars().nth(3).is_some() || (starts_word && repeated.ends_with(char::is_whitespace))
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Every place `held` may be repeating `partial` from: each position of
/// the tail, and each sentence start where the text (past its leading
/// whitespace) begins.
fn places(partial: &str, held: &str) -> Vec<Place> {
    let tail = tail_start(partial);
    let mut out: Vec<Place> = partial[tail..]
        .char_indices()
        .map(|(i, _)| tail + i)
        .filter(|&i| partial.as_bytes()[i] == held.as_bytes()[0])
        .map(|i| Place { from: i, at: i, skip: 0 })
        .collect();
    let skip = held.len() - held.trim_start().len();
    let visible = &held[skip..];
    let mut probe = visible.len().min(PROBE);
    while !visible.is_char_boundary(probe) {
        probe -= 1;
    }
    let probe = &visible.as_bytes()[..probe];
    for i in memchr::memmem::find_iter(partial.as_bytes(), probe) {
        if starts_sentence(partial, i) && !(skip == 0 && i >= tail) {
            out.push(Place { from: i, at: i, skip });
        }
    }
    out
}

/// `partial[i..]` starts the answer or one of its sentences.
fn starts_sentence(partial: &str, i: usize) -> bool {
    let before = &partial[..i];
    let text = before.trim_end();
    if text.is_empty() {
        return true;
    }
    let gap = &before[text.len()..];
    let last = text.chars().next_back();
    (!gap.is_empty() && (gap.contains('\n') || matches!(last, Some('.' | '!' | '?' | '…'))))
        || matches!(last, Some('。' | '！' | '？'))
}

#[cfg(test)]
#[path = "seam_tests.rs"]
mod tests;
