//! Logging setup: `tracing` to stderr, human-readable on a terminal, JSON
//! with `SPILLWAY_LOG_FORMAT=json`, level from `SPILLWAY_LOG` or `RUST_LOG`
//! (default `info`).

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber; a second call is a no-op.
pub fn init() {
    init_with_default("info");
}

/// [`init`] with another level when neither variable sets one (`spillway
/// drill` reports alerts itself, so it logs errors only).
pub fn init_with_default(level: &str) {
    let filter = std::env::var("SPILLWAY_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| level.to_string());
    let filter = EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new(level));
    let json = std::env::var("SPILLWAY_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let result =
        if json { builder.json().try_init() } else { builder.with_ansi(std::io::stderr().is_terminal()).try_init() };
    // Already installed (tests): keep the first.
    let _ = result;
}
