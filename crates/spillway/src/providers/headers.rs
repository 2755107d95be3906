//! The fixed headers of an adapter's requests, prepared once when the
//! provider is built: `content-type`, the configured extra headers, and
//! secrets (keys, tokens) as sensitive header values.
//!
//! A leaf of `providers/`: used by every HTTP adapter and by discovery's
//! listings, which send the same headers.

use super::types::{BuildError, CallIds};
use crate::config::{ProviderConfig, Secret};
use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};

/// The request id a call carries upstream (the client's request's id),
/// and the header most upstreams name their own call's id with.
pub(crate) const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The id an upstream gave its answer: `x-request-id` (OpenAI and most
/// compatible APIs) or `request-id` (Anthropic), when it is a short
/// printable value (it goes back to the client as a header).
pub(crate) fn upstream_request_id(headers: &(impl crate::health::ratelimit::Headers + ?Sized)) -> Option<String> {
    let b = headers.value("x-request-id").or_else(|| headers.value("request-id"))?;
    (!b.is_empty() && b.len() <= 200 && b.iter().all(u8::is_ascii_graphic))
        .then(|| String::from_utf8_lossy(b).into_owned())
}

/// The names [`call_headers`] sets: a call's own value replaces a fixed
/// header of the same name.
pub(crate) const CALL_HEADERS: [&str; 3] = ["x-request-id", "traceparent", "tracestate"];

/// The headers of a call's ids, each when its value is a valid header
/// value, as text (written as it is by the gateway's own client).
pub(crate) fn call_values(ids: CallIds<'_>) -> impl Iterator<Item = (HeaderName, &str)> + '_ {
    [
        (X_REQUEST_ID, ids.request_id),
        (HeaderName::from_static("traceparent"), ids.traceparent),
        (HeaderName::from_static("tracestate"), ids.tracestate),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((name, value.filter(|v| crate::api::headers::is_value(v.as_bytes()))?)))
}

/// [`call_values`] as header values, for the clients that take a map.
pub(crate) fn call_headers(ids: CallIds<'_>) -> impl Iterator<Item = (HeaderName, HeaderValue)> + '_ {
    call_values(ids).filter_map(|(name, value)| Some((name, HeaderValue::from_str(value).ok()?)))
}

/// `content-type: application/json` plus the configured extra headers.
pub(crate) fn base_headers(config: &ProviderConfig) -> Result<HeaderMap, BuildError> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in &config.headers {
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| BuildError {
            provider: config.name.clone(),
            message: format!("invalid header name `{name}`"),
        })?;
        headers.insert(n, secret_header(config, "", value)?);
    }
    Ok(headers)
}

/// A header value made of `prefix` and a secret, marked sensitive so it
/// never shows in debug output. The error names neither.
pub(crate) fn secret_header(config: &ProviderConfig, prefix: &str, secret: &Secret) -> Result<HeaderValue, BuildError> {
    let mut v = HeaderValue::from_str(&format!("{prefix}{}", secret.expose())).map_err(|_| BuildError {
        provider: config.name.clone(),
        message: "a key or header value contains characters not allowed in a header".into(),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs.iter().map(|(n, v)| (HeaderName::from_static(n), HeaderValue::from_static(v))).collect()
    }

    #[test]
    fn the_upstream_id_is_x_request_id_before_request_id_in_any_order() {
        let both = map(&[("request-id", "req_anthropic"), ("content-type", "x"), ("x-request-id", "req_openai")]);
        assert_eq!(upstream_request_id(&both).as_deref(), Some("req_openai"));
        let both = map(&[("x-request-id", "req_openai"), ("request-id", "req_anthropic")]);
        assert_eq!(upstream_request_id(&both).as_deref(), Some("req_openai"));
        let anthropic = map(&[("date", "now"), ("request-id", "req_anthropic")]);
        assert_eq!(upstream_request_id(&anthropic).as_deref(), Some("req_anthropic"));
        assert_eq!(upstream_request_id(&map(&[("content-type", "application/json")])), None);
    }

    #[test]
    fn an_upstream_id_that_is_not_short_and_printable_is_left_out() {
        assert_eq!(upstream_request_id(&map(&[("x-request-id", "")])), None);
        assert_eq!(upstream_request_id(&map(&[("x-request-id", "two words")])), None);
        let long: &'static str = Box::leak("a".repeat(201).into_boxed_str());
        assert_eq!(upstream_request_id(&map(&[("x-request-id", long)])), None);
    }
}
