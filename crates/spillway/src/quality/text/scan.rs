//! The text judge's one pass over an answer's bytes: visible characters,
//! letters per script, marks typical of code, and degenerate repetition,
//! all found in the same loop.
//!
//! ASCII bytes are classified by a table and the two-byte Cyrillic letters
//! (U+0400–047F, the lead bytes `D0`/`D1`) are decoded by arithmetic: the
//! answers judged are mostly those. Every other character takes the
//! general path (the standard library's tables); a unit test checks that
//! the fast paths agree with it.
//!
//! Repetition needs no list of words: each word is hashed as it is read
//! and compared with the last [`MAX_NGRAM`] words' hashes (a ring), one
//! run counter per n-gram length; once a run is long enough the rest of
//! the words are not compared. An answer longer than 768 bytes is
//! sampled: its first [`HEAD`] and last [`TAIL`] bytes are read and the
//! middle is skipped — a drift of script shows in both (together some
//! 350 letters of Russian), and a model stuck in a loop keeps looping to
//! its last token, so the tail holds the loop (8 words 4 times over need
//! about 400 bytes of Russian).

use super::Letters;

/// Bytes read from the start of a long answer.
pub const HEAD: usize = 256;
/// Bytes read from the end of a long answer.
pub const TAIL: usize = 512;
/// The longest run of words (an n-gram) checked for repetition.
const MAX_NGRAM: usize = 8;
/// Words a repeated run of `n` words (index `n - 1`) must cover before it
/// is degenerate: 24 words, and at least 4 repeats — 24 times the same
/// word, 12 times the same pair, …, 4 times the same 8 words.
const NEED: [usize; MAX_NGRAM] = [24, 24, 24, 24, 20, 24, 28, 32];

/// FNV-1a's offset basis and prime: a word's hash, a character at a time.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// Classes of an ASCII byte ([`ASCII`]).
const SPACE: u8 = 1;
const WORD: u8 = 2;
const MARK: u8 = 4;
const TICK: u8 = 8;
const LATIN: u8 = 16;

/// The class of each ASCII byte: whitespace (`char::is_whitespace`), word
/// characters (alphanumeric), Latin letters, the backtick, and characters
/// typical of code (`{};=<>()[]`).
const ASCII: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        let c = i as u8;
        table[i] = match c {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C => SPACE,
            b'a'..=b'z' | b'A'..=b'Z' => WORD | LATIN,
            b'0'..=b'9' => WORD,
            b'`' => TICK,
            b'{' | b'}' | b';' | b'=' | b'<' | b'>' | b'(' | b')' | b'[' | b']' => MARK,
            _ => 0,
        };
        i += 1;
    }
    table
};

/// What one pass over the text found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Non-whitespace characters (a long answer's middle only counted when
    /// the samples have too few, and then without Unicode's other spaces).
    pub visible: u32,
    /// Non-whitespace characters of what was read: the share of code
    /// marks is taken of these.
    pub sampled_visible: u32,
    /// Letters outside code, per script.
    pub letters: Letters,
    /// Characters typical of code outside fences (`{};=<>()[]`).
    pub code_marks: u32,
    /// Some run of 1 to [`MAX_NGRAM`] words outside code repeated back to
    /// back long enough (see [`NEED`]).
    pub repeated: bool,
}

/// Scans `text`, or its first [`HEAD`] and last [`TAIL`] bytes when it is
/// longer than both. The middle of a long answer is skipped but for its
/// backticks, so that whether the tail is code stays exact; its visible
/// characters are counted (ASCII whitespace aside) only when the samples
/// have fewer than `min_visible`.
pub fn scan(text: &str, min_visible: u32) -> Scan {
    let mut pass = Pass { word: FNV_OFFSET, ..Pass::default() };
    let mut rep = Repeats::default();
    let len = text.len();
    let mut visible = 0;
    if len <= HEAD + TAIL {
        pass.run(text, 0, len, &mut rep);
    } else {
        let (head, tail) = (floor_boundary(text, HEAD), ceil_boundary(text, len - TAIL));
        pass.run(text, 0, head, &mut rep);
        pass.end_word(&mut rep);
        let middle = &text.as_bytes()[head..tail];
        pass.skip(middle);
        pass.run(text, tail, len, &mut rep);
        if pass.visible < min_visible {
            visible = middle.iter().filter(|b| visible_byte(**b)).count();
        }
    }
    pass.end_word(&mut rep);
    Scan {
        visible: pass.visible.saturating_add(u32::try_from(visible).unwrap_or(u32::MAX)),
        sampled_visible: pass.visible,
        letters: Letters { latin: pass.latin, cyrillic: pass.cyrillic, cjk: pass.cjk },
        code_marks: pass.marks,
        repeated: rep.found,
    }
}

/// A byte that starts a character other than ASCII whitespace.
fn visible_byte(b: u8) -> bool {
    b & 0xC0 != 0x80 && !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)
}

/// The char boundary at or before `i`.
pub(super) fn floor_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The char boundary at or after `i`.
fn ceil_boundary(text: &str, mut i: usize) -> usize {
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// What the loop carries from character to character. [`Pass::run`]
/// works on a copy in a local, which the compiler keeps in registers
/// (fields behind `&mut self` would be stored and loaded each character).
#[derive(Debug, Clone, Copy, Default)]
struct Pass {
    visible: u32,
    latin: u32,
    cyrillic: u32,
    cjk: u32,
    marks: u32,
    /// Inside a code fence, or inline code.
    fence: bool,
    inline: bool,
    /// Backticks in a row, not yet acted on.
    ticks: u32,
    /// The hash of the word being read, and whether one is.
    word: u64,
    in_word: bool,
}

/// The repetition check: the last [`MAX_NGRAM`] words' hashes (a ring, by
/// word number) and, per n-gram length, how many words in a row equalled
/// the word `n` before them.
#[derive(Debug, Default)]
struct Repeats {
    ring: [u64; MAX_NGRAM],
    words: usize,
    runs: [usize; MAX_NGRAM],
    found: bool,
}

impl Repeats {
    /// One more word. Branch-free over the n-gram lengths; a slot not yet
    /// written holds 0, which no word's hash is.
    fn push(&mut self, h: u64) {
        let h = h.max(1);
        let seen = self.words;
        let mut found = false;
        for (n, (run, need)) in self.runs.iter_mut().zip(NEED).enumerate() {
            let same = self.ring[seen.wrapping_sub(n + 1) % MAX_NGRAM] == h;
            *run = if same { *run + 1 } else { 0 };
            found |= *run + n + 1 >= need;
        }
        self.found |= found;
        self.ring[seen % MAX_NGRAM] = h;
        self.words = seen + 1;
    }
}

impl Pass {
    /// Reads `text[from..to]` (both char boundaries).
    fn run(&mut self, text: &str, from: usize, to: usize, rep: &mut Repeats) {
        let bytes = text.as_bytes();
        let mut p = *self;
        let mut i = from;
        while i < to {
            let b = bytes[i];
            if b < 0x80 {
                p.ascii(b, rep);
                i += 1;
            } else if (b == 0xD0 || b == 0xD1) && i + 1 < to {
                // A two-byte sequence: 110xxxxx 10yyyyyy.
                let cp = (u32::from(b & 0x1F) << 6) | u32::from(bytes[i + 1] & 0x3F);
                p.cyrillic(cp);
                i += 2;
            } else {
                let Some(c) = text.get(i..).and_then(|t| t.chars().next()) else { break };
                p.other(c, rep);
                i += c.len_utf8();
            }
        }
        *self = p;
    }

    /// Follows the backticks of a skipped middle: runs of them act as
    /// they would have had every character been read.
    fn skip(&mut self, middle: &[u8]) {
        // Where the last backtick was, one past it; a run pending from the
        // head counts as ending right before the middle.
        let mut after_last = (self.ticks > 0).then_some(0);
        // Most answers have no backtick: 64 bytes at a time, a loop the
        // compiler vectorises, finds that out.
        let ticks = middle.chunks(64).any(|c| c.iter().fold(false, |any, b| any | (*b == b'`')));
        let positions = middle.iter().enumerate().filter(|(_, b)| ticks && **b == b'`').map(|(i, _)| i);
        for i in positions {
            if after_last != Some(i) {
                self.after_ticks();
            }
            self.ticks += 1;
            after_last = Some(i + 1);
        }
        if after_last != Some(middle.len()) {
            self.after_ticks();
        }
    }

    /// Acts on the backticks just ended: three or more open or close a
    /// fence, fewer inline code (outside a fence).
    #[inline(always)]
    fn after_ticks(&mut self) {
        if self.ticks > 0 {
            if self.ticks >= 3 {
                self.fence = !self.fence;
            } else if !self.fence {
                self.inline = !self.inline;
            }
            self.ticks = 0;
        }
    }

    /// One ASCII character.
    #[inline(always)]
    fn ascii(&mut self, b: u8, rep: &mut Repeats) {
        let class = ASCII[usize::from(b)];
        if class & TICK != 0 {
            self.ticks += 1;
            self.end_word(rep);
            return;
        }
        self.after_ticks();
        self.visible += u32::from(class & SPACE == 0);
        if self.fence | self.inline {
            return;
        }
        self.marks += u32::from(class & MARK != 0);
        if class & WORD != 0 {
            self.latin += u32::from(class & LATIN != 0);
            self.hash(u32::from(b.to_ascii_lowercase()));
        } else {
            self.end_word(rep);
        }
    }

    /// One letter of U+0400–047F: all Cyrillic, all word characters.
    #[inline(always)]
    fn cyrillic(&mut self, cp: u32) {
        self.after_ticks();
        self.visible += 1;
        if self.fence | self.inline {
            return;
        }
        self.cyrillic += 1;
        self.hash(cyrillic_lower(cp));
    }

    /// Any other character, by the standard library's tables.
    fn other(&mut self, c: char, rep: &mut Repeats) {
        self.after_ticks();
        self.visible += u32::from(!c.is_whitespace());
        if self.fence | self.inline {
            return;
        }
        let script = super::Script::of(c);
        match script {
            Some(super::Script::Latin) => self.latin += 1,
            Some(super::Script::Cyrillic) => self.cyrillic += 1,
            Some(super::Script::Cjk) => self.cjk += 1,
            None => {}
        }
        if script == Some(super::Script::Cjk) {
            // A CJK character is a word of its own.
            self.end_word(rep);
            rep.push(u64::from(u32::from(c)));
        } else if c.is_alphanumeric() {
            self.hash(u32::from(c.to_lowercase().next().unwrap_or(c)));
        } else {
            self.end_word(rep);
        }
    }

    /// Adds a (lowercased) character to the word being read.
    #[inline(always)]
    fn hash(&mut self, c: u32) {
        self.word = (self.word ^ u64::from(c)).wrapping_mul(FNV_PRIME);
        self.in_word = true;
    }

    /// Ends the word being read, if any.
    #[inline(always)]
    fn end_word(&mut self, rep: &mut Repeats) {
        if self.in_word {
            if !rep.found {
                rep.push(self.word);
            }
            self.word = FNV_OFFSET;
            self.in_word = false;
        }
    }
}

/// The lowercase of a letter of U+0400–047F, by arithmetic: `Ѐ`–`Џ` are
/// 80 below theirs, `А`–`Я` 32 below, and U+0460–047F alternate capital
/// and small.
fn cyrillic_lower(cp: u32) -> u32 {
    match cp {
        0x400..=0x40F => cp + 80,
        0x410..=0x42F => cp + 32,
        0x460..=0x47F => cp | 1,
        _ => cp,
    }
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
