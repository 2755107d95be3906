//! A secret config value (API keys, tokens, URLs with passwords).
//!
//! It has a redacted `Debug` and `Display` and no `Serialize`, so it cannot
//! reach a log line, an error message or `spillway check` output by
//! accident; code that must send it calls [`Secret::expose`].

use std::fmt;

/// A string that must never be printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for the one place that sends it upstream.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Lowercase hex SHA-256 of `value`: how virtual keys' secrets are kept
/// (in the compiled config and the key store), so a leaked store or config
/// dump holds no usable key. Secrets are random and long, so a plain hash
/// (no salt, no stretching) is enough to make them unrecoverable.
pub fn sha256_hex(value: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, value.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_printed() {
        let s = Secret::new("sk-live-123");
        assert_eq!(format!("{s:?} {s}"), "*** ***");
        assert_eq!(s.expose(), "sk-live-123");
    }

    #[test]
    fn hashes_are_sha256() {
        assert_eq!(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
