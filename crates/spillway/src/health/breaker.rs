//! The circuit breaker of one model ref: closed → open → half-open → closed.
//!
//! It opens on `consecutive_failures` failures in a row, or when the
//! failure share over the rolling `window` reaches `failure_rate` with at
//! least `min_requests` requests; it stays open for `open_min` at first,
//! twice as long after each failed probe, at most `open_for` and at most
//! half as long as the model has been failing, and back to `open_min` once
//! a probe answers (so a long outage costs a few probes and a short one
//! delays recovery by seconds, not minutes; see
//! `BreakerConfig::open_period`); then exactly
//! one probe is let through — whatever the concurrency, because admission
//! and the state change happen under one lock — and its result closes or
//! reopens it. The [`TripReason`] says which rule opened it.
//!
//! Only upstream failures count (5xx, timeouts, connection errors, broken
//! bodies); the runner decides that, this type only counts.

use crate::config::BreakerConfig;
use std::collections::VecDeque;
use std::fmt;

/// Why a breaker opened.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TripReason {
    /// `n` failures in a row.
    ConsecutiveFailures(u32),
    /// `failures` of `requests` in the window.
    FailureRate {
        /// Failures in the window.
        failures: u32,
        /// Requests in the window.
        requests: u32,
    },
    /// The half-open probe failed.
    ProbeFailed,
    /// Another instance opened it (shared state).
    Remote,
}

impl fmt::Display for TripReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ConsecutiveFailures(n) => write!(f, "{n} consecutive failures"),
            Self::FailureRate { failures, requests } => {
                write!(f, "failure rate {failures}/{requests} over the window")
            }
            Self::ProbeFailed => f.write_str("the half-open probe failed"),
            Self::Remote => f.write_str("opened by another instance"),
        }
    }
}

/// The breaker's state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum State {
    /// Traffic flows.
    Closed,
    /// Traffic is refused until `until_ms`.
    Open {
        /// When a probe may go.
        until_ms: u64,
        /// Why it opened.
        reason: TripReason,
    },
    /// One probe decides.
    HalfOpen {
        /// A probe is in flight.
        probing: bool,
        /// Why it had opened.
        reason: TripReason,
    },
}

impl State {
    /// Gauge value: 0 closed, 1 open, 2 half-open.
    pub fn gauge(&self) -> i64 {
        match self {
            Self::Closed => 0,
            Self::Open { .. } => 1,
            Self::HalfOpen { .. } => 2,
        }
    }

    /// `closed`, `open`, `half_open`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open { .. } => "open",
            Self::HalfOpen { .. } => "half_open",
        }
    }
}

/// What the breaker lets a request do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Go ahead.
    Pass,
    /// Go ahead as the one half-open probe (report its result).
    Probe,
    /// Skip this model.
    Reject,
}

/// A state change worth logging and alerting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Transition {
    /// Closed or half-open → open.
    Opened(TripReason),
    /// Open → half-open.
    HalfOpened,
    /// Half-open → closed.
    Closed,
}

/// One second of outcomes.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    second: u64,
    ok: u32,
    failed: u32,
}

/// The breaker of one model.
#[derive(Debug, Clone)]
pub struct Breaker {
    state: State,
    consecutive: u32,
    /// Probes that failed in a row since the breaker last closed: each
    /// doubles the next open period (`BreakerConfig::open_period`).
    reopens: u32,
    /// When the model last started failing (its first failure since its
    /// last answer): bounds the open period (`BreakerConfig::open_period`).
    failing_since_ms: Option<u64>,
    /// Per-second counts over the window (bounded by its length in seconds).
    buckets: VecDeque<Bucket>,
}

impl Default for Breaker {
    fn default() -> Self {
        Self::new()
    }
}

impl Breaker {
    /// A closed breaker.
    pub fn new() -> Self {
        Self { state: State::Closed, consecutive: 0, reopens: 0, failing_since_ms: None, buckets: VecDeque::new() }
    }

    /// Its state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Decides whether a request may go to this model now.
    pub fn admit(&mut self, now_ms: u64) -> (Admission, Option<Transition>) {
        match self.state {
            State::Closed => (Admission::Pass, None),
            State::Open { until_ms, reason } if now_ms >= until_ms => {
                self.state = State::HalfOpen { probing: true, reason };
                (Admission::Probe, Some(Transition::HalfOpened))
            }
            State::Open { .. } => (Admission::Reject, None),
            State::HalfOpen { probing: false, reason } => {
                self.state = State::HalfOpen { probing: true, reason };
                (Admission::Probe, None)
            }
            State::HalfOpen { probing: true, .. } => (Admission::Reject, None),
        }
    }

    /// A probe ended without a verdict (the client left, or the outcome
    /// neither proved nor disproved the upstream): let the next request probe.
    pub fn release_probe(&mut self) {
        if let State::HalfOpen { probing: true, reason } = self.state {
            self.state = State::HalfOpen { probing: false, reason };
        }
    }

    /// Records an answered request.
    pub fn on_success(&mut self, now_ms: u64, cfg: &BreakerConfig) -> Option<Transition> {
        self.consecutive = 0;
        self.failing_since_ms = None;
        self.count(now_ms, cfg, false);
        match self.state {
            State::HalfOpen { .. } => {
                self.state = State::Closed;
                self.buckets.clear();
                self.reopens = 0;
                Some(Transition::Closed)
            }
            _ => None,
        }
    }

    /// Records an upstream failure.
    pub fn on_failure(&mut self, now_ms: u64, cfg: &BreakerConfig) -> Option<Transition> {
        self.consecutive = self.consecutive.saturating_add(1);
        self.failing_since_ms.get_or_insert(now_ms);
        self.count(now_ms, cfg, true);
        match self.state {
            State::HalfOpen { .. } => Some(self.open(now_ms, cfg, TripReason::ProbeFailed)),
            State::Open { .. } => None,
            State::Closed => {
                if self.consecutive >= cfg.consecutive_failures {
                    return Some(self.open(now_ms, cfg, TripReason::ConsecutiveFailures(self.consecutive)));
                }
                let (requests, failures) = self.window_counts();
                if requests >= cfg.min_requests
                    && requests > 0
                    && f64::from(failures) / f64::from(requests) >= cfg.failure_rate
                {
                    return Some(self.open(now_ms, cfg, TripReason::FailureRate { failures, requests }));
                }
                None
            }
        }
    }

    /// Opens it now (also when another instance reports it open).
    pub fn open(&mut self, now_ms: u64, cfg: &BreakerConfig, reason: TripReason) -> Transition {
        if reason == TripReason::ProbeFailed {
            self.reopens = self.reopens.saturating_add(1);
        }
        let failing_for = now_ms.saturating_sub(self.failing_since_ms.unwrap_or(now_ms));
        let period = cfg.open_period(self.reopens, std::time::Duration::from_millis(failing_for));
        self.state = State::Open { until_ms: now_ms + period.as_millis() as u64, reason };
        self.consecutive = 0;
        self.buckets.clear();
        Transition::Opened(reason)
    }

    /// Moves the deadline of an open breaker (a trip shared by another
    /// instance carries its own deadline).
    pub fn set_open_until(&mut self, until_ms: u64) {
        if let State::Open { reason, .. } = self.state {
            self.state = State::Open { until_ms, reason };
        }
    }

    /// Closes it (admin revive).
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    fn count(&mut self, now_ms: u64, cfg: &BreakerConfig, failed: bool) {
        let second = now_ms / 1000;
        let window_s = cfg.window.as_secs().max(1);
        while self.buckets.front().is_some_and(|b| b.second + window_s <= second) {
            self.buckets.pop_front();
        }
        match self.buckets.back_mut() {
            Some(b) if b.second == second => {
                if failed {
                    b.failed += 1;
                } else {
                    b.ok += 1;
                }
            }
            _ => self.buckets.push_back(Bucket { second, ok: u32::from(!failed), failed: u32::from(failed) }),
        }
    }

    fn window_counts(&self) -> (u32, u32) {
        self.buckets.iter().fold((0, 0), |(r, f), b| (r + b.ok + b.failed, f + b.failed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cfg() -> BreakerConfig {
        BreakerConfig {
            open_min: Duration::from_secs(10),
            window: Duration::from_secs(60),
            consecutive_failures: 3,
            failure_rate: 0.5,
            min_requests: 6,
            open_for: Duration::from_secs(10),
        }
    }

    fn open_until(b: &Breaker) -> u64 {
        match b.state() {
            State::Open { until_ms, .. } => until_ms,
            other => panic!("not open: {other:?}"),
        }
    }

    /// Probes a breaker that opened at `now` until `outage_ms` has passed;
    /// returns each open period (ms) and the time of the first probe after
    /// the outage (which answers).
    fn probe_through(b: &mut Breaker, c: &BreakerConfig, mut now: u64, outage_ms: u64) -> (Vec<u64>, u64) {
        let mut periods = Vec::new();
        loop {
            let until = open_until(b);
            periods.push(until - now);
            now = until;
            assert_eq!(b.admit(now).0, Admission::Probe);
            if now >= outage_ms {
                assert_eq!(b.on_success(now, c), Some(Transition::Closed));
                return (periods, now);
            }
            b.on_failure(now, c);
        }
    }

    #[test]
    fn failed_probes_double_the_open_period_up_to_half_the_outage_and_open_for() {
        let c = BreakerConfig { open_min: Duration::from_secs(10), open_for: Duration::from_secs(120), ..cfg() };
        // The model failed for 5 minutes before the breaker tripped (rare
        // traffic): doubling alone sets the pace, up to open_for.
        let mut b = Breaker::new();
        b.on_failure(0, &c);
        b.on_failure(150_000, &c);
        b.on_failure(300_000, &c);
        let (periods, _) = probe_through(&mut b, &c, 300_000, 300_000 + 400_000);
        assert_eq!(periods, [10_000, 20_000, 40_000, 80_000, 120_000, 120_000, 120_000]);

        // It trips as the outage starts: each period at most half the
        // outage so far, so a 60 s outage is noticed 7.5 s after its end.
        let mut b = Breaker::new();
        for t in 0..3 {
            b.on_failure(t, &c);
        }
        let (periods, back) = probe_through(&mut b, &c, 2, 60_000);
        assert_eq!(periods, [10_000, 10_000, 10_001, 15_001, 22_502]);
        assert!(back - 60_000 <= 10_000, "back at {back} ms");

        // A 38-minute outage still costs a few probes (one every 2 minutes
        // once open_for is reached).
        let mut b = Breaker::new();
        for t in 0..3 {
            b.on_failure(t, &c);
        }
        let (periods, back) = probe_through(&mut b, &c, 2, 38 * 60_000);
        assert_eq!(periods.len(), 26, "{periods:?}");
        assert!(back - 38 * 60_000 <= 120_000);

        // An answered probe resets the period.
        for t in 0..3 {
            b.on_failure(back + t, &c);
        }
        assert_eq!(open_until(&b) - (back + 2), 10_000, "an answered probe resets the period");
    }

    #[test]
    fn opens_on_consecutive_failures_then_probes_once() {
        let c = cfg();
        let mut b = Breaker::new();
        assert_eq!(b.on_failure(0, &c), None);
        assert_eq!(b.on_failure(1, &c), None);
        assert_eq!(b.on_failure(2, &c), Some(Transition::Opened(TripReason::ConsecutiveFailures(3))));
        assert_eq!(b.admit(5_000).0, Admission::Reject);
        assert_eq!(b.admit(10_002), (Admission::Probe, Some(Transition::HalfOpened)));
        assert_eq!(b.admit(10_003).0, Admission::Reject, "only one probe");
        assert_eq!(b.on_success(10_100, &c), Some(Transition::Closed));
        assert_eq!(b.admit(10_200).0, Admission::Pass);
    }

    #[test]
    fn success_resets_the_consecutive_count() {
        let c = cfg();
        let mut b = Breaker::new();
        b.on_failure(0, &c);
        b.on_failure(0, &c);
        b.on_success(0, &c);
        assert_eq!(b.on_failure(0, &c), None);
        assert_eq!(b.state(), State::Closed);
    }

    #[test]
    fn opens_on_failure_rate_with_enough_requests() {
        let c = cfg();
        let mut b = Breaker::new();
        // ok, fail, ok, fail, ok: 2/5, under min_requests.
        for (i, fail) in [false, true, false, true, false].into_iter().enumerate() {
            let t = if fail { b.on_failure(i as u64, &c) } else { b.on_success(i as u64, &c) };
            assert_eq!(t, None);
        }
        // 3/6 = 0.5 with 6 requests: opens, by the rate rule.
        assert_eq!(b.on_failure(6, &c), Some(Transition::Opened(TripReason::FailureRate { failures: 3, requests: 6 })));
    }

    #[test]
    fn old_outcomes_leave_the_window() {
        let c = cfg();
        let mut b = Breaker::new();
        for i in 0..5 {
            b.on_success(i, &c);
        }
        b.on_failure(10, &c);
        b.on_success(11, &c);
        b.on_failure(12, &c);
        // 61 s later the earlier outcomes are gone: 1 failure of 1.
        assert_eq!(b.on_failure(73_000, &c), None, "under min_requests after the window slid");
    }

    #[test]
    fn failed_probe_reopens_and_abandoned_probe_is_released() {
        let c = cfg();
        let mut b = Breaker::new();
        b.open(0, &c, TripReason::ConsecutiveFailures(3));
        assert_eq!(b.admit(10_000).0, Admission::Probe);
        b.release_probe();
        assert_eq!(b.admit(10_001).0, Admission::Probe, "the next request probes");
        assert_eq!(b.on_failure(10_002, &c), Some(Transition::Opened(TripReason::ProbeFailed)));
        assert_eq!(b.admit(15_000).0, Admission::Reject);
        assert!(matches!(b.state(), State::Open { until_ms: 20_002, .. }));
    }
}
