//! Finding the JSON in an answer, and the pipeline that ties the steps
//! together.
//!
//! Where it sits: [`super::normalize`] calls [`run`] with the model's text.
//! The strict fast path runs first; only when it fails are candidates taken
//! out of fenced code blocks and then out of the prose around them, each
//! repaired, renamed and checked until one passes.
//!
//! Every candidate is *checked*, not just parsed: prose often holds a
//! bracket before the answer (`see [1]`, `return {} if empty`), and the first
//! value that satisfies the request is the one the model meant.

use serde_json::Value;

use crate::normalize::node::{into_value, write_compact, Node};
use crate::normalize::repair::{parse_prefix, push_fix};
use crate::normalize::{rename, type_name, Expected, Fix, NormalizeError, NormalizeResult, Normalized};

/// Candidates tried per answer. Each costs one pass over (part of) the text,
/// so this bounds the work a hostile answer can cause.
const MAX_CANDIDATES: usize = 8;

/// How many times a JSON string holding JSON is unwrapped
/// (`"\"{\\\"a\\\":1}\""` is two).
const MAX_UNWRAP: u8 = 2;

/// Language tags of fences that are tried first.
const JSON_TAGS: &[&str] = &["json", "json5", "jsonc", "javascript", "js", ""];

pub(crate) fn run(text: &str, expected: &Expected) -> Result<Normalized, NormalizeError> {
    run_at(text, expected, 0)
}

fn is_blank(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

fn run_at(text: &str, expected: &Expected, unwraps: u8) -> Result<Normalized, NormalizeError> {
    let text = text.trim_matches(is_blank);
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return strict_json(text, value, expected, unwraps);
    }
    let mut errors = ErrorPick::default();
    let mut tried = 0;
    for fence in fences(text) {
        if tried == MAX_CANDIDATES {
            break;
        }
        tried += 1;
        match candidate(fence, Some(Fix::FencedBlock), expected, unwraps) {
            Ok(done) => return Ok(done),
            Err((err, _)) => errors.offer(err),
        }
    }
    let mut from = 0;
    while tried < MAX_CANDIDATES {
        let Some(rel) = text.get(from..).and_then(|t| t.find(['{', '['])) else {
            break;
        };
        let start = from + rel;
        tried += 1;
        // Text before the value, or after it, makes this an extraction.
        let origin = (start > 0).then_some(Fix::SurroundingText);
        match candidate(&text[start..], origin, expected, unwraps) {
            Ok(done) => return Ok(done),
            // Skip what was read: a rejected value's inner objects are not
            // the answer, and a parse error's prefix parsed already.
            Err((err, skip)) => {
                errors.offer(err);
                from = start + skip.max(1);
            }
        }
    }
    Err(errors.best.unwrap_or(NormalizeError::NoJson))
}

/// The whole text is strict JSON: pass it unchanged if it satisfies the
/// request, else try the two repairs that apply to valid JSON (a string that
/// holds the JSON, keys renamed toward the schema).
fn strict_json(text: &str, value: Value, expected: &Expected, unwraps: u8) -> Result<Normalized, NormalizeError> {
    let err = match check(&value, expected) {
        Ok(()) => return Ok(Normalized { json: text.to_owned(), result: NormalizeResult::Valid, fixes: Vec::new() }),
        Err(err) => err,
    };
    if let Value::String(inner) = &value {
        if let Some(done) = unwrap_string(inner, expected, unwraps) {
            return Ok(done);
        }
    }
    if let Expected::Schema { compiled, .. } = expected {
        if let Ok(parsed) = parse_prefix(text) {
            let mut node = parsed.node;
            let mut fixes = parsed.fixes;
            if rename::rename(&mut node, compiled, &mut fixes) {
                return finish(node, fixes, expected);
            }
        }
    }
    Err(err)
}

/// Parses, repairs and checks one candidate. On failure returns the error
/// and how many bytes of `src` the caller may skip.
fn candidate(
    src: &str,
    origin: Option<Fix>,
    expected: &Expected,
    unwraps: u8,
) -> Result<Normalized, (NormalizeError, usize)> {
    let parsed = parse_prefix(src)
        .map_err(|e| (NormalizeError::Unrepairable { reason: e.reason, offset: e.offset }, e.offset))?;
    let end = parsed.end;
    let mut fixes = Vec::new();
    if let Some(origin) = origin {
        push_fix(&mut fixes, origin);
    }
    if !src[end..].trim_matches(is_blank).is_empty() {
        push_fix(&mut fixes, Fix::SurroundingText);
    }
    for fix in parsed.fixes {
        push_fix(&mut fixes, fix);
    }
    if let Node::Str(inner) = &parsed.node {
        if let Some(mut done) = unwrap_string(inner, expected, unwraps) {
            for fix in fixes.into_iter().rev() {
                if !done.fixes.contains(&fix) {
                    done.fixes.insert(0, fix);
                }
            }
            return Ok(done);
        }
    }
    finish(parsed.node, fixes, expected).map_err(|e| (e, end))
}

/// A string value whose content is JSON (models double-encode, especially
/// tool-call arguments).
fn unwrap_string(inner: &str, expected: &Expected, unwraps: u8) -> Option<Normalized> {
    let looks_like_json = inner.trim_start().starts_with(['{', '[', '"']);
    if unwraps >= MAX_UNWRAP || !looks_like_json {
        return None;
    }
    let mut done = run_at(inner, expected, unwraps + 1).ok()?;
    if done.result == NormalizeResult::Valid {
        // Valid inside the string: still compact it, as every repaired
        // answer is.
        let mut compact = String::with_capacity(done.json.len());
        write_compact(&parse_prefix(&done.json).ok()?.node, &mut compact);
        done.json = compact;
    }
    done.fixes.insert(0, Fix::UnwrappedString);
    done.result = NormalizeResult::Repaired;
    Some(done)
}

/// Renames, writes and checks a repaired tree.
fn finish(mut node: Node<'_>, mut fixes: Vec<Fix>, expected: &Expected) -> Result<Normalized, NormalizeError> {
    if let Expected::Schema { compiled, .. } = expected {
        rename::rename(&mut node, compiled, &mut fixes);
    }
    let mut json = String::new();
    write_compact(&node, &mut json);
    let value = into_value(node).ok_or(NormalizeError::Unrepairable { reason: "number out of range", offset: 0 })?;
    check(&value, expected)?;
    Ok(Normalized { json, result: NormalizeResult::Repaired, fixes })
}

fn check(value: &Value, expected: &Expected) -> Result<(), NormalizeError> {
    match expected {
        Expected::Object if value.is_object() => Ok(()),
        Expected::Object => Err(NormalizeError::NotAnObject { found: type_name(value) }),
        Expected::Schema { compiled, .. } => {
            compiled.check(value).map_err(|messages| NormalizeError::SchemaViolation { messages })
        }
    }
}

/// Keeps the most telling failure: a value that parsed but did not fit says
/// more than text that would not parse, which says more than "no JSON".
#[derive(Default)]
struct ErrorPick {
    best: Option<NormalizeError>,
}

impl ErrorPick {
    fn offer(&mut self, err: NormalizeError) {
        let rank = |e: &NormalizeError| match e {
            NormalizeError::SchemaViolation { .. } | NormalizeError::NotAnObject { .. } => 2,
            NormalizeError::Unrepairable { .. } => 1,
            NormalizeError::NoJson => 0,
        };
        if self.best.as_ref().is_none_or(|b| rank(&err) > rank(b)) {
            self.best = Some(err);
        }
    }
}

/// The contents of markdown code fences, JSON-tagged (or untagged) ones
/// first. A fence the answer ends inside (a truncated answer) runs to the
/// end of the text.
fn fences(text: &str) -> Vec<&str> {
    let mut tagged = Vec::new();
    let mut other = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let tag_len = after.find(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_')).unwrap_or(after.len());
        let tag = &after[..tag_len];
        let body = &after[tag_len..];
        let (content, next) = match closing_fence(body) {
            Some(close) => (&body[..close], &body[close + 3..]),
            None => (body, ""),
        };
        if JSON_TAGS.iter().any(|t| t.eq_ignore_ascii_case(tag)) {
            tagged.push(content);
        } else {
            other.push(content);
        }
        rest = next;
    }
    tagged.extend(other);
    tagged
}

/// Where a fence body ends: at a line that starts with three backticks (as
/// markdown has it, so a JSON string holding backticks does not end the
/// block), else at the first backticks anywhere (a one-line fence).
fn closing_fence(body: &str) -> Option<usize> {
    let mut at = 0;
    for line in body.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
        if at > 0 && line[indent..].starts_with("```") {
            return Some(at + indent);
        }
        at += line.len();
    }
    body.find("```")
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
