//! The in-memory health view: one [`ModelHealth`] per model ref and one
//! [`ProviderHealth`] per provider, shared by every config generation.
//!
//! Targets hold `Arc`s to their entries (resolved when a cascade is built),
//! so the request path never looks anything up: a dead check is one atomic
//! load, a breaker admission one short uncontended lock. Changes worth an
//! operator's attention go out as [`HealthEvent`]s on a broadcast channel
//! (logs now, alert sinks later).

use super::breaker::{Admission, Breaker, State, Transition, TripReason};
use super::clock::now_ms;
use crate::config::BreakerConfig;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::broadcast;

/// Why a model or provider is dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadReason {
    /// 429.
    RateLimited,
    /// A successful answer said the quota is used up (remaining 0).
    QuotaUsedUp,
    /// Billing / quota exhausted.
    QuotaExhausted,
    /// 403.
    Forbidden,
    /// 404 or decommissioned.
    NotFound,
    /// 2xx without content.
    Empty,
    /// 401: the provider's key was rejected.
    KeyRejected,
}

impl DeadReason {
    /// A short label for `/admin/state` and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::QuotaUsedUp => "quota_used_up",
            Self::QuotaExhausted => "quota_exhausted",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::Empty => "empty",
            Self::KeyRejected => "key_rejected",
        }
    }

    /// Reads a label back (from the shared state store).
    pub fn parse(label: &str) -> Option<Self> {
        [
            Self::RateLimited,
            Self::QuotaUsedUp,
            Self::QuotaExhausted,
            Self::Forbidden,
            Self::NotFound,
            Self::Empty,
            Self::KeyRejected,
        ]
        .into_iter()
        .find(|r| r.as_str() == label)
    }
}

/// A change this instance observed, for the state store to share with the
/// other instances (see `state::sync`). Keys: a model ref, `provider:NAME`
/// (the whole provider) or `provider:NAME:free` (its free tier).
#[derive(Debug, Clone, PartialEq)]
pub enum LocalChange {
    /// A dead mark was set.
    Dead {
        /// Key.
        key: String,
        /// Unix ms.
        until_ms: u64,
        /// Why.
        reason: DeadReason,
    },
    /// An upstream outcome for the shared breaker window.
    Outcome {
        /// Model ref.
        key: String,
        /// An upstream failure (else an answer).
        failed: bool,
    },
    /// A TTFT sample.
    Ttft {
        /// Model ref.
        key: String,
        /// Milliseconds.
        ms: f64,
    },
    /// An operator revived a model.
    Revived {
        /// Model ref.
        key: String,
    },
    /// A half-open probe succeeded: the breaker closed (other instances
    /// close the trip they share instead of waiting out `open_for`).
    BreakerClosed {
        /// Model ref.
        key: String,
    },
    /// The model was demoted for its answers' quality (or demoted again).
    Demoted {
        /// Model ref.
        key: String,
        /// Unix ms.
        until_ms: u64,
        /// The signal seen most.
        reason: crate::quality::Signal,
    },
    /// The model's probes passed: its demotion ended.
    Restored {
        /// Model ref.
        key: String,
    },
}

/// Where local changes go when a shared state store is configured; unset
/// with `backend: memory` (then nothing is sent and nothing is allocated).
#[derive(Debug, Default)]
pub struct Observer(std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<LocalChange>>);

impl Observer {
    fn emit(&self, change: impl FnOnce() -> LocalChange) {
        if let Some(tx) = self.0.get() {
            let _ = tx.send(change());
        }
    }
}

/// A dead mark: until when and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadMark {
    /// Unix milliseconds.
    pub until_ms: u64,
    /// Why.
    pub reason: DeadReason,
}

/// Something an operator should hear about.
#[derive(Debug, Clone, PartialEq)]
pub enum HealthEvent {
    /// A breaker opened.
    BreakerOpened {
        /// Model ref.
        model: String,
        /// Which rule.
        reason: TripReason,
    },
    /// A breaker closed again.
    BreakerClosed {
        /// Model ref.
        model: String,
    },
    /// A model was demoted for the quality of its answers (again, after
    /// failed probes).
    QualityDemoted {
        /// Model ref.
        model: String,
        /// The signal seen most.
        reason: crate::quality::Signal,
        /// Unix ms.
        until_ms: u64,
    },
    /// A demoted model's probes passed.
    QualityRestored {
        /// Model ref.
        model: String,
    },
    /// A provider's key was rejected (401).
    KeyRejected {
        /// Provider name.
        provider: String,
    },
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks cannot leave them inconsistent
    // (every update is a single assignment), so poisoning is ignored.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A dead-mark slot: the deadline as an atomic for the fast check, the
/// reason beside it.
#[derive(Debug, Default)]
pub struct DeadSlot {
    until_ms: AtomicU64,
    reason: Mutex<Option<DeadReason>>,
}

impl DeadSlot {
    /// The live mark, if any.
    pub fn get(&self, now: u64) -> Option<DeadMark> {
        let until_ms = self.until_ms.load(Ordering::Acquire);
        if until_ms <= now {
            return None;
        }
        let reason = (*lock(&self.reason))?;
        Some(DeadMark { until_ms, reason })
    }

    /// Dead right now (one atomic load).
    pub fn is_dead(&self, now: u64) -> bool {
        self.until_ms.load(Ordering::Acquire) > now
    }

    /// Marks dead until `until_ms`; a later deadline extends an earlier one,
    /// an earlier one never shortens it. Returns the effective deadline.
    pub fn mark(&self, until_ms: u64, reason: DeadReason) -> u64 {
        let mut r = lock(&self.reason);
        let prev = self.until_ms.fetch_max(until_ms, Ordering::AcqRel);
        if until_ms >= prev {
            *r = Some(reason);
        }
        prev.max(until_ms)
    }

    /// Clears the mark.
    pub fn clear(&self) {
        let mut r = lock(&self.reason);
        self.until_ms.store(0, Ordering::Release);
        *r = None;
    }
}

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
    pub quality: super::quality::QualityHealth,
    observer: Arc<Observer>,
    /// The share of its quota the last answer said is left, in thousandths
    /// plus one (0: never said), and when (unix ms): what fair shares read.
    quota_left: std::sync::atomic::AtomicU32,
    quota_at_ms: std::sync::atomic::AtomicU64,
}

impl ModelHealth {
    fn new(key: String, observer: Arc<Observer>) -> Self {
        Self {
            key,
            dead: DeadSlot::default(),
            breaker: Mutex::new(Breaker::new()),
            ttft: Mutex::new(std::collections::VecDeque::with_capacity(crate::health::stats::TTFT_WINDOW)),
            last_error: Mutex::new(None),
            quality: super::quality::QualityHealth::default(),
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
        let (admission, transition) = lock(&self.breaker).admit(now_ms());
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
    ) -> Option<super::quality::QualityChange> {
        use super::quality::QualityChange as C;
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
        super::stats::median(window)
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

/// Health of one provider.
#[derive(Debug, Default)]
pub struct ProviderHealth {
    /// The whole provider is dead (its key was rejected).
    pub dead: DeadSlot,
    /// Its `:free` models are dead (OpenRouter's daily cap is per account).
    pub free_dead: DeadSlot,
}

/// An answer a client may rate (`POST /v1/feedback`).
#[derive(Debug, Clone)]
pub struct Judged {
    /// The model that answered.
    pub model: Arc<ModelHealth>,
    /// Its cascade's quality rule.
    pub rule: crate::config::QualityConfig,
    /// Its metric handles.
    pub metrics: Arc<crate::metrics::TargetMetrics>,
    /// Who made the request: the only caller that may rate it.
    pub owner: super::feedback::Owner,
}

/// Every model's and provider's health.
#[derive(Debug)]
pub struct HealthRegistry {
    models: Mutex<HashMap<String, Arc<ModelHealth>>>,
    /// Median TTFTs read from the shared store (every instance's samples),
    /// preferred over the local ones when ranking models.
    shared_ttft: Mutex<HashMap<String, f64>>,
    providers: Mutex<HashMap<String, Arc<ProviderHealth>>>,
    /// Operator events.
    pub events: broadcast::Sender<HealthEvent>,
    /// Judged answers a client may rate (`POST /v1/feedback`).
    pub recent: super::feedback::Recent<Judged>,
    /// Refusal base rates per cascade and request shape.
    pub refusals: super::refusals::RefusalRates,
    observer: Arc<Observer>,
}

impl Default for HealthRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl HealthRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        let (events, _) = broadcast::channel(256);
        Self {
            models: Mutex::new(HashMap::new()),
            shared_ttft: Mutex::new(HashMap::new()),
            providers: Mutex::new(HashMap::new()),
            events,
            recent: super::feedback::Recent::default(),
            refusals: super::refusals::RefusalRates::default(),
            observer: Arc::default(),
        }
    }

    /// The entry of a model ref (created on first use).
    pub fn model(&self, key: &str) -> Arc<ModelHealth> {
        lock(&self.models)
            .entry(key.to_string())
            .or_insert_with(|| Arc::new(ModelHealth::new(key.to_string(), self.observer.clone())))
            .clone()
    }

    /// An entry for `key` that is not kept in the registry (for refs whose
    /// state must not outlive their request: see `gateway::Unlisted`).
    pub fn detached(&self, key: &str) -> Arc<ModelHealth> {
        Arc::new(ModelHealth::new(key.to_string(), Arc::default()))
    }

    /// The entry of a provider (created on first use).
    pub fn provider(&self, name: &str) -> Arc<ProviderHealth> {
        lock(&self.providers).entry(name.to_string()).or_default().clone()
    }

    /// The entry of a model ref, if it was ever used.
    pub fn find_model(&self, key: &str) -> Option<Arc<ModelHealth>> {
        lock(&self.models).get(key).cloned()
    }

    /// Keeps the median TTFTs read from the shared store.
    pub fn set_shared_ttft(&self, all: HashMap<String, f64>) {
        *lock(&self.shared_ttft) = all;
    }

    /// A model's median TTFT in ms: across instances when the shared store
    /// has it, else this instance's.
    pub fn ttft_ms(&self, key: &str) -> Option<f64> {
        let shared = lock(&self.shared_ttft).get(key).copied();
        shared.or_else(|| self.find_model(key).and_then(|m| m.ttft_ms()))
    }

    /// Every model entry, sorted by ref.
    pub fn models(&self) -> Vec<Arc<ModelHealth>> {
        let mut all: Vec<_> = lock(&self.models).values().cloned().collect();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        all
    }

    /// Marks a provider dead because its key was rejected, and says so once.
    pub fn reject_key(&self, provider: &str, until_ms: u64) {
        let p = self.provider(provider);
        let was_dead = p.dead.is_dead(now_ms());
        p.dead.mark(until_ms, DeadReason::KeyRejected);
        let key = format!("provider:{provider}");
        self.observer.emit(|| LocalChange::Dead { key, until_ms, reason: DeadReason::KeyRejected });
        if !was_dead {
            tracing::error!(
                provider,
                "The provider rejected its API key (401): it is skipped until the key is fixed or it is revived."
            );
            let _ = self.events.send(HealthEvent::KeyRejected { provider: provider.to_string() });
        }
    }

    /// Caps a provider's free tier (its `:free` models) and shares it.
    pub fn cap_free_tier(&self, provider: &str, until_ms: u64, reason: DeadReason) {
        self.provider(provider).free_dead.mark(until_ms, reason);
        let key = format!("provider:{provider}:free");
        self.observer.emit(|| LocalChange::Dead { key, until_ms, reason });
    }

    /// Clears a provider's marks (key and free tier) and shares it.
    pub fn revive_provider(&self, provider: &str) {
        let p = self.provider(provider);
        p.dead.clear();
        p.free_dead.clear();
        let key = format!("provider:{provider}");
        self.observer.emit(|| LocalChange::Revived { key });
    }

    /// Sends every later local change to `tx` (the state-store sync job).
    /// Only the first call takes effect.
    pub fn observe(&self, tx: tokio::sync::mpsc::UnboundedSender<LocalChange>) {
        let _ = self.observer.0.set(tx);
    }

    /// Subscribes to operator events.
    pub fn subscribe(&self) -> broadcast::Receiver<HealthEvent> {
        self.events.subscribe()
    }
}

/// Writes every model's breaker state and dead flag into the gauges (run
/// when `/metrics` is scraped, so expiries show without a background task).
pub fn export_gauges(registry: &HealthRegistry, metrics: &crate::metrics::Metrics) {
    let now = now_ms();
    for m in registry.models() {
        let Some((provider, model)) = m.key.split_once('/') else {
            continue;
        };
        let p = registry.provider(provider);
        let labels = crate::metrics::ModelLabels { provider: provider.to_string(), model: model.to_string() };
        metrics.breaker_state.get_or_create(&labels).set(m.breaker_state().gauge());
        let dead = m.dead.is_dead(now) || p.dead.is_dead(now) || (model.ends_with(":free") && p.free_dead.is_dead(now));
        metrics.model_dead.get_or_create(&labels).set(i64::from(dead));
        let demoted = m.quality.demoted_until().is_some();
        // Only models that were ever demoted get the series.
        if demoted || metrics.quality_demoted.get(&labels).is_some() {
            metrics.quality_demoted.get_or_create(&labels).set(i64::from(demoted));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_longer_mark_extends_a_shorter_one_never_the_reverse() {
        let slot = DeadSlot::default();
        assert_eq!(slot.mark(5_000, DeadReason::Empty), 5_000);
        assert_eq!(slot.mark(9_000, DeadReason::RateLimited), 9_000);
        assert_eq!(slot.mark(7_000, DeadReason::NotFound), 9_000, "a shorter mark never shortens");
        assert_eq!(slot.get(1_000), Some(DeadMark { until_ms: 9_000, reason: DeadReason::RateLimited }));
        assert!(slot.is_dead(8_999));
        assert!(!slot.is_dead(9_000), "marks expire by themselves");
        assert_eq!(slot.get(9_000), None);
        slot.clear();
        assert!(!slot.is_dead(0));
    }

    #[test]
    fn key_rejection_is_announced_once() {
        let reg = HealthRegistry::new();
        let mut rx = reg.subscribe();
        let far = now_ms() + 60_000;
        reg.reject_key("groq", far);
        reg.reject_key("groq", far);
        assert_eq!(rx.try_recv().ok(), Some(HealthEvent::KeyRejected { provider: "groq".into() }));
        assert!(rx.try_recv().is_err());
        assert!(reg.provider("groq").dead.is_dead(now_ms()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_successful_probe_shares_the_close() {
        let reg = HealthRegistry::new();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        reg.observe(tx);
        let cfg = BreakerConfig {
            open_min: std::time::Duration::from_secs(10),
            window: std::time::Duration::from_secs(60),
            consecutive_failures: 1,
            failure_rate: 1.0,
            min_requests: 100,
            open_for: std::time::Duration::from_secs(10),
        };
        let m = reg.model("p/m");
        m.failure(&cfg, &reg.events);
        tokio::time::advance(std::time::Duration::from_secs(11)).await;
        assert_eq!(m.admit(&reg.events), Admission::Probe);
        m.success(&cfg, &reg.events);
        let mut changes = Vec::new();
        while let Ok(c) = rx.try_recv() {
            changes.push(c);
        }
        assert_eq!(changes.last(), Some(&LocalChange::BreakerClosed { key: "p/m".into() }), "{changes:?}");
    }

    #[test]
    fn the_shared_ttft_wins_over_the_local_one() {
        let r = HealthRegistry::new();
        r.model("p/a").record_ttft(900.0);
        r.model("p/b").record_ttft(100.0);
        assert_eq!((r.ttft_ms("p/a"), r.ttft_ms("p/none")), (Some(900.0), None));
        // Other instances saw p/a fast: every instance's samples decide.
        r.set_shared_ttft(HashMap::from([("p/a".to_string(), 50.0)]));
        assert_eq!((r.ttft_ms("p/a"), r.ttft_ms("p/b")), (Some(50.0), Some(100.0)));
    }

    #[test]
    fn ttft_is_the_median_of_the_recent_samples() {
        let m = ModelHealth::new("p/m".into(), Arc::default());
        assert_eq!(m.ttft_ms(), None);
        m.record_ttft(100.0);
        m.record_ttft(200.0);
        assert_eq!(m.ttft_ms(), Some(150.0));
        // One slow outlier does not move it (an average would).
        m.record_ttft(5000.0);
        assert_eq!(m.ttft_ms(), Some(200.0));
        // Only the last TTFT_WINDOW samples count.
        for _ in 0..crate::health::stats::TTFT_WINDOW {
            m.record_ttft(40.0);
        }
        assert_eq!(m.ttft_ms(), Some(40.0));
    }
}
