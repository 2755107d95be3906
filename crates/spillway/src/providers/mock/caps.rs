//! What a mock model holds back beyond its per-minute rate: Groq's daily
//! caps ([`Daily`]: requests and tokens per day, refused with the headers
//! Groq sends, which the gateway reads as it reads any 429's) and a
//! vLLM-like queue ([`Queues`]: past `concurrency`, requests wait for a
//! place instead of slowing everyone or being refused).

use crate::config::MockBehavior;
use crate::outcome::{AttemptError, Failure};
use http::{HeaderMap, HeaderValue};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

const DAY: Duration = Duration::from_secs(24 * 3600);

/// One model's use in the current day.
#[derive(Debug, Default)]
struct Day {
    /// Days since start-up.
    index: u64,
    requests: u64,
    tokens: u64,
}

/// Daily use per model. A std mutex: held for a few instructions, never
/// across an await.
#[derive(Debug, Default)]
pub(super) struct Daily {
    used: Mutex<HashMap<String, Day>>,
}

impl Daily {
    /// Counts a request of `model` against its daily caps, `elapsed` since
    /// start-up; the 429 to answer when a cap is reached.
    pub(super) fn take(&self, model: &str, b: &MockBehavior, elapsed: Duration) -> Option<AttemptError> {
        if b.requests_per_day.is_none() && b.tokens_per_day.is_none() {
            return None;
        }
        let index = elapsed.as_secs() / DAY.as_secs();
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        let day = used.entry(model.to_owned()).or_default();
        if day.index != index {
            *day = Day { index, ..Day::default() };
        }
        let requests_out = b.requests_per_day.is_some_and(|cap| day.requests >= u64::from(cap));
        let tokens_out = b.tokens_per_day.is_some_and(|cap| day.tokens >= cap);
        if !requests_out && !tokens_out {
            day.requests += 1;
            return None;
        }
        let left = DAY.saturating_mul(u32::try_from(index + 1).unwrap_or(u32::MAX)).saturating_sub(elapsed);
        let headers = groq_headers(b, day, left, requests_out, tokens_out);
        // Read back as the OpenAI-compatible adapter reads a real 429.
        let retry_after = crate::health::ratelimit::rate_limit_reset(&headers, std::time::SystemTime::now());
        let what = if requests_out { "requests" } else { "tokens" };
        Some(AttemptError::new(Failure::RateLimited { retry_after }, format!("HTTP 429 (mock daily cap of {what})")))
    }

    /// Counts an answer's tokens against the model's day.
    pub(super) fn spend(&self, model: &str, b: &MockBehavior, tokens: u64) {
        if b.tokens_per_day.is_some() {
            let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(day) = used.get_mut(model) {
                day.tokens += tokens;
            }
        }
    }
}

/// Groq's rate-limit headers for a used-up day.
fn groq_headers(b: &MockBehavior, day: &Day, left: Duration, requests_out: bool, tokens_out: bool) -> HeaderMap {
    let mut h = HeaderMap::new();
    let mut put = |name: &'static str, value: String| {
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(name, v);
        }
    };
    if let Some(cap) = b.requests_per_day {
        put("x-ratelimit-limit-requests", cap.to_string());
        let remaining = u64::from(cap).saturating_sub(day.requests);
        put("x-ratelimit-remaining-requests", if requests_out { 0 } else { remaining }.to_string());
        put("x-ratelimit-reset-requests", go_duration(left));
    }
    if let Some(cap) = b.tokens_per_day {
        put("x-ratelimit-limit-tokens", cap.to_string());
        put("x-ratelimit-remaining-tokens", if tokens_out { 0 } else { cap.saturating_sub(day.tokens) }.to_string());
        put("x-ratelimit-reset-tokens", go_duration(left));
    }
    h
}

/// A duration as Go prints it (`2h3m0s`, `7m12.5s`), as Groq sends it.
fn go_duration(d: Duration) -> String {
    let (h, m, s, ms) = (d.as_secs() / 3600, d.as_secs() / 60 % 60, d.as_secs() % 60, d.subsec_millis());
    let secs = if ms == 0 { format!("{s}s") } else { format!("{}s", format!("{s}.{ms:03}").trim_end_matches('0')) };
    match (h, m) {
        (0, 0) => secs,
        (0, m) => format!("{m}m{secs}"),
        (h, m) => format!("{h}h{m}m{secs}"),
    }
}

/// A FIFO queue per model with `concurrency` places.
#[derive(Debug, Default)]
pub(super) struct Queues {
    by_model: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl Queues {
    /// Waits for a place of `model` (at once without `concurrency`); the
    /// place is held until the permit drops, at the answer's end.
    pub(super) async fn enter(&self, model: &str, b: &MockBehavior) -> Option<OwnedSemaphorePermit> {
        let places = b.concurrency?;
        let queue = {
            let mut by_model = self.by_model.lock().unwrap_or_else(PoisonError::into_inner);
            by_model.entry(model.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(places as usize))).clone()
        };
        // Tokio's semaphore is fair: waiters get places in arrival order.
        queue.acquire_owned().await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_go_writes_them() {
        assert_eq!(go_duration(Duration::from_secs(2 * 3600 + 180)), "2h3m0s");
        assert_eq!(go_duration(Duration::from_millis(7 * 60_000 + 12_500)), "7m12.5s");
        assert_eq!(go_duration(Duration::from_secs(9)), "9s");
        for d in [Duration::from_secs(2 * 3600 + 180), Duration::from_millis(432_500), Duration::from_secs(9)] {
            assert_eq!(crate::health::ratelimit::parse_go_duration(&go_duration(d)), Some(d));
        }
    }
}
