//! `health:` as compiled: breakers, retries, timeouts, stream rules.

use std::time::Duration;

/// `health:`
#[derive(Debug, Clone)]
pub struct HealthConfig {
    /// Default dead-mark length.
    pub dead_ttl: Duration,
    /// Breaker rules.
    pub breaker: BreakerConfig,
    /// Connect retries.
    pub retries: RetryConfig,
    /// Deadlines.
    pub timeouts: TimeoutConfig,
    /// Stream events that may be skipped.
    pub streams: StreamRules,
}

/// `health.streams`
#[derive(Debug, Clone, Copy)]
pub struct StreamRules {
    /// Unreadable events skipped per attempt before it is a broken body.
    pub max_skipped_events: u32,
}

/// `health.breaker`
#[derive(Debug, Clone, Copy)]
pub struct BreakerConfig {
    /// Rolling window.
    pub window: Duration,
    /// Failures in a row.
    pub consecutive_failures: u32,
    /// Failure share.
    pub failure_rate: f64,
    /// Minimum requests for the rate rule.
    pub min_requests: u32,
    /// The longest open period.
    pub open_for: Duration,
    /// The first open period; doubled by each failed probe up to `open_for`.
    pub open_min: Duration,
}

impl BreakerConfig {
    /// How long the breaker stays open after `reopens` failed probes in a
    /// row, for a model that has been failing for `failing_for` (since its
    /// last answer): `open_min` doubled that often, never past `open_for`,
    /// and never past half of `failing_for` (nor below `open_min`: an
    /// `open_for` below the default `open_min` means that fixed period).
    ///
    /// The half bound is what keeps a short outage short: an open period is
    /// a bet that the outage outlasts it, and (on the heavy-tailed view of
    /// outages) one that has lasted `T` so far is as likely as not to end
    /// within another `T`; waiting
    /// longer than `T / 2` overshoots the recovery of short outages by
    /// tens of seconds to save a probe or two on long ones (a 60 s outage
    /// is noticed within ~10 s of its end instead of ~30 s; a 38-minute one
    /// costs 26 probes instead of 22).
    pub fn open_period(&self, reopens: u32, failing_for: Duration) -> Duration {
        let doubled = self.open_min.saturating_mul(1 << reopens.min(20));
        doubled.min(self.open_for).min((failing_for / 2).max(self.open_min))
    }
}

/// `health.retries`
#[derive(Debug, Clone, Copy)]
pub struct RetryConfig {
    /// Retries.
    pub max: u32,
    /// Base backoff.
    pub backoff: Duration,
    /// Jitter share.
    pub jitter: f64,
    /// Longest `Retry-After` of a 429 that is waited out (zero: never).
    pub wait_retry_after_up_to: Duration,
    /// 5xx statuses retried once on the same model (bit `s - 500`).
    pub on_status: u128,
}

impl RetryConfig {
    /// `status` is listed in `on_status`.
    pub fn retries_status(&self, status: u16) -> bool {
        status.checked_sub(500).is_some_and(|bit| bit < 100 && self.on_status & (1u128 << bit) != 0)
    }
}

/// `health.timeouts`
#[derive(Debug, Clone, Copy)]
pub struct TimeoutConfig {
    /// Connect.
    pub connect: Duration,
    /// First token / response headers.
    pub first_token: Duration,
    /// First token of the last model a request can use (default `total`).
    pub last_model_first_token: Duration,
    /// Mid-stream silence.
    pub idle: Duration,
    /// Whole request.
    pub total: Duration,
}
