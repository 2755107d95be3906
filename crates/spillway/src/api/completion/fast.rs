//! The stream chunk's check without serde: a hand-written scanner for the
//! shape nearly every OpenAI-compatible chunk has — plain keys, plain
//! strings, small integers — that reads the same facts as [`scan`]'s
//! serde pass (the same [`ChoiceCheck`]s, judged by the same
//! [`check_deltas`]) at a fraction of its cost per event.
//!
//! It decides only what it is sure of: a chunk it takes is one the serde
//! pass takes with the same facts and tail; a chunk it sends to the
//! general path is one the serde pass sends there too (tool calls, an
//! in-band error, a choice that fails the check). Anything else — an
//! escape in a key or a skipped string, a float or a negative number, a
//! repeated key, a `message` in a chunk, JSON it finds broken —
//! is [`Verdict::Unsure`], and the serde pass decides. The differential
//! property tests hold it to that (`completion_proptests.rs`).

use super::scan::{check_deltas, check_usage, tail, ChoiceCheck, MessageCheck, Shape, Top, UsageCheck};
use crate::api::tokens::Tokens;
use std::borrow::Cow;

/// What the scanner made of a chunk.
pub(super) enum Verdict {
    /// The fast path takes it: its facts and the tail after the stamp.
    Take(Top, Vec<u8>),
    /// The general path takes it (the serde pass would say the same).
    General,
    /// Not sure: the serde pass decides.
    Unsure,
}

/// Why the scan stopped early.
enum Stop {
    General,
    Unsure,
}

type Scan<T> = Result<T, Stop>;

/// Nesting deeper than this in a skipped value is left to serde.
const MAX_DEPTH: usize = 32;

/// Checks one event's data (a `chat.completion.chunk`).
pub(super) fn chunk(text: &str) -> Verdict {
    let mut lex = Lex { s: text, b: text.as_bytes(), i: 0 };
    match lex.top() {
        Ok(mut top) => match tail(text, &mut top) {
            Some(tail) => Verdict::Take(top, tail),
            None => Verdict::Unsure,
        },
        Err(Stop::General) => Verdict::General,
        Err(Stop::Unsure) => Verdict::Unsure,
    }
}

struct Lex<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

/// A string as it stands in the text: where its opening quote is, where
/// its content ends, and whether it has escapes.
struct Quoted {
    at: usize,
    end: usize,
    escaped: bool,
}

impl<'a> Lex<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The next byte after blanks (not taken).
    fn peek(&mut self) -> Scan<u8> {
        self.ws();
        self.b.get(self.i).copied().ok_or(Stop::Unsure)
    }

    fn eat(&mut self, c: u8) -> Scan<()> {
        if self.peek()? != c {
            return Err(Stop::Unsure);
        }
        self.i += 1;
        Ok(())
    }

    /// A string at the cursor (after blanks).
    fn quoted(&mut self) -> Scan<Quoted> {
        self.eat(b'"')?;
        let at = self.i - 1;
        let mut escaped = false;
        loop {
            // The run of plain bytes up to a quote, an escape or a control.
            let rest = self.b.get(self.i..).unwrap_or_default();
            let stop = rest.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).ok_or(Stop::Unsure)?;
            self.i += stop;
            match rest[stop] {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    self.i += 2;
                }
                _ => return Err(Stop::Unsure),
            }
        }
        let end = self.i;
        self.i += 1;
        Ok(Quoted { at, end, escaped })
    }

    /// A key without escapes, and the `:` after it.
    fn key(&mut self) -> Scan<(usize, &'a str)> {
        let q = self.quoted()?;
        if q.escaped {
            return Err(Stop::Unsure);
        }
        self.eat(b':')?;
        Ok((q.at, self.s.get(q.at + 1..q.end).ok_or(Stop::Unsure)?))
    }

    /// A string's value: borrowed, or decoded by serde when it has escapes.
    fn string(&mut self) -> Scan<Cow<'a, str>> {
        let q = self.quoted()?;
        let quoted = self.s.get(q.at..=q.end).ok_or(Stop::Unsure)?;
        if q.escaped {
            return serde_json::from_str::<String>(quoted).map(Cow::Owned).map_err(|_| Stop::Unsure);
        }
        Ok(Cow::Borrowed(quoted.get(1..quoted.len() - 1).ok_or(Stop::Unsure)?))
    }

    /// Any value, read as the serde pass reads it into a [`Shape`]
    /// (objects and arrays skipped).
    fn shape(&mut self) -> Scan<Shape<'a>> {
        match self.peek()? {
            b'"' => self.string().map(Shape::Str),
            b'n' => self.word(b"null").map(|()| Shape::Null),
            b't' => self.word(b"true").map(|()| Shape::Other),
            b'f' => self.word(b"false").map(|()| Shape::Other),
            b'0'..=b'9' => self.integer().map(Shape::Int),
            b'{' => self.skip(0).map(|()| Shape::Object),
            b'[' => self.skip(0).map(|()| Shape::Other),
            // Negative numbers and anything else: serde decides.
            _ => Err(Stop::Unsure),
        }
    }

    fn word(&mut self, w: &[u8]) -> Scan<()> {
        if !self.b.get(self.i..).is_some_and(|rest| rest.starts_with(w)) {
            return Err(Stop::Unsure);
        }
        self.i += w.len();
        Ok(())
    }

    /// A non-negative integer without fraction or exponent (anything else
    /// is left to serde: its floats, its range errors).
    fn integer(&mut self) -> Scan<u64> {
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(d @ b'0'..=b'9') = self.b.get(self.i).copied() {
            n = n.checked_mul(10).and_then(|n| n.checked_add(u64::from(d - b'0'))).ok_or(Stop::Unsure)?;
            self.i += 1;
        }
        let leading_zero = self.b.get(start) == Some(&b'0') && self.i - start > 1;
        if leading_zero || matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E')) {
            return Err(Stop::Unsure);
        }
        Ok(n)
    }

    /// Skips a value, checking its form.
    fn skip(&mut self, depth: usize) -> Scan<()> {
        if depth > MAX_DEPTH {
            return Err(Stop::Unsure);
        }
        match self.peek()? {
            b'{' => {
                self.i += 1;
                self.entries(|lex, _, _| lex.skip(depth + 1))
            }
            b'[' => {
                self.i += 1;
                if self.peek()? == b']' {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    self.skip(depth + 1)?;
                    match self.peek()? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => return Err(Stop::Unsure),
                    }
                }
            }
            b'"' => match self.quoted()? {
                // A skipped string's escapes are not checked here.
                Quoted { escaped: true, .. } => Err(Stop::Unsure),
                _ => Ok(()),
            },
            _ => self.shape().map(drop),
        }
    }

    /// The entries of an object whose `{` was taken, each handed to `each`
    /// with its key and its quote's offset; through the closing `}`.
    fn entries(&mut self, mut each: impl FnMut(&mut Self, usize, &'a str) -> Scan<()>) -> Scan<()> {
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(());
        }
        loop {
            let (at, key) = self.key()?;
            each(self, at, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(Stop::Unsure),
            }
        }
    }

    /// An object read into a record by `field`, which says whether it
    /// knew the key; a known key given twice is left to serde.
    fn record<T: Default>(&mut self, mut field: impl FnMut(&mut Self, &str, &mut T) -> Scan<bool>) -> Scan<T> {
        let mut out = T::default();
        // The known keys read so far (a record has at most five).
        let mut seen: [&str; 8] = [""; 8];
        let mut n = 0;
        self.eat(b'{')?;
        self.entries(|lex, _, key| {
            if field(lex, key, &mut out)? {
                if seen[..n].contains(&key) || n == seen.len() {
                    return Err(Stop::Unsure);
                }
                seen[n] = key;
                n += 1;
            } else {
                lex.skip(1)?;
            }
            Ok(())
        })?;
        Ok(out)
    }

    fn delta(&mut self) -> Scan<MessageCheck<'a>> {
        self.record(|lex, key, d: &mut MessageCheck<'a>| {
            let slot = match key {
                "role" => &mut d.role,
                "content" => &mut d.content,
                "refusal" => &mut d.refusal,
                // Tool calls always take the general path.
                "tool_calls" => return Err(Stop::General),
                _ => return Ok(false),
            };
            *slot = lex.shape()?;
            Ok(true)
        })
    }

    fn choice(&mut self) -> Scan<ChoiceCheck<'a>> {
        self.record(|lex, key, c: &mut ChoiceCheck<'a>| {
            let slot = match key {
                "index" => &mut c.index,
                "finish_reason" => &mut c.finish_reason,
                "logprobs" => &mut c.logprobs,
                "delta" => {
                    c.delta = match lex.peek()? {
                        b'{' => Some(lex.delta()?),
                        // No delta: the check fails.
                        b'n' => return Err(Stop::General),
                        _ => return Err(Stop::Unsure),
                    };
                    return Ok(true);
                }
                "message" => return Err(Stop::Unsure),
                _ => return Ok(false),
            };
            *slot = lex.shape()?;
            Ok(true)
        })
    }

    fn choices(&mut self) -> Scan<Vec<ChoiceCheck<'a>>> {
        let mut out = Vec::new();
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Ok(out);
        }
        loop {
            out.push(self.choice()?);
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Ok(out);
                }
                _ => return Err(Stop::Unsure),
            }
        }
    }

    fn usage(&mut self) -> Scan<UsageCheck<'a>> {
        self.record(|lex, key, u: &mut UsageCheck<'a>| {
            let slot = match key {
                "prompt_tokens" => &mut u.prompt_tokens,
                "completion_tokens" => &mut u.completion_tokens,
                "total_tokens" => &mut u.total_tokens,
                "prompt_tokens_details" => &mut u.prompt_tokens_details,
                "completion_tokens_details" => &mut u.completion_tokens_details,
                _ => return Ok(false),
            };
            *slot = lex.shape()?;
            Ok(true)
        })
    }

    /// The chunk's top level, as [`scan`]'s `TopSeed` reads it.
    fn top(&mut self) -> Scan<Top> {
        let mut top = Top { keys: Vec::with_capacity(8), ..Top::default() };
        self.eat(b'{')?;
        let s = self.s;
        self.entries(|lex, at, key| {
            let seen = |&(k, len, _): &(usize, usize, bool)| len == key.len() && s.get(k + 1..k + 1 + len) == Some(key);
            if top.keys.iter().any(seen) {
                return Err(Stop::Unsure);
            }
            let keep = match key {
                "id" | "created" | "model" => {
                    lex.skip(1)?;
                    false
                }
                "object" => {
                    if lex.shape()?.as_str() == Some("error") {
                        return Err(Stop::General);
                    }
                    false
                }
                "error" => {
                    if !matches!(lex.shape()?, Shape::Null) {
                        return Err(Stop::General);
                    }
                    true
                }
                "x_groq" => {
                    if lex.peek()? != b'{' {
                        return Err(Stop::Unsure);
                    }
                    let error = lex.record(|lex, key, error: &mut Shape<'a>| {
                        if key != "error" {
                            return Ok(false);
                        }
                        *error = lex.shape()?;
                        Ok(true)
                    })?;
                    if !matches!(error, Shape::Absent | Shape::Null) {
                        return Err(Stop::General);
                    }
                    true
                }
                "choices" => {
                    let choices = lex.choices()?;
                    top.chunk = Some(check_deltas(&choices).ok_or(Stop::General)?);
                    true
                }
                "usage" => {
                    top.usage_key = Some(top.keys.len());
                    if lex.peek()? == b'n' {
                        lex.word(b"null")?;
                        top.usage = Some(Tokens::default());
                    } else {
                        let usage = lex.usage()?;
                        top.usage = Some(check_usage(&usage).ok_or(Stop::General)?);
                        top.usage_counted = true;
                    }
                    true
                }
                "system_fingerprint" | "service_tier" => {
                    if !lex.shape()?.is_string_or_null() {
                        return Err(Stop::General);
                    }
                    true
                }
                _ => {
                    lex.skip(1)?;
                    true
                }
            };
            top.keys.push((at, key.len(), keep));
            Ok(())
        })?;
        self.ws();
        if self.i != self.b.len() {
            return Err(Stop::Unsure);
        }
        Ok(top)
    }
}

/// Test hook: whether the scanner itself takes `text`.
#[cfg(test)]
pub(crate) fn takes(text: &str) -> bool {
    matches!(chunk(text), Verdict::Take(..))
}

/// Test hook: `Err` with the difference when the scanner's verdict on
/// `text` is not what the serde pass decides.
#[cfg(test)]
pub(crate) fn agrees_with_serde(text: &str) -> Result<(), String> {
    use super::scan::split;
    let facts = |top: &Top, tail: &[u8]| {
        let c = top.chunk.as_ref();
        format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            c.map(|c| (c.has_token, c.finishes, c.empty, c.content_chars, c.other_choice, c.refusal)),
            c.map(|c| c.content.clone()),
            c.and_then(|c| c.finish_reason),
            top.usage,
            top.usage_counted,
            top.usage_in_tail,
            top.checked.is_some(),
            top.keys,
            top.usage_key,
            String::from_utf8_lossy(tail),
        )
    };
    let serde = split(text, true);
    // The fast path's own answer: a chunk whose choices passed.
    let serde_takes = serde.as_ref().filter(|(top, _)| top.chunk.is_some());
    match (chunk(text), serde_takes) {
        (Verdict::Unsure, _) => Ok(()),
        (Verdict::General, None) => Ok(()),
        (Verdict::Take(top, tail), None) if top.chunk.is_none() => {
            // Neither takes it (no choices): the same for the caller.
            let _ = (top, tail);
            Ok(())
        }
        (Verdict::Take(top, tail), Some((s_top, s_tail))) if facts(&top, &tail) == facts(s_top, s_tail) => Ok(()),
        (Verdict::Take(top, tail), Some((s_top, s_tail))) => {
            Err(format!("fast: {}\nserde: {}", facts(&top, &tail), facts(s_top, s_tail)))
        }
        (Verdict::Take(top, tail), None) => Err(format!("fast takes, serde does not: {}", facts(&top, &tail))),
        (Verdict::General, Some(_)) => Err("fast sends it to the general path, serde takes it".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(text: &str) -> &'static str {
        match chunk(text) {
            Verdict::Take(..) => "take",
            Verdict::General => "general",
            Verdict::Unsure => "unsure",
        }
    }

    #[test]
    fn the_usual_chunks_are_decided_without_serde() {
        let usual = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"Hi \"you\"\n"},"logprobs":null,"finish_reason":null}]}"#;
        assert_eq!(verdict(usual), "take");
        assert!(agrees_with_serde(usual).is_ok());
        let usage = r#"{"id":"c","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":0}}}"#;
        assert_eq!(verdict(usage), "take");
        assert!(agrees_with_serde(usage).is_ok());
        let tools = r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0}]},"finish_reason":null}]}"#;
        assert_eq!(verdict(tools), "general");
        assert!(agrees_with_serde(tools).is_ok());
        let groq = r#"{"id":"c","x_groq":{"id":"q","error":null},"choices":[]}"#;
        assert_eq!(verdict(groq), "take");
        assert_eq!(verdict(r#"{"id":"c","x_groq":{"error":{"message":"over capacity"}},"choices":[]}"#), "general");
        // What it leaves to serde: escaped keys, floats, Groq's object as a list.
        for unsure in [
            r#"{"id":"c","x_groq":[null],"choices":[]}"#,
            r#"{"\u0069d":"c","choices":[]}"#,
            r#"{"id":"c","choices":[{"index":0.0,"delta":{}}]}"#,
        ] {
            assert_eq!(verdict(unsure), "unsure", "{unsure}");
        }
    }
}
