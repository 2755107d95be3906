//! Times in a drill's report: clock-style offsets from the drill's start
//! (`2:05`, `1:02:05`), and alert texts rewritten to them — a drill's clock
//! is virtual, so the dates alerts write would read as wall-clock times
//! minutes or hours ahead.

/// `text` with every `YYYY-MM-DD HH:MM:SS UTC` (what alerts write) as the
/// time since `start_ms`, `T+m:ss`: a drill's clock is virtual, so its
/// dates would read as wall-clock times minutes or hours ahead.
pub fn relative_times(text: &str, start_ms: u64) -> String {
    const LEN: usize = "2025-01-01 12:00:00 UTC".len();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if let Some(at_ms) = text.get(i..i + LEN).filter(|_| text.is_char_boundary(i)).and_then(parse_utc) {
            out.push_str("T+");
            out.push_str(&clock(at_ms.saturating_sub(start_ms) as f64 / 1000.0));
            i += LEN;
            continue;
        }
        let ch_len = text[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&text[i..i + ch_len]);
        i += ch_len;
    }
    out
}

/// `YYYY-MM-DD HH:MM:SS UTC` as Unix milliseconds.
fn parse_utc(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let shape = b.len() == 23 && b[4] == b'-' && b[7] == b'-' && b[10] == b' ' && b[13] == b':' && b[16] == b':';
    if !shape || !s.ends_with(" UTC") {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (hh, mm, ss) = (n(11..13)?, n(14..16)?, n(17..19)?);
    // Days from the civil date (H. Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1000).max(0)).ok()
}

/// `125.0` → `2:05`; hours when needed.
pub fn clock(seconds: f64) -> String {
    let s = seconds.round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alert_times_read_from_the_drills_start() {
        let start = 1_700_000_000_000; // 2023-11-14 22:13:20 UTC
        let text = "Breaker opened for m: 503. Traffic goes to the next model since 2023-11-14 22:15:25 UTC.";
        assert_eq!(
            relative_times(text, start),
            "Breaker opened for m: 503. Traffic goes to the next model since T+2:05."
        );
        assert_eq!(relative_times("Предохранитель с 2023-11-14 23:13:20 UTC", start), "Предохранитель с T+1:00:00");
        assert_eq!(relative_times("no time here", start), "no time here");
    }
}
