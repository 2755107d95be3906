//! Reading "come back later" from an upstream's response headers (SPEC §6).
//!
//! Used by the cascade runner after each attempt, before the body is read:
//! - on a **429**, [`rate_limit_reset`] says how long the model stays dead
//!   (the runner falls back to `health.dead_ttl` on `None`);
//! - on **any** answer, [`reset_hint`] says whether a quota is already used
//!   up (`x-ratelimit-remaining-*: 0`), so the model can be skipped until the
//!   reset instead of collecting the 429 on the next request.
//!
//! The forms, from the reference (providers.md §1.6, §2, §3):
//! - `retry-after-ms: 1500` (OpenAI SDK's own header, milliseconds);
//! - `retry-after: 20`, `retry-after: 1.5` (seconds) or an HTTP date;
//! - `x-ratelimit-reset-requests` / `-tokens` (OpenAI, Groq) as Go durations:
//!   `1s`, `6m0s`, `2m59.56s`, `7.66s`, `120ms`; bare numbers are taken as
//!   seconds, since some OpenAI-compatible servers send those;
//! - OpenRouter's `x-ratelimit-reset` (with `x-ratelimit-remaining`), whose
//!   unit is unverified (probably epoch milliseconds). It is read by
//!   magnitude: ≥ 10¹² is epoch milliseconds (10¹² ms is September 2001),
//!   ≥ 10⁹ is epoch seconds (10⁹ s is also 2001), anything smaller is a
//!   number of seconds from now. A Go duration is accepted too.
//!
//! Times in the past come out as zero, never as an error: the upstream meant
//! "now". Unparseable values are ignored, never guessed.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::HeaderMap;

/// Response header fields, looked up by lowercase name: an
/// `http::HeaderMap` (answers read by reqwest, tests) or the request
/// path's own response head (`providers::http::Fields`).
pub trait Headers {
    /// The first value of the field `name` (lowercase), as sent.
    fn value(&self, name: &str) -> Option<&[u8]>;
    /// Whether some field's name starts with `prefix` (lowercase).
    fn any_name_starts_with(&self, prefix: &str) -> bool;
}

impl Headers for HeaderMap {
    fn value(&self, name: &str) -> Option<&[u8]> {
        self.get(name).map(http::HeaderValue::as_bytes)
    }

    fn any_name_starts_with(&self, prefix: &str) -> bool {
        self.keys().any(|k| k.as_str().starts_with(prefix))
    }
}

/// `(remaining, reset)` header pairs; OpenRouter's unsuffixed pair is last.
const PAIRS: [(&str, &str); 3] = [
    ("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"),
    ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"),
    ("x-ratelimit-remaining", "x-ratelimit-reset"),
];

/// Parses a Go `time.Duration` string: an optional `+`, then one or more
/// decimal numbers (fraction allowed) each with a unit `h`, `m`, `s`, `ms`,
/// `us`/`µs`/`μs`, `ns`; a bare `0` is zero. Negative durations and values
/// that overflow are `None`. Sub-nanosecond remainders are truncated.
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let mut rest = s.strip_prefix('+').unwrap_or(s);
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int, after) = rest.split_at(int_len);
        let (frac, after) = match after.strip_prefix('.') {
            Some(after) => {
                let n = after.bytes().take_while(u8::is_ascii_digit).count();
                after.split_at(n)
            }
            None => ("", after),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let unit_len =
            after.char_indices().find(|(_, c)| c.is_ascii_digit() || *c == '.').map_or(after.len(), |(i, _)| i);
        let (unit, after) = after.split_at(unit_len);
        let unit_ns: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        // Longer digit runs than u128 holds overflow any Duration anyway.
        let whole: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        total = total.checked_add(whole.checked_mul(unit_ns)?)?;
        // Digits past the 18th cannot matter at nanosecond precision (an
        // hour has 13 digits of nanoseconds), and keeping at most 18 means
        // `digits * unit_ns` cannot overflow.
        let frac = &frac[..frac.len().min(18)];
        if !frac.is_empty() {
            let digits: u128 = frac.parse().ok()?;
            total = total.checked_add(digits * unit_ns / 10u128.pow(frac.len() as u32))?;
        }
        rest = after;
    }
    let secs = u64::try_from(total / 1_000_000_000).ok()?;
    Some(Duration::new(secs, (total % 1_000_000_000) as u32))
}

/// How long a response's `retry-after-ms` or `retry-after` asks to wait:
/// `retry-after-ms` first (as the OpenAI SDK reads it), then `retry-after` as
/// seconds (floats tolerated), then as an HTTP date relative to `now`.
/// Negative values and past dates are zero.
pub fn retry_after(headers: &(impl Headers + ?Sized), now: SystemTime) -> Option<Duration> {
    if let Some(ms) = header(headers, "retry-after-ms").and_then(number) {
        return seconds(ms / 1000.0);
    }
    let value = header(headers, "retry-after")?;
    match number(value) {
        Some(secs) => seconds(secs),
        None => {
            let at = httpdate::parse_http_date(value).ok()?;
            Some(at.duration_since(now).unwrap_or(Duration::ZERO))
        }
    }
}

/// How long until the longest of the used-up quotas resets: the reset header
/// of every pair whose `x-ratelimit-remaining-*` is 0 (requests, tokens, or
/// OpenRouter's unsuffixed pair). `None` when no quota is used up, or when
/// none of the used-up ones says when it resets.
pub fn reset_hint(headers: &(impl Headers + ?Sized), now: SystemTime) -> Option<Duration> {
    // Called on every answer: one pass over the few headers most upstreams
    // send is cheaper than three name lookups that find nothing.
    if !headers.any_name_starts_with("x-ratelimit-remaining") {
        return None;
    }
    PAIRS
        .iter()
        .filter(|(remaining, _)| header(headers, remaining).and_then(number).is_some_and(|n| n <= 0.0))
        .filter_map(|(_, reset)| reset_value(header(headers, reset)?, now))
        .max()
}

/// The share of the tightest quota an answer says is left (0..1): each
/// `x-ratelimit-remaining-{requests,tokens}` over its
/// `x-ratelimit-limit-*`. `None` when no pair is given.
pub fn quota_left(headers: &(impl Headers + ?Sized)) -> Option<f64> {
    if !headers.any_name_starts_with("x-ratelimit-limit") {
        return None;
    }
    [
        ("x-ratelimit-remaining-requests", "x-ratelimit-limit-requests"),
        ("x-ratelimit-remaining-tokens", "x-ratelimit-limit-tokens"),
    ]
    .iter()
    .filter_map(|(remaining, limit)| {
        let (r, l) = (header(headers, remaining).and_then(number)?, header(headers, limit).and_then(number)?);
        (l > 0.0).then(|| (r / l).clamp(0.0, 1.0))
    })
    .min_by(f64::total_cmp)
}

/// How long a 429 asks the gateway to leave the model alone: `retry_after`
/// first; else the reset of a used-up quota ([`reset_hint`]); else the
/// longest reset header of any kind. The middle step matters for Groq, whose
/// `reset-requests` is the daily window: a 429 on tokens with plenty of
/// requests left should wait seconds for `reset-tokens`, not minutes.
pub fn rate_limit_reset(headers: &(impl Headers + ?Sized), now: SystemTime) -> Option<Duration> {
    retry_after(headers, now)
        .or_else(|| reset_hint(headers, now))
        .or_else(|| PAIRS.iter().filter_map(|(_, reset)| reset_value(header(headers, reset)?, now)).max())
}

/// A field's value as text, when it is visible ASCII (as
/// `HeaderValue::to_str` reads it), trimmed.
fn header<'h>(headers: &'h (impl Headers + ?Sized), name: &str) -> Option<&'h str> {
    let v = headers.value(name)?;
    if !v.iter().all(|&b| b == b'\t' || (0x20..0x7f).contains(&b)) {
        return None;
    }
    std::str::from_utf8(v).ok().map(str::trim)
}

fn number(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// Seconds as a duration; negative is zero, too large to represent is `None`.
fn seconds(secs: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(secs.max(0.0)).ok()
}

/// A reset header's value: a Go duration, or a number read by magnitude
/// (see the module docs).
fn reset_value(value: &str, now: SystemTime) -> Option<Duration> {
    let Some(n) = number(value) else {
        return parse_go_duration(value);
    };
    let epoch = if n >= 1e12 {
        Duration::try_from_secs_f64(n / 1000.0).ok()?
    } else if n >= 1e9 {
        Duration::try_from_secs_f64(n).ok()?
    } else {
        return seconds(n);
    };
    let at = UNIX_EPOCH.checked_add(epoch)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Response headers and the duration they should give.
    type Case<'a> = (&'a [(&'static str, &'a str)], Option<Duration>);

    fn ms(n: u64) -> Option<Duration> {
        Some(Duration::from_millis(n))
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            // from_bytes lowercases, so the cases can spell names as servers do.
            h.append(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    /// 2025-01-01T00:00:00Z, a fixed "now" for date forms.
    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_735_689_600)
    }

    #[test]
    fn go_durations() {
        let cases: &[(&str, Option<Duration>)] = &[
            ("1s", ms(1000)),
            ("6m0s", ms(360_000)),
            ("2m59.56s", ms(179_560)),
            ("7.66s", ms(7660)),
            ("120ms", ms(120)),
            ("12ms", ms(12)),
            ("1h2m3.5s", ms(3_723_500)),
            ("1.5us", Some(Duration::from_nanos(1500))),
            ("1.5µs", Some(Duration::from_nanos(1500))),
            ("2μs", Some(Duration::from_nanos(2000))),
            ("250ns", Some(Duration::from_nanos(250))),
            (".5s", ms(500)),
            ("5.s", ms(5000)),
            ("+3s", ms(3000)),
            ("0", Some(Duration::ZERO)),
            ("0s", Some(Duration::ZERO)),
            (" 7.66s ", ms(7660)),
            ("1.0000000000000000000001s", ms(1000)),
            ("0.123456789123s", Some(Duration::from_nanos(123_456_789))),
            ("", None),
            ("s", None),
            ("5", None),
            ("-1s", None),
            ("1d", None),
            ("1sm", None),
            ("1..5s", None),
            ("1 s", None),
            ("99999999999999999999999h", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_go_duration(input), *want, "{input:?}");
        }
    }

    #[test]
    fn retry_after_forms() {
        let cases: &[Case] = &[
            (&[("retry-after", "20")], ms(20_000)),
            (&[("retry-after", "1.5")], ms(1500)),
            (&[("Retry-After", " 3 ")], ms(3000)),
            (&[("retry-after", "-4")], ms(0)),
            (&[("retry-after-ms", "250")], ms(250)),
            (&[("retry-after-ms", "250"), ("retry-after", "9")], ms(250)),
            (&[("retry-after-ms", "soon"), ("retry-after", "9")], ms(9000)),
            (&[("retry-after", "Wed, 01 Jan 2025 00:01:30 GMT")], ms(90_000)),
            (&[("retry-after", "Tue, 31 Dec 2024 23:00:00 GMT")], ms(0)),
            (&[("retry-after", "tomorrow")], None),
            (&[("retry-after", "NaN")], None),
            (&[("retry-after", "1e300")], None),
            (&[], None),
        ];
        for (h, want) in cases {
            assert_eq!(retry_after(&headers(h), now()), *want, "{h:?}");
        }
    }

    #[test]
    fn reset_hint_needs_a_used_up_quota() {
        let cases: &[Case] = &[
            (
                &[
                    ("x-ratelimit-remaining-requests", "0"),
                    ("x-ratelimit-reset-requests", "2m59.56s"),
                    ("x-ratelimit-remaining-tokens", "5000"),
                    ("x-ratelimit-reset-tokens", "7.66s"),
                ],
                ms(179_560),
            ),
            (
                &[
                    ("x-ratelimit-remaining-requests", "14000"),
                    ("x-ratelimit-reset-requests", "2m59.56s"),
                    ("x-ratelimit-remaining-tokens", "0"),
                    ("x-ratelimit-reset-tokens", "7.66s"),
                ],
                ms(7660),
            ),
            (
                &[
                    ("x-ratelimit-remaining-requests", "0"),
                    ("x-ratelimit-reset-requests", "1s"),
                    ("x-ratelimit-remaining-tokens", "0"),
                    ("x-ratelimit-reset-tokens", "6m0s"),
                ],
                ms(360_000),
            ),
            (&[("x-ratelimit-remaining-requests", "3"), ("x-ratelimit-reset-requests", "1s")], None),
            (&[("x-ratelimit-remaining-tokens", "0")], None),
            (&[("x-ratelimit-remaining-tokens", "0"), ("x-ratelimit-reset-tokens", "whenever")], None),
            (&[("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1735689660000")], ms(60_000)),
        ];
        for (h, want) in cases {
            assert_eq!(reset_hint(&headers(h), now()), *want, "{h:?}");
        }
    }

    #[test]
    fn rate_limit_reset_for_a_429() {
        let groq_tokens = [
            ("x-ratelimit-remaining-requests", "14370"),
            ("x-ratelimit-reset-requests", "2m59.56s"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "7.66s"),
        ];
        let cases: &[Case] = &[
            (&[("retry-after", "2"), ("x-ratelimit-reset-tokens", "7.66s")], ms(2000)),
            (&groq_tokens, ms(7660)),
            (&[("x-ratelimit-reset-requests", "120ms"), ("x-ratelimit-reset-tokens", "1.5s")], ms(1500)),
            // OpenRouter: epoch milliseconds, epoch seconds, seconds from now.
            (&[("x-ratelimit-reset", "1735689630000")], ms(30_000)),
            (&[("x-ratelimit-reset", "1735689610")], ms(10_000)),
            (&[("x-ratelimit-reset", "45")], ms(45_000)),
            (&[("x-ratelimit-reset", "1700000000000")], ms(0)),
            (&[("x-ratelimit-reset", "1m")], ms(60_000)),
            (&[("x-ratelimit-limit", "20")], None),
            (&[], None),
        ];
        for (h, want) in cases {
            assert_eq!(rate_limit_reset(&headers(h), now()), *want, "{h:?}");
        }
    }
}
