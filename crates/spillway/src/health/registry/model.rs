//! [`ModelHealth`]: one model ref's dead mark, circuit breaker, TTFT window,
//! last error, quota share and answer quality, as targets hold it.

use super::{lock, DeadReason, DeadSlot, HealthEvent, LocalChange, Observer};
use crate::config::BreakerConfig;
use crate::health::breaker::{Admission, Breaker, State, Transition, TripReason};
use crate::health::clock::now_ms;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// Health of one model ref.
#[derive(Debug)]
pub struct ModelHealth {
    /// `provider/model`.
    pub key: String,
    /// Its dead mark.
    pub dead: DeadSlot,
    breaker: Mutex<Breaker>,
    /// The most recent times to first token (ms), at most
    /// [`crate::health::stats::TTFT_WINDOW`], oldest first.
    ttft: Mutex<std::collections::VecDeque<f64>>,
    /// The last failure's text and when (unix ms), for the console.
    last_error: Mutex<Option<(u64, String)>>,
    /// Its answers' quality and its demotion (`health::quality`).
    pub quality: crate::health::quality::QualityHealth,
    observer: Arc<Observer>,
    /// The share of its quota the last answer said is left, in thousandths
    /// plus one (0: never said), and when (unix ms): what fair shares read.
    quota_left: std::sync::atomic::AtomicU32,
    quota_at_ms: std::sync::atomic::AtomicU64,
}

impl ModelHealth {
    pub(super) fn new(key: String, observer: Arc<Observer>) -> Self {
        Self {
            key,
            dead: DeadSlot::default(),
            breaker: Mutex::new(Breaker::new()),
            ttft: Mutex::new(std::collections::VecDeque::with_capacity(crate::health::stats::TTFT_WINDOW)),
            last_error: Mutex::new(None),
            quality: crate::health::quality::QualityHealth::default(),
            observer,
            quota_left: std::sync::atomic::AtomicU32::new(0),
            quota_at_ms: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Records the share of its quota an answer said is left.
    pub fn set_quota_left(&self, share: f64, now_ms: u64) {
        let permille = (share.clamp(0.0, 1.0) * 1000.0).round() as u32;
        self.quota_left.store(permille + 1, std::sync::atomic::Ordering::Relaxed);
        self.quota_at_ms.store(now_ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// The share of its quota left, as the last answer within `fresh_ms` said.
    pub fn quota_left(&self, now_ms: u64, fresh_ms: u64) -> Option<f64> {
        let at = self.quota_at_ms.load(std::sync::atomic::Ordering::Relaxed);
        match self.quota_left.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            _ if now_ms.saturating_sub(at) > fresh_ms => None,
            n => Some(f64::from(n - 1) / 1000.0),
        }
    }

    /// Marks the model dead (extending, never shortening) and shares it.
    pub fn mark_dead(&self, until_ms: u64, reason: DeadReason) {
        self.dead.mark(until_ms, reason);
        self.observer.emit(|| LocalChange::Dead { key: self.key.clone(), until_ms, reason });
    }

    /// Applies a breaker trip another instance made.
    pub fn open_remote(&self, until_ms: u64, cfg: &BreakerConfig) {
        let mut b = lock(&self.breaker);
        if matches!(b.state(), State::Closed) {
            let now = now_ms();
            b.open(now, cfg, TripReason::Remote);
            b.set_open_until(until_ms.max(now));
            tracing::warn!(model = %self.key, "Circuit breaker opened by another instance.");
        }
    }

    /// Applies a breaker close another instance made.
    pub fn close_remote(&self) {
        let mut b = lock(&self.breaker);
        if matches!(b.state(), State::Open { reason: TripReason::Remote, .. }) {
            b.reset();
        }
    }

    /// Asks the breaker for admission.
    pub fn admit(&self, events: &broadcast::Sender<HealthEvent>) -> Admission {
        self.admit_at(now_ms(), events)
    }

    /// [`Self::admit`] at `now` (ms since the epoch) the caller read already.
    pub fn admit_at(&self, now: u64, events: &broadcast::Sender<HealthEvent>) -> Admission {
        let (admission, transition) = lock(&self.breaker).admit(now);
        if let Some(t) = transition {
            self.announce(t, events);
        }
        admission
    }

    /// Records an answered request.
    pub fn success(&self, cfg: &BreakerConfig, events: &broadcast::Sender<HealthEvent>) {
        self.observer.emit(|| LocalChange::Outcome { key: self.key.clone(), failed: false });
        let t = lock(&self.breaker).on_success(now_ms(), cfg);
        if let Some(t) = t {
            if t == Transition::Closed {
                self.observer.emit(|| LocalChange::BreakerClosed { key: self.key.clone() });
            }
            self.announce(t, events);
        }
    }

    /// Records an upstream failure.
    pub fn failure(&self, cfg: &BreakerConfig, events: &broadcast::Sender<HealthEvent>) {
        self.observer.emit(|| LocalChange::Outcome { key: self.key.clone(), failed: true });
        let t = lock(&self.breaker).on_failure(now_ms(), cfg);
        if let Some(t) = t {
            self.announce(t, events);
        }
    }

    /// Releases an unfinished probe.
    pub fn release_probe(&self) {
        lock(&self.breaker).release_probe();
    }

    /// The breaker state.
    pub fn breaker_state(&self) -> State {
        lock(&self.breaker).state()
    }

    /// Keeps a failure's text (redacted already, at most 300 characters)
    /// as the model's last error.
    pub fn note_error(&self, now: u64, text: &str) {
        *lock(&self.last_error) = Some((now, text.chars().take(300).collect()));
    }

    /// The last failure: when (unix ms) and its text.
    pub fn last_error(&self) -> Option<(u64, String)> {
        lock(&self.last_error).clone()
    }

    /// When the model may be tried again (ms): the later of its dead
    /// mark's end and its open breaker's end; `now` when neither holds it.
    pub fn back_at(&self, now: u64) -> u64 {
        let dead = self.dead.get(now).map_or(now, |m| m.until_ms);
        let open = match self.breaker_state() {
            State::Open { until_ms, .. } => until_ms,
            _ => now,
        };
        dead.max(open).max(now)
    }

    /// Clears the dead mark, closes the breaker and ends a quality
    /// demotion (admin revive).
    pub fn revive(&self) {
        self.dead.clear();
        lock(&self.breaker).reset();
        self.quality.restore();
        self.observer.emit(|| LocalChange::Revived { key: self.key.clone() });
    }

    /// Revives without sharing it (the change came from the store).
    pub fn revive_quietly(&self) {
        self.dead.clear();
        lock(&self.breaker).reset();
        self.quality.restore();
    }

    /// Records one answer's quality signals under its cascade's rule; a
    /// demotion or restoration it causes is logged, announced and shared.
    pub fn record_quality(
        &self,
        signals: crate::quality::Signals,
        rule: &crate::config::QualityConfig,
        events: &broadcast::Sender<HealthEvent>,
    ) -> Option<crate::health::quality::QualityChange> {
        use crate::health::quality::QualityChange as C;
        let change = self.quality.record(signals, rule, now_ms())?;
        let model = self.key.clone();
        match change {
            C::Demoted { until_ms, reason, bad_share } => {
                tracing::warn!(model = %self.key, reason = reason.label(), bad_share, until_ms, "Model demoted for the quality of its answers: healthy models go first.");
                self.observer.emit(|| LocalChange::Demoted { key: self.key.clone(), until_ms, reason });
                let _ = events.send(HealthEvent::QualityDemoted { model, reason, until_ms });
            }
            C::Extended { until_ms, reason } => {
                tracing::warn!(model = %self.key, reason = reason.label(), until_ms, "Quality probes failed: the model stays demoted, for longer.");
                self.observer.emit(|| LocalChange::Demoted { key: self.key.clone(), until_ms, reason });
                let _ = events.send(HealthEvent::QualityDemoted { model, reason, until_ms });
            }
            C::Restored => {
                tracing::info!(model = %self.key, "Quality probes passed: the model is back at its place.");
                self.observer.emit(|| LocalChange::Restored { key: self.key.clone() });
                let _ = events.send(HealthEvent::QualityRestored { model });
            }
        }
        Some(change)
    }

    /// Adds a TTFT sample.
    pub fn record_ttft(&self, ms: f64) {
        self.observer.emit(|| LocalChange::Ttft { key: self.key.clone(), ms });
        let mut window = lock(&self.ttft);
        if window.len() >= crate::health::stats::TTFT_WINDOW {
            window.pop_front();
        }
        window.push_back(ms);
    }

    /// The median of the recent TTFT samples in ms, once measured.
    pub fn ttft_ms(&self) -> Option<f64> {
        let window = lock(&self.ttft).clone();
        crate::health::stats::median(window)
    }

    fn announce(&self, t: Transition, events: &broadcast::Sender<HealthEvent>) {
        match t {
            Transition::Opened(reason) => {
                tracing::warn!(model = %self.key, %reason, "Circuit breaker opened.");
                let _ = events.send(HealthEvent::BreakerOpened { model: self.key.clone(), reason });
            }
            Transition::HalfOpened => {
                tracing::info!(model = %self.key, "Circuit breaker half-open: one probe goes through.")
            }
            Transition::Closed => {
                tracing::info!(model = %self.key, "Circuit breaker closed.");
                let _ = events.send(HealthEvent::BreakerClosed { model: self.key.clone() });
            }
        }
    }
}
