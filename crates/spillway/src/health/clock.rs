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

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`; written by hand to avoid a date
/// crate for one conversion).
pub fn civil_day(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// `YYYY-MM-DD` of a UTC day number.
pub fn day_text(day: u64) -> String {
    let (y, m, d) = civil_day(day);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days() {
        assert_eq!(civil_day(0), (1970, 1, 1));
        assert_eq!(civil_day(11_016), (2000, 2, 29));
        assert_eq!(day_text(20_421), "2025-11-29");
    }
}
