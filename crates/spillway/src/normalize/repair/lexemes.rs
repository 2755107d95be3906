//! The lexical half of the tolerant parser: strings (every quote style,
//! unescaped inner quotes, bad escapes, cut-off ends) and numbers in the
//! forms JavaScript and Python allow but JSON does not.

use std::borrow::Cow;

use super::{is_quote, is_ws, Parser};
use crate::normalize::Fix;

impl<'a> Parser<'a> {
    /// Whether a quote character just consumed (ending at `at`) closes the
    /// string. Inside strict JSON a closing quote is always followed by
    /// `,` `:` `}` `]` or the end; a quote followed by anything else is a
    /// quote the model forgot to escape (`"he said "hi" to me"`). A quote on
    /// the next line is the start of a member after a missing comma.
    fn closes_at(&self, mut at: usize) -> bool {
        let mut newline = false;
        while let Some(c) = self.peek_at(at) {
            if c == '\n' {
                newline = true;
            }
            if !is_ws(c) {
                return match c {
                    ',' | ':' | '}' | ']' => true,
                    '/' => matches!(self.peek_at(at + 1), Some('/' | '*')),
                    c if is_quote(c) => newline,
                    _ => false,
                };
            }
            at += c.len_utf8();
        }
        true
    }

    /// A string opened by `open`; the text ending inside it closes it (the
    /// flag is false then).
    pub(super) fn string(&mut self, open: char) -> (Cow<'a, str>, bool) {
        let closers: &[char] = match open {
            '"' => &['"'],
            '\'' => {
                self.fix(Fix::SingleQuotes);
                &['\'', '’']
            }
            '‘' | '’' => {
                self.fix(Fix::SmartQuotes);
                &['’', '‘', '\'']
            }
            '«' => {
                self.fix(Fix::SmartQuotes);
                &['»']
            }
            _ => {
                self.fix(Fix::SmartQuotes);
                &['”', '“', '"']
            }
        };
        self.bump(open);
        // First UTF-8 bytes of the closing quotes: the scan below looks at
        // bytes and decodes a character only where a closer may start.
        let mut leads = [b'\\'; 3];
        for (lead, closer) in leads.iter_mut().zip(closers) {
            let mut buf = [0u8; 4];
            *lead = closer.encode_utf8(&mut buf).as_bytes()[0];
        }
        let src = self.src;
        let bytes = src.as_bytes();
        // Owned only once an escape or a stray quote forces a copy.
        let mut out: Option<String> = None;
        loop {
            // The run of ordinary characters up to the next interesting one.
            let run_start = self.pos;
            let mut end = self.pos;
            loop {
                let hit = bytes[end..].iter().position(|&b| b == b'\\' || b < 0x20 || leads.contains(&b));
                let Some(i) = hit else {
                    end = bytes.len();
                    break;
                };
                end += i;
                if bytes[end] < 0x20 {
                    // Raw newlines and tabs inside a string: kept, and
                    // escaped when written back.
                    self.fix(Fix::ControlCharacter);
                    end += 1;
                    continue;
                }
                match self.peek_at(end) {
                    Some(c) if c != '\\' && !closers.contains(&c) => end += c.len_utf8(),
                    _ => break,
                }
            }
            let run = &src[run_start..end];
            self.pos = end;
            let Some(c) = self.peek() else {
                self.truncated();
                return (finish_string(out, run), false);
            };
            self.bump(c);
            if c == '\\' {
                let buf = out.get_or_insert_with(String::new);
                buf.push_str(run);
                self.escape(buf);
            } else if self.closes_at(self.pos) {
                return (finish_string(out, run), true);
            } else {
                self.fix(Fix::UnescapedQuote);
                let buf = out.get_or_insert_with(String::new);
                buf.push_str(run);
                buf.push(c);
            }
        }
    }

    /// The escape after a backslash. Unknown escapes (`\d` from a regex)
    /// keep the backslash as text, as the model most likely meant.
    fn escape(&mut self, out: &mut String) {
        let Some(c) = self.peek() else {
            self.truncated();
            return;
        };
        self.bump(c);
        match c {
            '"' | '\\' | '/' => out.push(c),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'u' => match self.hex4() {
                Some(hi @ 0xD800..=0xDBFF) => {
                    let lo = self.src[self.pos..]
                        .starts_with("\\u")
                        .then(|| {
                            let save = self.pos;
                            self.pos += 2;
                            match self.hex4() {
                                Some(lo @ 0xDC00..=0xDFFF) => Some(lo),
                                _ => {
                                    self.pos = save;
                                    None
                                }
                            }
                        })
                        .flatten();
                    let ch = lo.and_then(|lo| char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)));
                    out.push(ch.unwrap_or('\u{fffd}'));
                }
                Some(cp) => out.push(char::from_u32(cp).unwrap_or('\u{fffd}')),
                None => {
                    self.fix(Fix::BadEscape);
                    out.push_str("\\u");
                }
            },
            '\'' => {
                self.fix(Fix::BadEscape);
                out.push('\'');
            }
            other => {
                self.fix(Fix::BadEscape);
                out.push('\\');
                out.push(other);
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.src.get(self.pos..self.pos + 4)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let v = u32::from_str_radix(digits, 16).ok()?;
        self.pos += 4;
        Some(v)
    }
}

fn finish_string(out: Option<String>, run: &str) -> Cow<'_, str> {
    match out {
        None => Cow::Borrowed(run),
        Some(mut out) => {
            out.push_str(run);
            Cow::Owned(out)
        }
    }
}

/// Whether a token is already a JSON number
/// (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`), so it can be borrowed
/// as is.
pub(super) fn is_strict_number(token: &str) -> bool {
    let b = token.as_bytes();
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut i = usize::from(b.first() == Some(&b'-'));
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Rewrites a number token into strict JSON form; `None` when it is not a
/// number at all. The flag says whether anything changed.
pub(super) fn normalize_number(token: &str) -> Option<(String, bool)> {
    let mut out = String::with_capacity(token.len() + 1);
    let mut changed = false;
    let mut rest = token;
    if let Some(r) = rest.strip_prefix('-') {
        out.push('-');
        rest = r;
    } else if let Some(r) = rest.strip_prefix('+') {
        changed = true;
        rest = r;
    }
    let int_len = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let (int, r) = rest.split_at(int_len);
    rest = r;
    let trimmed = int.trim_start_matches('0');
    if int.is_empty() {
        if !rest.starts_with('.') {
            return None;
        }
        changed = true;
        out.push('0');
    } else if trimmed.is_empty() {
        out.push('0');
        changed |= int.len() > 1;
    } else {
        out.push_str(trimmed);
        changed |= trimmed.len() != int.len();
    }
    if let Some(r) = rest.strip_prefix('.') {
        let frac_len = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        if frac_len == 0 {
            changed = true;
        } else {
            out.push('.');
            out.push_str(&r[..frac_len]);
        }
        rest = &r[frac_len..];
    }
    if let Some(r) = rest.strip_prefix(['e', 'E']) {
        let letter = &rest[..1];
        let (sign, r) = match r.strip_prefix(['+', '-']) {
            Some(after) => (&r[..1], after),
            None => ("", r),
        };
        let exp_len = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        if exp_len == 0 {
            changed = true;
        } else {
            out.push_str(letter);
            out.push_str(sign);
            out.push_str(&r[..exp_len]);
        }
        rest = &r[exp_len..];
    }
    if !rest.is_empty() || out == "-" {
        return None;
    }
    Some((out, changed))
}
