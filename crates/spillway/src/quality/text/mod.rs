//! The text judge: one pass over an answer's final text that finds the
//! signals the text itself shows — near-empty content, the wrong script,
//! degenerate repetition — plus a refusal the answer declared.
//!
//! It runs once per answer when the answer ends (whole, or a stream at its
//! end), only for cascades with `quality:` configured, and only over
//! bounded text: the pass ([`scan`]) reads an answer's first 256 and
//! last 512 bytes when it is longer (see [`scan`] for why the sample
//! holds). The guards keep false positives out: code (fenced, inline, or
//! text that looks like code) is never judged for its script or its
//! repetition, JSON answers are not judged for their script, a short
//! answer to a short question is not near-empty, and a script is only
//! judged with enough letters on both sides.

mod scan;

use super::{Signal, Signals};

/// The most characters of a prompt counted for its length.
pub const MAX_SCAN: usize = 16_384;
/// Bytes of a prompt (or a canary's answer) read for its script: enough
/// letters to tell, whatever the prompt's length (a RAG prompt may be
/// hundreds of kilobytes, and the facts are found for every request).
const SCRIPT_SAMPLE: usize = 2048;

/// Letters a prompt needs before its script counts.
const PROMPT_LETTERS: u32 = 4;
/// Letters (outside code) an answer needs before its script is judged.
const ANSWER_LETTERS: u32 = 20;
/// A script "dominates" text when it has at least this share of its letters.
const DOMINANT_SHARE: f64 = 0.6;

/// A writing system, as far as the judge tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// Latin letters (English and most European languages).
    Latin,
    /// Cyrillic letters (Russian and others).
    Cyrillic,
    /// Chinese, Japanese and Korean characters.
    Cjk,
}

impl Script {
    /// A short label for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Latin => "latin",
            Self::Cyrillic => "cyrillic",
            Self::Cjk => "cjk",
        }
    }

    /// The script of a character, if it is a letter of one.
    fn of(c: char) -> Option<Self> {
        match c {
            'a'..='z' | 'A'..='Z' => Some(Self::Latin),
            '\u{00C0}'..='\u{024F}' if c.is_alphabetic() => Some(Self::Latin),
            '\u{0400}'..='\u{04FF}' => Some(Self::Cyrillic),
            '\u{3040}'..='\u{30FF}' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{AC00}'..='\u{D7AF}' => {
                Some(Self::Cjk)
            }
            _ => None,
        }
    }

    /// Parses a config label.
    pub fn parse(label: &str) -> Option<Self> {
        [Self::Latin, Self::Cyrillic, Self::Cjk].into_iter().find(|s| s.as_str() == label)
    }
}

/// Letters per script.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Letters {
    latin: u32,
    cyrillic: u32,
    cjk: u32,
}

impl Letters {
    fn add(&mut self, s: Script) {
        match s {
            Script::Latin => self.latin += 1,
            Script::Cyrillic => self.cyrillic += 1,
            Script::Cjk => self.cjk += 1,
        }
    }

    fn total(self) -> u32 {
        self.latin + self.cyrillic + self.cjk
    }

    /// The script with at least [`DOMINANT_SHARE`] of at least `min` letters.
    pub fn dominant(self, min: u32) -> Option<Script> {
        let total = self.total();
        if total < min.max(1) {
            return None;
        }
        [(Script::Latin, self.latin), (Script::Cyrillic, self.cyrillic), (Script::Cjk, self.cjk)]
            .into_iter()
            .find(|(_, n)| f64::from(*n) >= DOMINANT_SHARE * f64::from(total))
            .map(|(s, _)| s)
    }

    /// Counts the letters of `text`'s first 2 KiB: ASCII and the
    /// two-byte Cyrillic letters by arithmetic, the rest by [`Script::of`].
    pub fn of(text: &str) -> Self {
        let mut l = Self::default();
        let bytes = text.as_bytes();
        let end = scan::floor_boundary(text, SCRIPT_SAMPLE.min(bytes.len()));
        let mut i = 0;
        while i < end {
            let b = bytes[i];
            if b < 0x80 {
                l.latin += u32::from(b.is_ascii_alphabetic());
                i += 1;
            } else if b == 0xD0 || b == 0xD1 {
                l.cyrillic += 1;
                i += 2;
            } else {
                let Some(c) = text.get(i..).and_then(|t| t.chars().next()) else { break };
                if let Some(s) = Script::of(c) {
                    l.add(s);
                }
                i += c.len_utf8();
            }
        }
        l
    }
}

/// What the judge needs to know of the prompt (its last user message),
/// found once when the request is parsed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptFacts {
    /// The script that dominates it, when one does.
    pub script: Option<Script>,
    /// Its length in characters (up to [`MAX_SCAN`]).
    pub chars: u32,
}

impl PromptFacts {
    /// The facts of a prompt's last user message.
    pub fn of(text: &str) -> Self {
        // Characters are the bytes that do not continue one (10xxxxxx),
        // counted over at most four bytes a character.
        let head = &text.as_bytes()[..text.len().min(4 * MAX_SCAN)];
        let chars = head.iter().filter(|b| **b & 0xC0 != 0x80).count().min(MAX_SCAN);
        let chars = u32::try_from(chars).unwrap_or(u32::MAX);
        Self { script: Letters::of(text).dominant(PROMPT_LETTERS), chars }
    }
}

/// What the judge is told of an answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Answer<'a> {
    /// Choice 0's content.
    pub content: &'a str,
    /// The answer called a tool (its content may be empty).
    pub tool_called: bool,
    /// The answer declared a refusal (`refusal`, or `content_filter`).
    pub refusal: bool,
    /// The content is JSON the client asked for (not judged for its script).
    pub json: bool,
}

/// The text rules of a cascade's `quality:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextRules {
    /// Content with fewer visible characters is near-empty — when the
    /// prompt is at least four times as long (a short answer to a short
    /// question is fine).
    pub min_chars: u32,
}

impl Default for TextRules {
    fn default() -> Self {
        Self { min_chars: 1 }
    }
}

/// The signals an answer's text shows, given its prompt and the rules.
pub fn judge(answer: &Answer<'_>, prompt: PromptFacts, rules: TextRules) -> Signals {
    let mut out = Signals::NONE;
    if answer.refusal {
        out.add(Signal::Refusal);
    }
    if answer.tool_called {
        return out;
    }
    let s = scan::scan(answer.content, rules.min_chars);
    let short = s.visible < rules.min_chars;
    if s.visible == 0 || (short && prompt.chars >= rules.min_chars.saturating_mul(4)) {
        out.add(Signal::Empty);
    }
    // Code answers are judged for neither script nor repetition: fenced
    // and inline code is left out of the letters and the words, and text
    // that looks like code throughout is left alone.
    let looks_like_code = s.code_marks.saturating_mul(12) > s.sampled_visible;
    if !answer.json && !looks_like_code {
        if let (Some(asked), Some(answered)) = (prompt.script, s.letters.dominant(ANSWER_LETTERS)) {
            if asked != answered {
                out.add(Signal::WrongScript);
            }
        }
    }
    if !looks_like_code && s.repeated {
        out.add(Signal::Repetition);
    }
    out
}

#[cfg(test)]
mod tests;
