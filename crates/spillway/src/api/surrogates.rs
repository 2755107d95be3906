//! Lone UTF-16 surrogates in a client's JSON, mended before it is read.
//!
//! A JavaScript string cut in the middle of an emoji holds half of a
//! surrogate pair, and `JSON.stringify` writes it as an escape such as
//! `"\ud83d"`. JSON's grammar allows that escape, but it names no Unicode
//! character, so a strict reader (serde_json among them) refuses the whole
//! body. Spillway accepts it as the replacement character U+FFFD, which is
//! what browsers and Python's `errors="replace"` do with the same text: the
//! escape is rewritten in place to `\ufffd` (the same six bytes) before any
//! entry point reads the body, so the client's bytes sent upstream carry
//! U+FFFD too. A body without such an escape is returned untouched, without
//! a copy; the scan visits only the body's backslashes.

use bytes::Bytes;

/// The body with every lone surrogate escape replaced by `\ufffd`.
pub fn mend(body: Bytes) -> Bytes {
    match first_lone(&body, 0) {
        None => body,
        Some(at) => {
            let mut out = body.to_vec();
            let mut next = Some(at);
            while let Some(at) = next {
                out[at + 2..at + 6].copy_from_slice(b"fffd");
                next = first_lone(&out, at + 6);
            }
            Bytes::from(out)
        }
    }
}

/// The offset of the first `\uXXXX` escape from `from` whose code unit is a
/// surrogate not paired with its other half.
fn first_lone(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(off) = b.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let at = i + off;
        match b.get(at + 1) {
            Some(b'u') => {
                let Some(unit) = hex4(b, at + 2) else {
                    // Not a valid escape: the JSON reader will say so.
                    i = at + 2;
                    continue;
                };
                match unit {
                    0xD800..=0xDBFF => match hex4_escape(b, at + 6) {
                        Some(0xDC00..=0xDFFF) => i = at + 12,
                        _ => return Some(at),
                    },
                    0xDC00..=0xDFFF => return Some(at),
                    _ => i = at + 6,
                }
            }
            // Any other escape is two bytes (`\\`, `\"`, `\n`, ...): skipping
            // both keeps `\\ud800` (a backslash, then text) from reading as one.
            Some(_) => i = at + 2,
            None => return None,
        }
    }
    None
}

/// The code unit of a `\uXXXX` escape starting at `at`, if one does.
fn hex4_escape(b: &[u8], at: usize) -> Option<u16> {
    match (b.get(at), b.get(at + 1)) {
        (Some(b'\\'), Some(b'u')) => hex4(b, at + 2),
        _ => None,
    }
}

/// Four hex digits at `at` as a number.
fn hex4(b: &[u8], at: usize) -> Option<u16> {
    let digits = b.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u16::from_str_radix(text, 16).ok().filter(|_| digits.iter().all(u8::is_ascii_hexdigit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mended(s: &str) -> String {
        String::from_utf8(mend(Bytes::copy_from_slice(s.as_bytes())).to_vec()).unwrap()
    }

    #[test]
    fn lone_halves_become_the_replacement_character_and_pairs_stay() {
        assert_eq!(mended(r#"{"a":"x\ud83d"}"#), r#"{"a":"x\ufffd"}"#);
        assert_eq!(mended(r#"{"a":"\uDE00y"}"#), r#"{"a":"\ufffdy"}"#);
        assert_eq!(
            mended(r#"["\ud83d\ude00","\ud83d","\ude00\ud83d"]"#),
            r#"["\ud83d\ude00","\ufffd","\ufffd\ufffd"]"#
        );
        // A high half followed by a non-surrogate escape, or at the end.
        assert_eq!(mended(r#""\ud800\u0041""#), r#""\ufffd\u0041""#);
        assert_eq!(mended(r#""\ud800"#), r#""\ufffd"#);
        let v: serde_json::Value = serde_json::from_str(&mended(r#"{"a":"x\ud83d"}"#)).unwrap();
        assert_eq!(v["a"], "x\u{fffd}");
    }

    #[test]
    fn escaped_backslashes_and_bodies_without_surrogates_are_untouched() {
        for s in [r#"{"a":"\\ud800"}"#, r#"{"a":"line\nnext \"q\" \u00e9"}"#, "{}", r#""\u12"#, "\\"] {
            let body = Bytes::copy_from_slice(s.as_bytes());
            let out = mend(body.clone());
            assert_eq!(out, body);
            assert_eq!(out.as_ptr(), body.as_ptr(), "no copy when nothing is mended: {s}");
        }
    }
}
