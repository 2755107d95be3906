//! Client and admin credentials: the one bearer-token parser and the one
//! comparison every route uses (chat, models, handoff, admin).
//!
//! Tokens are compared as HMAC-SHA-256 tags under a per-process random key
//! (ring's `hmac::verify`, constant time over the fixed 32-byte tag): the
//! time a comparison takes depends neither on where the strings differ nor
//! on their lengths, which a byte-by-byte comparison that first checks the
//! length would give away.

use crate::config::Secret;
use http::{header, HeaderMap};
use ring::hmac;
use std::sync::OnceLock;

/// The token of `Authorization: Bearer <token>` (the scheme matched
/// without regard to case, RFC 7235), trimmed; `None` without one.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = crate::api::headers::find(headers, &header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The key tokens are tagged with. Random per process: the tags are never
/// stored or compared across processes.
fn key() -> &'static hmac::Key {
    static KEY: OnceLock<hmac::Key> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut bytes = [0u8; 32];
        if getrandom::fill(&mut bytes).is_err() {
            // Only the comparison's timing rests on it, and ring's
            // verification is constant time with any key.
            bytes = std::array::from_fn(|_| fastrand::u8(..));
        }
        hmac::Key::new(hmac::HMAC_SHA256, &bytes)
    })
}

/// Whether `given` equals `expected`, in time independent of both.
pub(crate) fn same(given: &str, expected: &str) -> bool {
    let tag = hmac::sign(key(), given.as_bytes());
    hmac::verify(key(), expected.as_bytes(), tag.as_ref()).is_ok()
}

/// The configured key that `given` is, if any. Every key is compared (no
/// early exit), so the time does not tell which one matched or how many
/// were tried.
pub(crate) fn find<'a>(keys: &'a [Secret], given: &str) -> Option<&'a Secret> {
    let tag = hmac::sign(key(), given.as_bytes());
    keys.iter().fold(None, |found, k| {
        let hit = hmac::verify(key(), k.expose().as_bytes(), tag.as_ref()).is_ok();
        found.or(hit.then_some(k))
    })
}

/// Who sent a request with `token`: a virtual key (`keys:`), a plain key
/// (`server.api_keys`), or anyone when neither is configured; 401 for a
/// missing, unknown or expired key. The virtual key's id goes on the
/// request's log lines.
pub(crate) fn identify(
    gw: &crate::gateway::Gateway,
    token: Option<&str>,
) -> Result<crate::tenancy::admit::Caller, crate::api::ApiError> {
    let caller = crate::tenancy::admit::identify(
        &gw.keys,
        &gw.shared.tenancy.registry,
        &gw.config.server.api_keys,
        |keys, t| find(keys, t).cloned(),
        token,
        crate::health::clock::now_ms,
    )
    .ok_or(crate::api::ApiError::Unauthorized)?;
    if let Some(k) = caller.key() {
        tracing::Span::current().record("key", tracing::field::display(&k.id));
    }
    Ok(caller)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn bearer_tokens_are_read_from_one_place() {
        assert_eq!(bearer(&headers("Bearer sk-1")), Some("sk-1"));
        assert_eq!(bearer(&headers("bearer  sk-1 ")), Some("sk-1"));
        assert_eq!(bearer(&headers("BEARER sk-1")), Some("sk-1"));
        assert_eq!(bearer(&headers("Basic c2stMQ==")), None);
        assert_eq!(bearer(&headers("Bearer ")), None);
        assert_eq!(bearer(&headers("Bearersk-1")), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
    }

    #[test]
    fn comparison_is_exact() {
        assert!(same("sk-secret", "sk-secret"));
        assert!(!same("sk-secret", "sk-secreT"));
        assert!(!same("sk-secre", "sk-secret"), "a prefix is not the key");
        assert!(!same("", "sk-secret"));
        let keys = [Secret::new("a-key"), Secret::new("b-key")];
        assert_eq!(find(&keys, "b-key").map(Secret::expose), Some("b-key"));
        assert_eq!(find(&keys, "c-key"), None);
    }
}
