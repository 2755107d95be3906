//! The headers of a served answer (SPEC §5): its type, the
//! `x-spillway-*` ones and the upstream's request id. Worked out once by
//! the chat handler and laid out either into a response's map (the entry
//! points the router serves) or as header lines the server writes as they
//! are (chat completions from the front door: see `http1::Answer`).

use crate::api::headers::is_value;
use axum::http::{HeaderName, HeaderValue};

/// A header of an answer: its name for a map, and the start of its line
/// (`name: `) for the server to write as it is.
struct Named {
    name: HeaderName,
    line: &'static str,
}

/// A [`Named`] header, checked at compile time (`from_static` in a const).
macro_rules! named {
    ($name:literal) => {
        Named { name: HeaderName::from_static($name), line: concat!($name, ": ") }
    };
}

const CONTENT_TYPE: Named = named!("content-type");
const CACHE_CONTROL: Named = named!("cache-control");
const X_ACCEL_BUFFERING: Named = named!("x-accel-buffering");
/// The quality signals a whole answer showed (`cascades.*.quality`),
/// comma-separated; absent when it showed none.
const X_QUALITY: Named = named!("x-spillway-quality");
const X_CASCADE: Named = named!("x-spillway-cascade");
const X_MODEL: Named = named!("x-spillway-model");
const X_TIER: Named = named!("x-spillway-tier");
const X_ATTEMPTS: Named = named!("x-spillway-attempts");
const X_RANK: Named = named!("x-spillway-rank");
const X_LOAD_PROFILE: Named = named!("x-spillway-load-profile");
const X_HANDOFF_ID: Named = named!("x-spillway-handoff-id");
const X_ESCALATED: Named = named!("x-spillway-escalated");
/// The id the answering upstream gave its own call, when it sent one.
const X_UPSTREAM_REQUEST_ID: Named = named!("x-spillway-upstream-request-id");

/// Room for an answer's headers, made once: its type, the `x-spillway-*`
/// ones, the upstream's and the gateway's request ids (a map grown from
/// empty was reallocated and rehashed on the seventh).
const ANSWER_HEADERS: usize = 12;

/// The headers of a served answer (SPEC §5): its type, the
/// `x-spillway-*` ones and the upstream's request id, worked out once and
/// laid out either into a response's map ([`Self::into_map`]: the entry
/// points the router serves) or as header lines the server writes as
/// they are ([`Self::write_lines`]: chat completions from the front door,
/// where a map was built, hashed into and dropped on every request only
/// to be written out).
pub(super) struct AnswerHeaders {
    /// `text/event-stream` (with `cache-control: no-cache` and
    /// `x-accel-buffering: no`), else `application/json`.
    pub streamed: bool,
    /// A whole answer's quality signals (`x-spillway-quality`).
    pub quality: Option<String>,
    pub cascade: String,
    pub model: String,
    pub tier: crate::outcome::Tier,
    pub rank: Option<usize>,
    pub attempts: u32,
    pub load_profile: Option<String>,
    pub handoff_id: Option<String>,
    pub escalated: bool,
    pub upstream_request_id: Option<String>,
}

impl AnswerHeaders {
    /// Each header in the order it goes out, its value checked (a name the
    /// gateway did not make, unfit for a header, reads `invalid`; an
    /// upstream's id unfit for one is left out).
    fn each(&self, mut put: impl FnMut(&Named, &[u8])) {
        fn text(v: &str) -> &[u8] {
            if is_value(v.as_bytes()) {
                v.as_bytes()
            } else {
                b"invalid"
            }
        }
        let mut digits = [0u8; 20];
        if self.streamed {
            put(&CONTENT_TYPE, b"text/event-stream");
            put(&CACHE_CONTROL, b"no-cache");
            put(&X_ACCEL_BUFFERING, b"no");
        } else {
            put(&CONTENT_TYPE, b"application/json");
        }
        if let Some(q) = self.quality.as_deref().filter(|q| is_value(q.as_bytes())) {
            put(&X_QUALITY, q.as_bytes());
        }
        put(&X_CASCADE, text(&self.cascade));
        put(&X_MODEL, text(&self.model));
        put(&X_TIER, self.tier.as_str().as_bytes());
        put(&X_ATTEMPTS, crate::digits::decimal(u64::from(self.attempts), &mut digits));
        if let Some(rank) = self.rank {
            put(&X_RANK, crate::digits::decimal(rank as u64, &mut digits));
        }
        if let Some(profile) = &self.load_profile {
            put(&X_LOAD_PROFILE, text(profile));
        }
        if let Some(id) = &self.handoff_id {
            put(&X_HANDOFF_ID, text(id));
        }
        if self.escalated {
            put(&X_ESCALATED, b"true");
        }
        if let Some(id) = self.upstream_request_id.as_deref().filter(|id| is_value(id.as_bytes())) {
            put(&X_UPSTREAM_REQUEST_ID, id.as_bytes());
        }
    }

    /// Into a response's map.
    pub(super) fn into_map(self, h: &mut http::HeaderMap) {
        h.reserve(ANSWER_HEADERS);
        self.each(|header, value| {
            if let Ok(v) = HeaderValue::from_bytes(value) {
                h.insert(header.name.clone(), v);
            }
        });
    }

    /// As header lines (`name: value\r\n`) at the end of `out`.
    pub(super) fn write_lines(&self, out: &mut Vec<u8>) {
        self.each(|header, value| {
            out.extend_from_slice(header.line.as_bytes());
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Tier;

    fn answer(streamed: bool) -> AnswerHeaders {
        AnswerHeaders {
            streamed,
            quality: Some("short".into()),
            cascade: "support".into(),
            model: "bad\r\nx-evil: 1".into(),
            tier: Tier::Discovered,
            rank: Some(12),
            attempts: 3,
            load_profile: Some("busy".into()),
            handoff_id: None,
            escalated: true,
            upstream_request_id: Some("req\u{7f}".into()),
        }
    }

    /// The lines the server writes and the map the router's entry points
    /// fill hold the same headers, in the same order, with the same checks.
    #[test]
    fn an_answer_s_headers_are_the_same_as_lines_and_in_a_map() {
        for streamed in [false, true] {
            let mut lines = Vec::new();
            answer(streamed).write_lines(&mut lines);
            let mut map = http::HeaderMap::new();
            answer(streamed).into_map(&mut map);
            let from_map: String = map.iter().map(|(n, v)| format!("{n}: {}\r\n", v.to_str().unwrap_or("?"))).collect();
            assert_eq!(String::from_utf8(lines).unwrap(), from_map);
            let kind = if streamed { "text/event-stream" } else { "application/json" };
            assert!(from_map.starts_with(&format!("content-type: {kind}\r\n")), "{from_map}");
            assert_eq!(streamed, from_map.contains("cache-control: no-cache\r\nx-accel-buffering: no\r\n"));
            for line in [
                "x-spillway-quality: short",
                "x-spillway-cascade: support",
                "x-spillway-model: invalid",
                "x-spillway-tier: discovered",
                "x-spillway-attempts: 3",
                "x-spillway-rank: 12",
                "x-spillway-load-profile: busy",
                "x-spillway-escalated: true",
            ] {
                assert!(from_map.contains(&format!("{line}\r\n")), "{line} in {from_map}");
            }
            assert!(!from_map.contains("x-evil") && !from_map.contains("upstream-request-id"), "{from_map}");
        }
    }
}
