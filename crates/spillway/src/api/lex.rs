//! A byte scanner for JSON: walks a text once, validating as it goes, and
//! hands its reader the values it asks for — strings borrowed from the
//! text unless they have escapes, integers, the kind of everything else —
//! while other values are only validated and stepped over. Two readers
//! use it, in place of serde's visitor machinery (a third of the
//! instructions of a passed-through request went to it): the one-pass
//! check of upstream answers and chunks ([`super::completion`]'s
//! `scan.rs`) and the request body's borrowed tree ([`super::json::Json::scan`]).
//!
//! It is deliberately narrow: what it is not sure of (an escaped key where
//! the check needs a borrowed one, a struct written as an array, nesting
//! past [`MAX_DEPTH`]) is a `None`, which sends the text to serde. What it
//! accepts is what serde_json reads of the same text: the test modules
//! compare the two over generated and damaged texts (`scan_oracle.rs`,
//! `json.rs`).

use std::borrow::Cow;

/// What kind of JSON value a field holds, read in the same pass as its
/// neighbours and not kept (strings borrowed unless they have escapes).
/// `Absent` when the field is missing — distinct from `null`.
#[derive(Default)]
#[cfg_attr(test, derive(Debug))]
pub(super) enum Shape<'a> {
    #[default]
    Absent,
    Null,
    Str(Cow<'a, str>),
    Int(u64),
    Object,
    Other,
}

impl Shape<'_> {
    pub(super) fn is_string_or_null(&self) -> bool {
        matches!(self, Self::Str(_) | Self::Null)
    }
    pub(super) fn is_object_or_null(&self) -> bool {
        matches!(self, Self::Object | Self::Null)
    }
    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Deeper than this, the general path decides (serde_json skips a value
/// of any depth; no answer nests this deep, and a scanner without a limit
/// could be made to overflow its stack).
pub(super) const MAX_DEPTH: usize = 100;

/// Where the run of plain string bytes from `at` ends: the first quote,
/// backslash or control character, or the end of `b`. Eight bytes at a
/// time (a byte is found when its lane of a word minus ones borrows),
/// the rest one by one.
fn plain_run(b: &[u8], mut at: usize) -> usize {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    while let Some(word) = b.get(at..at + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
        let v = u64::from_le_bytes(word);
        // A byte under 0x20 borrows when 0x20 is taken from its lane.
        let found = has_zero(v ^ (ONES * u64::from(b'"')))
            | has_zero(v ^ (ONES * u64::from(b'\\')))
            | (v.wrapping_sub(ONES * 0x20) & !v & HIGH);
        if found != 0 {
            // The lowest lane flagged is exact (a borrow only runs upward).
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while b.get(at).is_some_and(|&c| c != b'"' && c != b'\\' && c >= 0x20) {
        at += 1;
    }
    at
}

/// A JSON string read by [`string_at`].
pub(super) enum Str<'a> {
    /// Plain ASCII, as it is written (no escapes).
    Ascii(&'a [u8]),
    /// Any other text, decoded.
    Text(Cow<'a, str>),
}

/// The JSON string whose opening quote is byte `at` of `bytes`: where it
/// ends (after its closing quote) and its text. Only the string is checked
/// to be UTF-8 (`bytes` need not be text elsewhere), and plain ASCII only
/// as that; escapes are read as [`Lex::string`] reads them.
pub(super) fn string_at(bytes: &[u8], at: usize) -> Option<(usize, Str<'_>)> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let end = plain_run(bytes, at + 1);
    if bytes.get(end) == Some(&b'"') {
        let run = bytes.get(at + 1..end)?;
        if run.is_ascii() {
            return Some((end + 1, Str::Ascii(run)));
        }
        return Some((end + 1, Str::Text(Cow::Borrowed(std::str::from_utf8(run).ok()?))));
    }
    let mut lx = Lex::new(std::str::from_utf8(bytes.get(at..)?).ok()?);
    let (_, text) = lx.string()?;
    Some((at + lx.at, Str::Text(text)))
}

/// The integer whose first digit is byte `at` of `bytes`, digits alone
/// (JSON's: no leading zero) that fit a `u64`: where it ends and its value.
pub(super) fn integer_at(bytes: &[u8], at: usize) -> Option<(usize, u64)> {
    let mut end = at;
    let mut value: u64 = 0;
    while let Some(&d) = bytes.get(end).filter(|d| d.is_ascii_digit()) {
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        end += 1;
    }
    let leading_zero = end - at > 1 && bytes.get(at) == Some(&b'0');
    (end > at && !leading_zero).then_some((end, value))
}

/// Writes `s` as a JSON string, exactly as `serde_json` writes it: text
/// with nothing to escape (most answers: no quote, backslash or control
/// character) is copied whole, found eight bytes at a time; the rest goes
/// through `serde_json`, whose escaping goes byte by byte through a table.
pub(crate) fn write_string(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    if plain_run(b, 0) == b.len() {
        out.reserve(b.len() + 2);
        out.push(b'"');
        out.extend_from_slice(b);
        out.push(b'"');
    } else {
        // A string always serializes.
        let _ = serde_json::to_writer(out, s);
    }
}

/// A cursor over a JSON text.
pub(super) struct Lex<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Lex<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }

    /// Where the cursor is.
    pub(super) fn pos(&self) -> usize {
        self.at
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte after blanks (JSON's four), not taken.
    pub(super) fn peek(&mut self) -> Option<u8> {
        // Compact JSON has no blanks: the byte at the cursor is most often
        // the answer.
        match self.bytes().get(self.at) {
            Some(&c) if c > b' ' => return Some(c),
            None => return None,
            Some(_) => {}
        }
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes().get(self.at) {
            self.at += 1;
        }
        self.bytes().get(self.at).copied()
    }

    /// Takes `c` (after blanks), or `None`.
    pub(super) fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.at += 1)
    }

    /// After a member or an element: `true` on `,` (another follows),
    /// `false` on `close` (taken), else `None`.
    pub(super) fn more(&mut self, close: u8) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(true)
            }
            c if c == close => {
                self.at += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// Opens an object or an array: `true` when it is empty (and closed).
    pub(super) fn open(&mut self, open: u8, close: u8) -> Option<bool> {
        self.eat(open)?;
        if self.peek()? == close {
            self.at += 1;
            return Some(true);
        }
        Some(false)
    }

    /// Only blanks are left.
    pub(super) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// A key without escapes and its `:`: the key, and where its opening
    /// quote is. A key with escapes is a `None` (the general path).
    pub(super) fn key(&mut self) -> Option<(usize, &'a str)> {
        let (at, key) = self.string()?;
        self.eat(b':')?;
        match key {
            Cow::Borrowed(key) => Some((at, key)),
            Cow::Owned(_) => None,
        }
    }

    /// A string at the cursor, and where its opening quote is: borrowed
    /// from the text, or decoded when it has escapes.
    pub(super) fn string(&mut self) -> Option<(usize, Cow<'a, str>)> {
        self.eat(b'"')?;
        let open = self.at - 1;
        let b = self.bytes();
        self.at = plain_run(b, self.at);
        if b.get(self.at) != Some(&b'"') {
            return self.escaped(open);
        }
        self.at += 1;
        Some((open, Cow::Borrowed(self.text.get(open + 1..self.at - 1)?)))
    }

    /// The rest of a string that is not one plain run: escapes (checked
    /// here, decoded by serde_json: surrogate pairs joined, a lone one
    /// refused, exactly as before), or a control character or the text's
    /// end (`None`). Out of line, so the plain case stays small.
    #[cold]
    #[inline(never)]
    fn escaped(&mut self, open: usize) -> Option<(usize, Cow<'a, str>)> {
        let b = self.bytes();
        loop {
            self.at = plain_run(b, self.at);
            match *b.get(self.at)? {
                b'"' => break,
                b'\\' => match *b.get(self.at + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 2,
                    b'u' if b.get(self.at + 2..self.at + 6)?.iter().all(u8::is_ascii_hexdigit) => self.at += 6,
                    _ => return None,
                },
                // A control character (what stops a plain run otherwise).
                _ => return None,
            }
        }
        self.at += 1;
        let decoded: String = serde_json::from_str(self.text.get(open..self.at)?).ok()?;
        Some((open, Cow::Owned(decoded)))
    }

    /// A number: `Int` for digits alone that fit a `u64` (what serde_json
    /// hands over as one), `Other` for any other number (a sign, a
    /// fraction, an exponent, too large: a float or a negative there).
    fn number(&mut self) -> Option<Shape<'a>> {
        Some(match self.number_text()? {
            (_, Some(n)) => Shape::Int(n),
            (_, None) => Shape::Other,
        })
    }

    /// A number's text, validated against JSON's grammar, and its value
    /// when it is digits alone that fit a `u64`.
    pub(super) fn number_text(&mut self) -> Option<(&'a str, Option<u64>)> {
        let b = self.bytes();
        let from = self.at;
        let negative = b.get(self.at) == Some(&b'-');
        if negative {
            self.at += 1;
        }
        let digits = |at: &mut usize| {
            let from = *at;
            while b.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > from
        };
        let int_from = self.at;
        // The integer part's value, worked out as it is read (exact up to
        // 19 digits; longer ones are worked out again below, checked).
        let mut value: u64 = 0;
        match b.get(self.at)? {
            b'0' => self.at += 1,
            b'1'..=b'9' => {
                while let Some(&d) = b.get(self.at).filter(|d| d.is_ascii_digit()) {
                    value = value.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
                    self.at += 1;
                }
            }
            _ => return None,
        }
        let int_to = self.at;
        let mut plain = !negative;
        if b.get(self.at) == Some(&b'.') {
            self.at += 1;
            plain = false;
            if !digits(&mut self.at) {
                return None;
            }
        }
        if let Some(b'e' | b'E') = b.get(self.at) {
            self.at += 1;
            plain = false;
            if let Some(b'+' | b'-') = b.get(self.at) {
                self.at += 1;
            }
            if !digits(&mut self.at) {
                return None;
            }
        }
        let text = self.text.get(from..self.at)?;
        if !plain {
            return Some((text, None));
        }
        if int_to - int_from <= 19 {
            return Some((text, Some(value)));
        }
        let mut n: u64 = 0;
        for &d in b.get(int_from..int_to)? {
            match n.checked_mul(10).and_then(|n| n.checked_add(u64::from(d - b'0'))) {
                Some(next) => n = next,
                None => return Some((text, None)),
            }
        }
        Some((text, Some(n)))
    }

    /// `null`, `true` or `false` at the cursor: the word, taken.
    pub(super) fn word(&mut self) -> Option<&'static [u8]> {
        let word: &'static [u8] = match self.peek()? {
            b'n' => b"null",
            b't' => b"true",
            b'f' => b"false",
            _ => return None,
        };
        self.literal(word).map(|()| word)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        (self.bytes().get(self.at..self.at + word.len())? == word).then(|| self.at += word.len())
    }

    /// Any value, read as a [`Shape`] (an object's or an array's insides
    /// validated and stepped over).
    pub(super) fn shape(&mut self) -> Option<Shape<'a>> {
        match self.peek()? {
            b'"' => self.string().map(|(_, s)| Shape::Str(s)),
            b'{' => self.skip(0).map(|()| Shape::Object),
            b'[' => self.skip(0).map(|()| Shape::Other),
            b'n' => self.literal(b"null").map(|()| Shape::Null),
            b't' => self.literal(b"true").map(|()| Shape::Other),
            b'f' => self.literal(b"false").map(|()| Shape::Other),
            _ => self.number(),
        }
    }

    /// Validates and steps over any value.
    pub(super) fn skip(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' if depth < MAX_DEPTH => {
                if self.open(b'{', b'}')? {
                    return Some(());
                }
                loop {
                    self.string()?;
                    self.eat(b':')?;
                    self.skip(depth + 1)?;
                    if !self.more(b'}')? {
                        return Some(());
                    }
                }
            }
            b'[' if depth < MAX_DEPTH => {
                if self.open(b'[', b']')? {
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    if !self.more(b']')? {
                        return Some(());
                    }
                }
            }
            b'{' | b'[' => None,
            _ => self.shape().map(drop),
        }
    }

    /// Reads an object's members with `member`, given each key (decoded:
    /// serde matches a struct's fields by their decoded names) and the
    /// cursor at its value. (Repeats are the reader's to refuse: serde
    /// refuses a known field given twice, not an unknown one.)
    pub(super) fn members(&mut self, mut member: impl FnMut(&str, &mut Self) -> Option<()>) -> Option<()> {
        if self.open(b'{', b'}')? {
            return Some(());
        }
        loop {
            let (_, key) = self.string()?;
            self.eat(b':')?;
            member(&key, self)?;
            if !self.more(b'}')? {
                return Some(());
            }
        }
    }

    /// Reads an array's elements with `element`.
    pub(super) fn elements(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if self.open(b'[', b']')? {
            return Some(());
        }
        loop {
            element(self)?;
            if !self.more(b']')? {
                return Some(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The word-at-a-time run ends where a byte-at-a-time one does.
        #[test]
        fn a_plain_run_ends_at_the_first_quote_backslash_or_control(
            bytes in proptest::collection::vec(
                prop_oneof![8 => 0x20u8..=0x7e, 1 => Just(b'"'), 1 => Just(b'\\'), 1 => 0u8..0x20, 2 => 0x80u8..=0xff],
                0..40,
            ),
            from in 0usize..40,
        ) {
            let from = from.min(bytes.len());
            let naive = (from..bytes.len())
                .find(|&i| bytes[i] == b'"' || bytes[i] == b'\\' || bytes[i] < 0x20)
                .unwrap_or(bytes.len());
            prop_assert_eq!(super::plain_run(&bytes, from), naive);
        }

        /// A number's value is what `u64` parsing reads from digits alone
        /// (none past `u64::MAX`: 20 digits and more), and none for a
        /// sign, fraction or exponent; its text is the whole number.
        #[test]
        fn a_number_s_value_is_its_digits_as_a_u64(
            digits in "(0|[1-9][0-9]{0,24})",
            rest in prop_oneof![Just(""), Just(".5"), Just("e3"), Just("E-2")],
            sign in prop_oneof![Just(""), Just("-")],
            after in prop_oneof![Just(""), Just(","), Just("}"), Just(" ")],
        ) {
            let text = format!("{sign}{digits}{rest}{after}");
            let mut lx = super::Lex::new(&text);
            let want = (sign.is_empty() && rest.is_empty()).then(|| digits.parse::<u64>().ok()).flatten();
            prop_assert_eq!(lx.number_text(), Some((&text[..text.len() - after.len()], want)));
        }

        /// A string is written byte for byte as serde_json writes it.
        #[test]
        fn a_string_is_written_as_serde_json_writes_it(
            text in proptest::collection::vec(
                prop_oneof![8 => proptest::char::range(' ', '~'), 1 => Just('"'), 1 => Just('\\'),
                            1 => proptest::char::range('\0', '\u{1f}'), 2 => proptest::char::any()],
                0..40,
            ).prop_map(|cs| cs.into_iter().collect::<String>()),
        ) {
            let mut out = b"x".to_vec();
            super::write_string(&mut out, &text);
            let mut want = b"x".to_vec();
            want.extend(serde_json::to_vec(&text).unwrap());
            prop_assert_eq!(out, want);
        }
    }
}
