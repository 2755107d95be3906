//! `responses:` as compiled.

use std::time::Duration;

/// `responses:`: what the gateway keeps of the Responses API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponsesConfig {
    /// Keep responses whose client did not say `store: false`.
    pub store: bool,
    /// How long a stored response is kept.
    pub retention: Duration,
    /// The most responses kept (the oldest go first).
    pub max_stored: u64,
}

impl Default for ResponsesConfig {
    fn default() -> Self {
        Self { store: true, retention: Duration::from_secs(30 * 24 * 3600), max_stored: 100_000 }
    }
}
