//! The fixed headers of an adapter's requests, prepared once when the
//! provider is built: `content-type`, the configured extra headers, and
//! secrets (keys, tokens) as sensitive header values.
//!
//! A leaf of `providers/`: used by every HTTP adapter and by discovery's
//! listings, which send the same headers.

use super::types::BuildError;
use crate::config::{ProviderConfig, Secret};
use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};

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
