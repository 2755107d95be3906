//! The tolerant JSON parser: reads what models write when they mean JSON and
//! builds a [`Node`] tree, recording every liberty it took as a [`Fix`].
//!
//! Where it sits: [`super::extract`] hands it candidate text (a fence's
//! content, a span of prose) after the strict `serde_json` fast path failed;
//! the tree goes on to [`super::rename`] and is written out as compact JSON
//! for validation.
//!
//! Written by hand because no crate repairs with these rules: `json5` and
//! friends accept a *different grammar* (single quotes, comments, trailing
//! commas) but reject Python literals, smart quotes, unescaped inner quotes,
//! missing commas and truncated tails, and they hand back a `serde_json::Value`
//! whose map sorts keys (we keep the model's key order). The grammar here is
//! small and every branch is a named repair.
//!
//! Strict JSON parses to exactly the tree `serde_json` would build, so the
//! repairer is idempotent: its output is strict JSON and a second pass
//! changes nothing.

mod lexemes;

use std::borrow::Cow;

use crate::normalize::node::Node;
use crate::normalize::Fix;
use lexemes::{is_strict_number, normalize_number};

/// Deeper nesting is refused. `serde_json` refuses 128 levels when we re-read
/// our output for validation, and recursion here must stay shallow for the
/// stack; 100 is far beyond any real answer.
const MAX_DEPTH: usize = 100;

/// Where and why the tolerant parser gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub reason: &'static str,
    pub offset: usize,
}

/// A value read from the start of a text.
#[derive(Debug)]
pub(crate) struct Parsed<'a> {
    pub node: Node<'a>,
    /// Byte offset just past the value; text after it is not JSON.
    pub end: usize,
    pub fixes: Vec<Fix>,
}

/// Adds a fix unless the same one is already recorded (a hundred trailing
/// commas are one fact, not a hundred).
pub(crate) fn push_fix(fixes: &mut Vec<Fix>, fix: Fix) {
    if !fixes.contains(&fix) {
        fixes.push(fix);
    }
}

/// Parses one value at the start of `src` (after whitespace and comments).
pub(crate) fn parse_prefix(src: &str) -> Result<Parsed<'_>, ParseError> {
    let mut p = Parser { src, pos: 0, fixes: Vec::new() };
    p.skip_ws();
    match p.value(0)? {
        Some(node) => Ok(Parsed { node, end: p.pos, fixes: p.fixes }),
        None => Err(ParseError { reason: "no value before the end of the text", offset: p.pos }),
    }
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    fixes: Vec<Fix>,
}

fn is_ws(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// Characters that open a string: ASCII quotes plus the typographic ones
/// chat models and word processors substitute.
fn is_quote(c: char) -> bool {
    matches!(c, '"' | '\'' | '“' | '”' | '„' | '‘' | '’' | '«')
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$' || c == '-'
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<char> {
        // ASCII without decoding: nearly every character the parser looks at.
        match self.src.as_bytes().get(self.pos) {
            Some(&b) if b.is_ascii() => Some(char::from(b)),
            Some(_) => self.src.get(self.pos..).and_then(|s| s.chars().next()),
            None => None,
        }
    }

    fn peek_at(&self, at: usize) -> Option<char> {
        self.src.get(at..).and_then(|s| s.chars().next())
    }

    fn bump(&mut self, c: char) {
        self.pos += c.len_utf8();
    }

    fn err(&self, reason: &'static str) -> ParseError {
        ParseError { reason, offset: self.pos }
    }

    fn fix(&mut self, fix: Fix) {
        push_fix(&mut self.fixes, fix);
    }

    fn truncated(&mut self) {
        self.fix(Fix::ClosedTruncated);
    }

    /// Skips whitespace and `//`, `/* */`, `#` comments.
    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            let next = self.src.as_bytes().get(self.pos + 1).copied();
            if is_ws(c) {
                self.bump(c);
            } else if c == '#' || (c == '/' && next == Some(b'/')) {
                self.fix(Fix::Comment);
                self.pos = match self.src[self.pos..].find('\n') {
                    Some(i) => self.pos + i + 1,
                    None => self.src.len(),
                };
            } else if c == '/' && next == Some(b'*') {
                self.fix(Fix::Comment);
                self.pos = match self.src[self.pos + 2..].find("*/") {
                    Some(i) => self.pos + 2 + i + 2,
                    None => self.src.len(),
                };
            } else {
                break;
            }
        }
    }

    /// One value; `Ok(None)` when the text ended before a value began or in
    /// the middle of a token that cannot be completed (a truncated tail).
    fn value(&mut self, depth: usize) -> Result<Option<Node<'a>>, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        self.skip_ws();
        let Some(c) = self.peek() else {
            self.truncated();
            return Ok(None);
        };
        match c {
            '{' => self.object(depth + 1).map(Some),
            '[' => self.array(depth + 1).map(Some),
            c if is_quote(c) => Ok(Some(Node::Str(self.string(c).0))),
            '-' | '+' | '.' | '0'..='9' => self.number(),
            c if c.is_alphabetic() || c == '_' => self.literal(),
            _ => Err(self.err("unexpected character")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Node<'a>, ParseError> {
        self.bump('{');
        let mut members = Vec::new();
        let mut after_comma = false;
        loop {
            self.skip_ws();
            let Some(c) = self.peek() else {
                self.truncated();
                return Ok(Node::Obj(members));
            };
            if c == '}' {
                if after_comma {
                    self.fix(Fix::TrailingComma);
                }
                self.bump(c);
                return Ok(Node::Obj(members));
            }
            if c == ',' {
                // A comma right after `{` or another comma.
                self.fix(Fix::TrailingComma);
                self.bump(c);
                continue;
            }
            if !members.is_empty() && !after_comma {
                self.fix(Fix::MissingComma);
            }
            let Some(key) = self.key()? else {
                return Ok(Node::Obj(members));
            };
            self.skip_ws();
            match self.peek() {
                Some(':') => self.bump(':'),
                None => {
                    self.truncated();
                    return Ok(Node::Obj(members));
                }
                Some(_) => return Err(self.err("expected ':' after an object key")),
            }
            let Some(value) = self.value(depth)? else {
                // `{"a": 1, "b":` — the dangling key goes.
                return Ok(Node::Obj(members));
            };
            members.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(',') => {
                    self.bump(',');
                    after_comma = true;
                }
                Some('}') => {
                    self.bump('}');
                    return Ok(Node::Obj(members));
                }
                None => {
                    self.truncated();
                    return Ok(Node::Obj(members));
                }
                Some(c) if is_quote(c) || is_ident_char(c) => after_comma = false,
                Some(_) => return Err(self.err("expected ',' or '}' in an object")),
            }
        }
    }

    /// An object key; `Ok(None)` when the text ends inside it.
    fn key(&mut self) -> Result<Option<Cow<'a, str>>, ParseError> {
        let Some(c) = self.peek() else {
            return Ok(None);
        };
        if is_quote(c) {
            // A key cut off by the end of the text is dropped with its value.
            let (key, closed) = self.string(c);
            return Ok(closed.then_some(key));
        }
        if is_ident_char(c) {
            let start = self.pos;
            while let Some(c) = self.peek().filter(|&c| is_ident_char(c)) {
                self.bump(c);
            }
            self.fix(Fix::UnquotedKey);
            return Ok(Some(Cow::Borrowed(&self.src[start..self.pos])));
        }
        Err(self.err("expected an object key"))
    }

    fn array(&mut self, depth: usize) -> Result<Node<'a>, ParseError> {
        self.bump('[');
        let mut items = Vec::new();
        let mut after_comma = false;
        loop {
            self.skip_ws();
            let Some(c) = self.peek() else {
                self.truncated();
                return Ok(Node::Arr(items));
            };
            if c == ']' {
                if after_comma {
                    self.fix(Fix::TrailingComma);
                }
                self.bump(c);
                return Ok(Node::Arr(items));
            }
            if c == ',' {
                self.fix(Fix::TrailingComma);
                self.bump(c);
                continue;
            }
            if !items.is_empty() && !after_comma {
                self.fix(Fix::MissingComma);
            }
            let Some(item) = self.value(depth)? else {
                return Ok(Node::Arr(items));
            };
            items.push(item);
            self.skip_ws();
            match self.peek() {
                Some(',') => {
                    self.bump(',');
                    after_comma = true;
                }
                Some(']') => {
                    self.bump(']');
                    return Ok(Node::Arr(items));
                }
                None => {
                    self.truncated();
                    return Ok(Node::Arr(items));
                }
                Some(c) if is_quote(c) || matches!(c, '{' | '[' | '-' | '0'..='9') => {
                    after_comma = false;
                }
                Some(_) => return Err(self.err("expected ',' or ']' in an array")),
            }
        }
    }

    fn number(&mut self) -> Result<Option<Node<'a>>, ParseError> {
        let start = self.pos;
        let rest = &self.src[start..];
        let len = rest.find(|c: char| !matches!(c, '0'..='9' | '+' | '-' | '.' | 'e' | 'E')).unwrap_or(rest.len());
        let token = &rest[..len];
        self.pos += len;
        let at_end = self.pos >= self.src.len();
        // `-Infinity`
        if matches!(token, "-" | "+") && self.peek().is_some_and(char::is_alphabetic) {
            return self.literal();
        }
        if is_strict_number(token) {
            return Ok(Some(Node::Num(Cow::Borrowed(token))));
        }
        match normalize_number(token) {
            Some((text, changed)) => {
                if changed {
                    if at_end {
                        self.truncated();
                    } else {
                        self.fix(Fix::NumberFormat);
                    }
                }
                Ok(Some(Node::Num(Cow::Owned(text))))
            }
            None if at_end => {
                self.truncated();
                Ok(None)
            }
            None => Err(ParseError { reason: "malformed number", offset: start }),
        }
    }

    /// `true`/`false`/`null` and the spellings other languages use.
    fn literal(&mut self) -> Result<Option<Node<'a>>, ParseError> {
        let start = self.pos;
        while let Some(c) = self.peek().filter(|&c| c.is_alphanumeric() || c == '_') {
            self.bump(c);
        }
        let word = &self.src[start..self.pos];
        let node = match word {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            "null" => Node::Null,
            "True" => Node::Bool(true),
            "False" => Node::Bool(false),
            "None" | "undefined" | "NaN" | "Infinity" => Node::Null,
            _ => {
                let cut = self.pos >= self.src.len();
                if cut && ["true", "false", "null", "True", "False", "None"].iter().any(|lit| lit.starts_with(word)) {
                    self.truncated();
                    return Ok(None);
                }
                return Err(ParseError { reason: "unknown bare word", offset: start });
            }
        };
        if !matches!(word, "true" | "false" | "null") {
            self.fix(Fix::PythonLiteral);
        }
        Ok(Some(node))
    }
}

#[cfg(test)]
mod tests;
