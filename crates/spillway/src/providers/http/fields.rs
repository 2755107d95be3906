//! A response head's header fields as the upstream sent them: the head's
//! own bytes and where each name and value lies in them, looked up by
//! comparing names (any case) one after another.
//!
//! Why not an `http::HeaderMap`: building one cost every answer a name
//! parse, a hash and a table insert per field, and a hashed look-up per
//! header the gateway asks for, most of which an answer does not have —
//! about 3,700 instructions for an answer of three fields (callgrind,
//! `WHOLE_AS_STREAM=false bench/instructions.sh`), and a real upstream
//! sends twenty. The gateway reads a handful of fields of each answer
//! (framing, `connection`, its request id, rate limits, `content-type`),
//! so a pass over the few an answer has is the cheaper look-up.

use bytes::Bytes;
use std::ops::Range;

/// The header fields of one response head (names and values as sent;
/// `httparse` has checked both).
#[derive(Debug, Clone, Default)]
pub struct Fields {
    head: Bytes,
    /// Where each field's name and value lie in `head`, in order.
    at: Vec<(Range<usize>, Range<usize>)>,
}

impl Fields {
    /// The fields at `at` (name, value) in `head`.
    pub(super) fn new(head: Bytes, at: Vec<(Range<usize>, Range<usize>)>) -> Self {
        Self { head, at }
    }

    /// Every field as (name, value), in the order sent.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], &[u8])> + '_ {
        // (Always inside the head: the parse found them there.)
        self.at.iter().filter_map(|(name, value)| Some((self.head.get(name.clone())?, self.head.get(value.clone())?)))
    }

    /// Every value of the fields named `name` (any case), in order.
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl DoubleEndedIterator<Item = &'a [u8]> + 'a {
        self.iter().filter(move |(n, _)| n.eq_ignore_ascii_case(name.as_bytes())).map(|(_, v)| v)
    }

    /// The first value of the field named `name` (any case).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.iter().find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes())).map(|(_, v)| v)
    }

    /// How many fields there are.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// No fields.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// The fields as an `http::HeaderMap` (names lowercased), for code that
    /// wants one; a field that is not a valid name and value is left out.
    pub fn to_map(&self) -> http::HeaderMap {
        let mut map = http::HeaderMap::with_capacity(self.len());
        for (name, value) in self.iter() {
            if let (Ok(n), Ok(v)) = (http::HeaderName::from_bytes(name), http::HeaderValue::from_bytes(value)) {
                map.append(n, v);
            }
        }
        map
    }
}

impl crate::health::ratelimit::Headers for Fields {
    fn value(&self, name: &str) -> Option<&[u8]> {
        self.get(name)
    }

    fn any_name_starts_with(&self, prefix: &str) -> bool {
        let prefix = prefix.as_bytes();
        self.iter().any(|(n, _)| n.get(..prefix.len()).is_some_and(|p| p.eq_ignore_ascii_case(prefix)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::ratelimit::Headers;

    /// Fields laid out as a head would carry them.
    fn fields(pairs: &[(&str, &str)]) -> Fields {
        let mut head = Vec::new();
        let mut at = Vec::new();
        for (n, v) in pairs {
            let name = head.len()..head.len() + n.len();
            head.extend_from_slice(n.as_bytes());
            head.extend_from_slice(b": ");
            let value = head.len()..head.len() + v.len();
            head.extend_from_slice(v.as_bytes());
            head.extend_from_slice(b"\r\n");
            at.push((name, value));
        }
        Fields::new(Bytes::from(head), at)
    }

    #[test]
    fn names_match_in_any_case_and_values_come_in_order() {
        let f = fields(&[
            ("Content-Type", "application/json"),
            ("X-RateLimit-Remaining-Requests", "0"),
            ("Set-Cookie", "a=1"),
            ("set-cookie", "b=2"),
        ]);
        assert_eq!(f.get("content-type"), Some(&b"application/json"[..]));
        assert_eq!(f.get("CONTENT-TYPE"), Some(&b"application/json"[..]));
        assert_eq!(f.get_all("set-cookie").collect::<Vec<_>>(), [&b"a=1"[..], b"b=2"]);
        assert_eq!(f.get_all("set-cookie").next_back(), Some(&b"b=2"[..]));
        assert_eq!(f.get("x-request-id"), None);
        assert!(f.any_name_starts_with("x-ratelimit-remaining"));
        assert!(!f.any_name_starts_with("x-ratelimit-limit"));
        assert_eq!(f.value("x-ratelimit-remaining-requests"), Some(&b"0"[..]));
        assert_eq!(f.len(), 4);
        assert!(!f.is_empty() && Fields::default().is_empty());
    }

    #[test]
    fn as_a_map_names_are_lowercased_and_repeats_kept() {
        let map = fields(&[("X-Request-Id", "req_1"), ("set-cookie", "a=1"), ("Set-Cookie", "b=2")]).to_map();
        assert_eq!(map["x-request-id"], "req_1");
        assert_eq!(map.get_all("set-cookie").iter().count(), 2);
    }
}
