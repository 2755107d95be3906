//! Durations (`250ms`, `2s`, `10m`, `12h`, `30d`) and byte sizes (`4MiB`)
//! as they appear in the config file.
//!
//! Written by hand because the grammar is tiny and the error messages must
//! name the accepted forms; `humantime` would accept spellings the SPEC does
//! not promise and reword the errors.

use std::time::Duration;

/// Parses a config duration: an unsigned number (decimals allowed) followed
/// by `ms`, `s`, `m`, `h` or `d`; several parts may be chained (`1m30s`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("expected a duration such as 250ms, 2s, 10m, 12h".into());
    }
    let bad =
        || format!("invalid duration `{text}`: expected a number with a unit (ms, s, m, h, d), e.g. 250ms, 2s, 10m");
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        if num_len == 0 {
            return Err(bad());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            _ => return Err(bad()),
        };
        total += value * factor;
        rest = &rest[unit_len..];
    }
    if !total.is_finite() || total > 10.0 * 365.0 * 86_400.0 {
        return Err(format!("duration `{text}` is too long"));
    }
    Ok(Duration::from_secs_f64(total))
}

/// Parses a byte size: plain digits are bytes; otherwise a number followed by
/// `B`, `KB`/`MB`/`GB` (powers of 1000) or `KiB`/`MiB`/`GiB` (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let s = text.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let bad = || format!("invalid size `{text}`: expected bytes or a number with a unit (KiB, MiB, GiB, KB, MB, GB)");
    if split == 0 {
        return Err(bad());
    }
    let value: f64 = s[..split].parse().map_err(|_| bad())?;
    let factor: f64 = match s[split..].trim() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let bytes = value * factor;
    if !bytes.is_finite() || bytes > 1e15 {
        return Err(format!("size `{text}` is too large"));
    }
    Ok(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("12h").unwrap(), Duration::from_secs(43_200));
        assert_eq!(parse_duration("30d").unwrap(), Duration::from_secs(30 * 86_400));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        for bad in ["", "5", "s", "5x", "-1s", "1 s", "ms5"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4MiB").unwrap(), 4 * 1024 * 1024);
        assert_eq!(parse_size("512KiB").unwrap(), 512 * 1024);
        assert_eq!(parse_size("1MB").unwrap(), 1_000_000);
        assert_eq!(parse_size("100").unwrap(), 100);
        for bad in ["", "MiB", "4XB", "-1"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
