//! A string that matches a `pattern`, for mock answers.
//!
//! Where it sits: [`super`] asks for one when a string schema has a
//! `pattern` (zod's `.regex()`, `.cuid()`, `.startsWith()`, pydantic's
//! `constr(pattern=...)`). The pattern is parsed with `regex-syntax` (the
//! parser behind the `regex` crate) and walked once: the first branch of
//! each alternation, the smallest count of each repetition (at least one
//! when `at_least_one`), a friendly character of each class. JSON Schema
//! patterns are ECMA-262 and unanchored; the walk ignores anchors, and the
//! validator checks the result anyway. Lookarounds and backreferences do not
//! parse here: then there is no sample and the caller falls back.

use regex_syntax::hir::{Class, Hir, HirKind};

/// Longest sample produced; a pattern such as `a{100000}` gets none.
const MAX_LEN: usize = 512;

/// A string that matches `pattern`, or `None` when the pattern does not
/// parse or asks for more than [`MAX_LEN`] characters.
pub(super) fn matching(pattern: &str, at_least_one: bool) -> Option<String> {
    if pattern.len() > 4096 {
        return None;
    }
    let hir = regex_syntax::ParserBuilder::new().nest_limit(64).build().parse(pattern).ok()?;
    let mut out = String::new();
    emit(&hir, at_least_one, &mut out).then_some(out)
}

fn emit(hir: &Hir, at_least_one: bool, out: &mut String) -> bool {
    if out.len() > MAX_LEN {
        return false;
    }
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => true,
        HirKind::Literal(lit) => match std::str::from_utf8(&lit.0) {
            Ok(s) => {
                out.push_str(s);
                true
            }
            Err(_) => false,
        },
        HirKind::Class(class) => match pick(class) {
            Some(c) => {
                out.push(c);
                true
            }
            None => false,
        },
        HirKind::Repetition(rep) => {
            let count = if at_least_one && rep.min == 0 && rep.max != Some(0) { 1 } else { rep.min };
            (0..count).all(|_| emit(&rep.sub, at_least_one, out))
        }
        HirKind::Capture(cap) => emit(&cap.sub, at_least_one, out),
        HirKind::Concat(parts) => parts.iter().all(|p| emit(p, at_least_one, out)),
        HirKind::Alternation(branches) => branches.first().is_some_and(|b| emit(b, at_least_one, out)),
    }
}

/// A readable member of a class: a lowercase letter, else an uppercase one,
/// a digit, then whatever printable character the class starts with.
fn pick(class: &Class) -> Option<char> {
    let ranges: Vec<(char, char)> = match class {
        Class::Unicode(u) => u.ranges().iter().map(|r| (r.start(), r.end())).collect(),
        Class::Bytes(b) => b
            .ranges()
            .iter()
            .filter(|r| r.start().is_ascii())
            .map(|r| (char::from(r.start()), char::from(r.end().min(0x7f))))
            .collect(),
    };
    let contains = |c: char| ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c));
    ['m', 'a', 'M', 'A', '1', '0', '-', '_']
        .into_iter()
        .find(|c| contains(*c))
        .or_else(|| {
            ranges.iter().find_map(|(lo, hi)| {
                let c = (*lo).max('!');
                (c <= *hi).then_some(c)
            })
        })
        .or_else(|| ranges.first().map(|(lo, _)| *lo))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pattern: &str) -> String {
        matching(pattern, true).unwrap_or_else(|| panic!("no sample for {pattern}"))
    }

    #[test]
    fn samples_follow_the_pattern() {
        assert_eq!(check("^[A-Z]{3}-\\d{4}$"), "MMM-1111");
        assert_eq!(check("^ORD-[0-9]+$"), "ORD-1");
        assert_eq!(check("^(foo|bar)baz?$"), "foobaz");
        assert_eq!(check("^[cC][^\\s-]{8,}$"), "Cmmmmmmmm");
        assert!(matching("a{100000}", false).is_none());
        assert!(matching("(?<=x)y", false).is_none(), "lookbehind does not parse here");
    }
}
