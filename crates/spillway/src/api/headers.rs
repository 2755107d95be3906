//! A client request's headers, looked up the way a request's few are
//! cheapest to look up.

use http::{HeaderMap, HeaderName, HeaderValue};

/// The first value of `name` in a request's `headers`, as
/// [`HeaderMap::get`] finds it. A request has a handful of headers:
/// comparing each name costs less than hashing the one asked for (a
/// `x-spillway-*` name is hashed byte by byte), and most names asked for
/// on every request are not there. A long map is looked up by hash.
pub fn find<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Option<&'h HeaderValue> {
    if headers.len() > 16 {
        return headers.get(name);
    }
    headers.iter().find_map(|(n, v)| (n == name).then_some(v))
}

/// What a header value may hold (`HeaderValue::from_str`'s rule: visible
/// characters, spaces and tabs; no CR, LF or other controls): a value
/// checked here is written as it is, without a `HeaderValue` made of it.
pub fn is_value(v: &[u8]) -> bool {
    // Every byte looked at (no early return): a loop the compiler
    // vectorises, for values of a few dozen bytes.
    v.iter().fold(true, |ok, &b| ok & ((b >= 0x20 && b != 0x7f) | (b == b'\t')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_is_found_as_the_map_finds_it() {
        let mut short = HeaderMap::new();
        for (n, v) in [("Host", "h"), ("x-spillway-user", "u1"), ("X-Spillway-User", "u2"), ("authorization", "a")] {
            short.append(HeaderName::from_bytes(n.as_bytes()).unwrap(), HeaderValue::from_static(v));
        }
        let mut long = short.clone();
        for i in 0..20 {
            long.insert(HeaderName::from_bytes(format!("x-extra-{i}").as_bytes()).unwrap(), HeaderValue::from(i));
        }
        for map in [&short, &long] {
            for name in ["x-spillway-user", "authorization", "host", "x-spillway-escalate", "content-length"] {
                let name = HeaderName::from_static(name);
                assert_eq!(find(map, &name), map.get(&name), "{name}");
            }
        }
        assert_eq!(find(&short, &HeaderName::from_static("x-spillway-user")).unwrap(), "u1");
    }

    #[test]
    fn a_value_is_what_header_value_takes() {
        for v in ["req_1", "a b\tc", "caf\u{e9}", "", "a\r\nb", "a\u{7f}", "\u{1}"] {
            assert_eq!(is_value(v.as_bytes()), HeaderValue::from_str(v).is_ok(), "{v:?}");
        }
    }
}
