//! The text judge: one pass over an answer's final text that finds the
//! signals the text itself shows — near-empty content, the wrong script,
//! degenerate repetition — plus a refusal the answer declared.
//!
//! It runs once per answer when the answer ends (whole, or a stream at its
//! end), only for cascades with `quality:` configured, and only over
//! bounded text ([`MAX_SCAN`] characters). The guards keep false positives
//! out: code (fenced, inline, or text that looks like code) is never judged
//! for its script or its repetition, JSON answers are not judged for their
//! script, a short answer to a short question is not near-empty, and a
//! script is only judged with enough letters on both sides.

use super::{Signal, Signals};

/// The most characters of an answer (or a prompt) the judge reads.
pub const MAX_SCAN: usize = 16_384;

/// Letters a prompt needs before its script counts.
const PROMPT_LETTERS: u32 = 4;
/// Letters (outside code) an answer needs before its script is judged.
const ANSWER_LETTERS: u32 = 20;
/// A script "dominates" text when it has at least this share of its letters.
const DOMINANT_SHARE: f64 = 0.6;
/// Words kept for the repetition check.
const MAX_WORDS: usize = 4_096;
/// The longest run of words (an n-gram) checked for repetition.
const MAX_NGRAM: usize = 8;
/// Words a repeated run must cover before it is degenerate: 24 times the
/// same word, 12 times the same pair, … — and at least [`MIN_REPEATS`] times.
const REPEATED_WORDS: usize = 24;
/// Fewest repeats of a run that count.
const MIN_REPEATS: usize = 4;

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

    /// Counts the letters of `text` (its first [`MAX_SCAN`] characters).
    pub fn of(text: &str) -> Self {
        let mut l = Self::default();
        for s in text.chars().take(MAX_SCAN).filter_map(Script::of) {
            l.add(s);
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
        let chars = u32::try_from(text.chars().take(MAX_SCAN).count()).unwrap_or(u32::MAX);
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

/// What one pass over the text found.
#[derive(Debug, Default)]
struct Scan {
    /// Non-whitespace characters.
    visible: u32,
    /// Letters outside code, per script.
    letters: Letters,
    /// Characters typical of code outside fences (`{};=<>()[]`).
    code_marks: u32,
    /// Saw a code fence or inline code.
    had_code: bool,
    /// Hashes of the words outside code (a CJK character is a word).
    words: Vec<u64>,
}

fn scan(text: &str) -> Scan {
    let mut s = Scan { words: Vec::with_capacity((text.len() / 6).min(MAX_WORDS)), ..Scan::default() };
    let (mut fence, mut inline, mut ticks) = (false, false, 0usize);
    let mut word: Option<u64> = None;
    let push = |s: &mut Scan, w: &mut Option<u64>| {
        if let Some(h) = w.take() {
            if s.words.len() < MAX_WORDS {
                s.words.push(h);
            }
        }
    };
    for c in text.chars().take(MAX_SCAN) {
        if c == '`' {
            ticks += 1;
            push(&mut s, &mut word);
            continue;
        }
        if ticks > 0 {
            s.had_code = true;
            if ticks >= 3 {
                fence = !fence;
            } else if !fence {
                inline = !inline;
            }
            ticks = 0;
        }
        if !is_space(c) {
            s.visible += 1;
        }
        if fence || inline {
            continue;
        }
        if matches!(c, '{' | '}' | ';' | '=' | '<' | '>' | '(' | ')' | '[' | ']') {
            s.code_marks += 1;
        }
        let script = Script::of(c);
        if let Some(sc) = script {
            s.letters.add(sc);
        }
        if script == Some(Script::Cjk) {
            push(&mut s, &mut word);
            word = Some(u64::from(c));
            push(&mut s, &mut word);
        } else if is_word_char(c) {
            let h = word.unwrap_or(0xcbf2_9ce4_8422_2325);
            let lower = lower(c);
            word = Some((h ^ u64::from(lower)).wrapping_mul(0x0100_0000_01b3));
        } else {
            push(&mut s, &mut word);
        }
    }
    if ticks > 0 {
        s.had_code = true;
    }
    push(&mut s, &mut word);
    s
}

/// `char::is_whitespace`, without a table lookup for ASCII.
fn is_space(c: char) -> bool {
    if c.is_ascii() {
        matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0B' | '\x0C')
    } else {
        c.is_whitespace()
    }
}

/// `char::is_alphanumeric`, without a table lookup for ASCII and the
/// Cyrillic letters (U+0482–0489 are signs and marks, not letters).
fn is_word_char(c: char) -> bool {
    match c {
        _ if c.is_ascii() => c.is_ascii_alphanumeric(),
        '\u{0400}'..='\u{0481}' | '\u{048A}'..='\u{04FF}' => true,
        _ => c.is_alphanumeric(),
    }
}

/// The first character of `c`'s lowercase, by arithmetic for ASCII and
/// the basic Cyrillic letters (the answers judged are mostly those).
fn lower(c: char) -> char {
    match c {
        'A'..='Z' => c.to_ascii_lowercase(),
        'a'..='z' | 'а'..='я' => c,
        'А'..='Я' => char::from_u32(u32::from(c) + 32).unwrap_or(c),
        _ => c.to_lowercase().next().unwrap_or(c),
    }
}

/// Some run of 1 to [`MAX_NGRAM`] words repeats back to back often enough.
fn degenerate(words: &[u64]) -> bool {
    (1..=MAX_NGRAM).any(|n| {
        let need = (REPEATED_WORDS / n).max(MIN_REPEATS) * n;
        let mut run = 0usize;
        for i in n..words.len() {
            if words[i] == words[i - n] {
                run += 1;
                if run + n >= need {
                    return true;
                }
            } else {
                run = 0;
            }
        }
        false
    })
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
    let s = scan(answer.content);
    let short = s.visible < rules.min_chars;
    if s.visible == 0 || (short && prompt.chars >= rules.min_chars.saturating_mul(4)) {
        out.add(Signal::Empty);
    }
    // Code answers are judged for neither script nor repetition: fenced
    // and inline code is left out of the letters and the words, and text
    // that looks like code throughout is left alone.
    let looks_like_code = s.code_marks.saturating_mul(12) > s.visible;
    if !answer.json && !looks_like_code {
        if let (Some(asked), Some(answered)) = (prompt.script, s.letters.dominant(ANSWER_LETTERS)) {
            if asked != answered {
                out.add(Signal::WrongScript);
            }
        }
    }
    if !looks_like_code && degenerate(&s.words) {
        out.add(Signal::Repetition);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(content: &str) -> Answer<'_> {
        Answer { content, ..Answer::default() }
    }

    const RU: &str = "Расскажи, пожалуйста, как работает кэширование в браузере?";
    const RULES: TextRules = TextRules { min_chars: 1 };

    #[test]
    fn a_russian_prompt_answered_in_english_or_chinese_is_the_wrong_script() {
        let p = PromptFacts::of(RU);
        assert_eq!(p.script, Some(Script::Cyrillic));
        let en = "The browser keeps a copy of each response and reuses it while it is fresh.";
        assert_eq!(judge(&text(en), p, RULES), Signals::of(&[Signal::WrongScript]));
        let zh = "浏览器会保存每个响应的副本，并在其新鲜时重复使用它。这是缓存的基本原理。";
        assert_eq!(judge(&text(zh), p, RULES), Signals::of(&[Signal::WrongScript]));
        let ru = "Браузер хранит копию каждого ответа и использует её, пока она свежая.";
        assert_eq!(judge(&text(ru), p, RULES), Signals::NONE);
        // The reverse: an English prompt answered in Russian.
        let en_prompt = PromptFacts::of("How does browser caching work?");
        assert_eq!(judge(&text(ru), en_prompt, RULES), Signals::of(&[Signal::WrongScript]));
    }

    #[test]
    fn a_code_answer_to_a_russian_prompt_is_not_the_wrong_script() {
        let p = PromptFacts::of("Напиши функцию сложения на Rust");
        let fenced = "Вот она:\n```rust\nfn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n```";
        assert_eq!(judge(&text(fenced), p, RULES), Signals::NONE);
        let bare = "fn add(a: i32, b: i32) -> i32 { a + b }\nfn sub(a: i32, b: i32) -> i32 { a - b }";
        assert_eq!(judge(&text(bare), p, RULES), Signals::NONE);
        // JSON content is not judged for its script either.
        let json = Answer {
            content: r#"{"name": "Ivan", "city": "Moscow", "status": "active"}"#,
            json: true,
            ..Answer::default()
        };
        assert_eq!(judge(&json, p, RULES), Signals::NONE);
        // A few Latin words in a Russian answer are fine.
        let mixed = "Используйте заголовок Cache-Control и директиву max-age для управления сроком.";
        assert_eq!(judge(&text(mixed), p, RULES), Signals::NONE);
    }

    #[test]
    fn a_short_correct_answer_to_a_short_question_is_not_near_empty() {
        let rules = TextRules { min_chars: 20 };
        assert_eq!(judge(&text("4"), PromptFacts::of("What is 2+2?"), rules), Signals::NONE);
        let long = PromptFacts::of(&"Explain in detail how TCP congestion control works. ".repeat(3));
        assert_eq!(judge(&text("Ok."), long, rules), Signals::of(&[Signal::Empty]));
        assert_eq!(judge(&text("  \n"), PromptFacts::of("Hi"), RULES), Signals::of(&[Signal::Empty]));
        // A tool call needs no content.
        let call = Answer { tool_called: true, ..Answer::default() };
        assert_eq!(judge(&call, long, rules), Signals::NONE);
    }

    #[test]
    fn degenerate_repetition_is_found_and_ordinary_text_is_not() {
        let p = PromptFacts::of("Tell me a story");
        let looped = format!("Once upon a time {}", "the cat sat on the mat and ".repeat(8));
        assert_eq!(judge(&text(&looped), p, RULES), Signals::of(&[Signal::Repetition]));
        let stutter = "no ".repeat(30);
        assert!(judge(&text(&stutter), p, RULES).has(Signal::Repetition));
        let cjk = PromptFacts::of("讲个故事");
        assert!(judge(&text(&"好的".repeat(20)), cjk, RULES).has(Signal::Repetition));
        let prose = "Once upon a time a cat sat on a mat. The mat was red, the cat was grey, and the \
                     afternoon was long. Then a dog came by and the cat left the mat to the dog.";
        assert_eq!(judge(&text(prose), p, RULES), Signals::NONE);
        // Repeated lines of code are code, not a loop.
        let code = format!("```\n{}```", "x = x + 1;\n".repeat(30));
        assert_eq!(judge(&text(&code), p, RULES), Signals::NONE);
    }

    #[test]
    fn the_fast_paths_agree_with_the_standard_library() {
        for c in ('\0'..='\u{2FFF}').chain(['\u{3000}', '\u{4E00}', '\u{AC00}', '\u{1F600}']) {
            assert_eq!(is_space(c), c.is_whitespace(), "{c:?}");
            assert_eq!(is_word_char(c), c.is_alphanumeric(), "{c:?}");
            assert_eq!(lower(c), c.to_lowercase().next().unwrap_or(c), "{c:?}");
        }
    }

    #[test]
    fn a_declared_refusal_is_a_signal() {
        let a = Answer { content: "I can't help with that.", refusal: true, ..Answer::default() };
        assert_eq!(judge(&a, PromptFacts::of("Hi"), RULES), Signals::of(&[Signal::Refusal]));
    }
}
