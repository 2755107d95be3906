//! The health layer's clock: wall-clock milliseconds derived from tokio's
//! monotonic clock.
//!
//! Dead marks and breaker deadlines are absolute times (so they can be
//! shared between instances through Redis), yet tests must be able to pause
//! and advance time. Reading `SystemTime` once and adding tokio's elapsed
//! time gives both: real wall-clock values in production, virtual ones
//! under `#[tokio::test(start_paused = true)]`.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

fn base() -> &'static (u64, Instant) {
    static BASE: OnceLock<(u64, Instant)> = OnceLock::new();
    BASE.get_or_init(|| {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        (wall, Instant::now())
    })
}

/// Milliseconds since the Unix epoch, advancing with tokio's clock.
pub fn now_ms() -> u64 {
    let (wall, at) = base();
    wall + Instant::now().saturating_duration_since(*at).as_millis() as u64
}
