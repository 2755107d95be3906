//! Operator alerts (SPEC §8): an [`AlertBus`] anyone may publish to, and a
//! background [`dispatch::Dispatcher`] that turns events into short human
//! messages for the configured sinks (Telegram, a webhook).
//!
//! Publishing never blocks and never fails: it is a send on a broadcast
//! channel (events are dropped when nothing listens or the listener lags).
//! The dispatcher deduplicates by key within `alerts.repeat_after`, and
//! each sink delivers from its own queue with retries ([`sink`]), so a slow
//! or failing sink cannot slow or fail a request. Health events (breakers,
//! rejected keys) come straight from the health registry's channel; the
//! fallback-share rule is computed from sliding counters the request path
//! feeds ([`window`]), summed over instances when a shared store exists
//! ([`share`]).
//!
//! The bus lives in `gateway::Shared`: its dedupe memory and traffic
//! counters outlive config reloads; the dispatcher belongs to one config
//! generation, so changed sinks apply on reload.

pub mod digest;
pub mod dispatch;
pub mod resolve;
pub mod rule;
pub mod share;
pub mod sink;
mod text;
pub mod window;

use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use tokio::sync::broadcast;

/// Something an operator should hear about.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Discovery changed a cascade.
    CascadeChanged {
        /// Cascade name.
        cascade: String,
        /// The diff: `extraction: +groq/qwen3-235b, -groq/llama-guard-4 (removed)`.
        diff: String,
    },
    /// One discovery refresh changed these cascades: one message for all.
    CascadesChanged {
        /// Each cascade's diff, one line each, in config order.
        diffs: Vec<String>,
    },
    /// A preferred model is left out of its cascade for an unknown price or
    /// context (its listing did not say).
    ModelLeftOut {
        /// Cascade name.
        cascade: String,
        /// Model ref.
        model: String,
        /// The filter it failed.
        why: crate::discovery::Rejection,
    },
    /// A breaker opened.
    BreakerOpened {
        /// Model ref.
        model: String,
        /// Why (human text).
        reason: String,
    },
    /// A breaker closed again.
    BreakerClosed {
        /// Model ref.
        model: String,
    },
    /// A model was demoted for the quality of its answers (or demoted
    /// again after its probes failed).
    QualityDemoted {
        /// Model ref.
        model: String,
        /// The signal seen most (`wrong_script`, `empty`, …).
        reason: String,
        /// Unix ms it is demoted until (then probed).
        until_ms: u64,
    },
    /// A demoted model's probes passed: resolves [`Event::QualityDemoted`].
    QualityRestored {
        /// Model ref.
        model: String,
    },
    /// A provider rejected its key (401).
    KeyRejected {
        /// Provider name.
        provider: String,
    },
    /// Nothing of a cascade could answer a request.
    CascadeDead {
        /// Cascade name.
        cascade: String,
    },
    /// A cascade that had nothing left answered a request again: resolves
    /// [`Event::CascadeDead`].
    CascadeAlive {
        /// Cascade name.
        cascade: String,
    },
    /// Models other than a cascade's first carry too much of its traffic.
    FallbackShare {
        /// Cascade name.
        cascade: String,
        /// Share over the window, 0..1.
        share: f64,
        /// Unix ms since when it has been above the threshold.
        since_ms: u64,
        /// Unix ms of the check that raised it (`since_ms` to here is how
        /// long it has lasted).
        at_ms: u64,
        /// The models carrying it, each with its share of all answers,
        /// largest first (this instance's counts).
        models: Vec<(String, f64)>,
    },
    /// The fallback share is back under the threshold: resolves
    /// [`Event::FallbackShare`].
    FallbackShareBack {
        /// Cascade name.
        cascade: String,
        /// The share over the latest bucket (a tenth of `for`), 0..1.
        share: f64,
        /// `fallback_share.above`.
        above: f64,
        /// Unix ms since when it had been above.
        since_ms: u64,
    },
    /// A request was queued for a person.
    HandoffQueued {
        /// Item id.
        id: String,
        /// Cascade name.
        cascade: String,
        /// Attempts made before.
        attempts: usize,
    },
    /// A config reload was rejected; the old config stays.
    ReloadRejected {
        /// How many errors, and the first.
        summary: String,
    },
    /// The shared state store (Redis) is unreachable; serving from local state.
    RedisDegraded {
        /// What failed (secret-free).
        detail: String,
    },
    /// The shared state store is reachable again after [`Event::RedisDegraded`].
    RedisRestored {
        /// How long it was unreachable, in ms.
        down_ms: u64,
        /// The server reached now (`host:port`).
        node: String,
        /// The server before, when a failover changed it.
        failed_over_from: Option<String>,
    },
    /// A cascade spent its daily budget: paid models are skipped until the next UTC day.
    BudgetExhausted {
        /// Cascade name.
        cascade: String,
        /// Spent today, USD.
        spent_usd: f64,
        /// `budget.daily_usd`.
        limit_usd: f64,
        /// The UTC day, `YYYY-MM-DD`.
        day: String,
    },
    /// A virtual key passed 80 % of its budget.
    KeyBudget {
        /// Key id.
        key: String,
        /// Spent in the period, USD.
        spent_usd: f64,
        /// The budget, USD.
        limit_usd: f64,
        /// `day`, `month` or `total`.
        per: String,
        /// The period's number (one alert per key and period).
        period: u64,
    },
}

impl Event {
    /// The grouping key: the first event of a key goes out at once; more
    /// of it within `repeat_after` are counted into one digest.
    pub fn key(&self) -> String {
        match self {
            Self::CascadeChanged { cascade, diff } => format!("cascade_changed:{cascade}:{diff}"),
            Self::CascadesChanged { diffs } => format!("cascades_changed:{}", diffs.join("|")),
            Self::ModelLeftOut { cascade, model, .. } => format!("model_left_out:{cascade}:{model}"),
            Self::BreakerOpened { model, .. } => format!("breaker_opened:{model}"),
            Self::BreakerClosed { model } => format!("breaker_closed:{model}"),
            Self::QualityDemoted { model, .. } => format!("quality_demoted:{model}"),
            Self::QualityRestored { model } => format!("quality_restored:{model}"),
            Self::KeyRejected { provider } => format!("key_rejected:{provider}"),
            Self::CascadeDead { cascade } => format!("cascade_dead:{cascade}"),
            Self::CascadeAlive { cascade } => format!("cascade_alive:{cascade}"),
            Self::FallbackShareBack { cascade, .. } => format!("fallback_share_back:{cascade}"),
            Self::FallbackShare { cascade, .. } => format!("fallback_share:{cascade}"),
            // Per cascade, not per item: an outage queues many.
            Self::HandoffQueued { cascade, .. } => format!("handoff_queued:{cascade}"),
            Self::ReloadRejected { summary } => format!("reload_rejected:{summary}"),
            Self::RedisDegraded { .. } => "redis_degraded".to_string(),
            Self::RedisRestored { .. } => "redis_restored".to_string(),
            Self::BudgetExhausted { cascade, day, .. } => format!("budget_exhausted:{cascade}:{day}"),
            Self::KeyBudget { key, period, .. } => format!("key_budget:{key}:{period}"),
        }
    }

    /// A bounded label naming the kind (webhook payloads, logs).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::CascadeChanged { .. } | Self::CascadesChanged { .. } => "cascade_changed",
            Self::ModelLeftOut { .. } => "model_left_out",
            Self::BreakerOpened { .. } => "breaker_opened",
            Self::BreakerClosed { .. } => "breaker_closed",
            Self::QualityDemoted { .. } => "quality_demoted",
            Self::QualityRestored { .. } => "quality_restored",
            Self::KeyRejected { .. } => "key_rejected",
            Self::CascadeDead { .. } => "cascade_dead",
            Self::CascadeAlive { .. } => "cascade_alive",
            Self::FallbackShareBack { .. } => "fallback_share_back",
            Self::FallbackShare { .. } => "fallback_share",
            Self::HandoffQueued { .. } => "handoff_queued",
            Self::ReloadRejected { .. } => "reload_rejected",
            Self::RedisDegraded { .. } => "redis_degraded",
            Self::RedisRestored { .. } => "redis_restored",
            Self::BudgetExhausted { .. } => "budget_exhausted",
            Self::KeyBudget { .. } => "key_budget",
        }
    }

    /// The message in English: what, where, since when (`at_ms`, when it
    /// was seen).
    pub fn text(&self, at_ms: u64) -> String {
        text::render(self, at_ms, Language::En)
    }

    /// The message in `language`.
    pub fn text_in(&self, at_ms: u64, language: Language) -> String {
        text::render(self, at_ms, language)
    }
}

pub use crate::config::AlertLanguage as Language;

/// `YYYY-MM-DD HH:MM:SS UTC`.
pub fn clock_text(ms: u64) -> String {
    let secs = ms / 1000;
    let (y, m, d) = crate::health::clock::civil_day(secs / 86_400);
    let t = secs % 86_400;
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", t / 3600, t / 60 % 60, t % 60)
}

/// What goes out: an alert (to every alert sink) or a handoff notification
/// (to `handoff.webhook` only).
#[derive(Debug, Clone)]
pub enum Outbound {
    /// An operator alert.
    Alert(Event),
    /// A new handoff item, for `handoff.webhook` (the JSON body).
    Handoff(Value),
}

/// The shared publishing side, plus what must outlive reloads.
#[derive(Debug)]
pub struct AlertBus {
    tx: broadcast::Sender<Outbound>,
    /// Key → unix ms of the last send.
    sent: Mutex<HashMap<String, u64>>,
    /// Repeats held for the next digest, per key.
    pub digest: Mutex<digest::Digest>,
    /// Per-cascade tier counters for the fallback-share rule.
    pub traffic: window::Traffic,
    /// Opening alerts that went out and wait for their resolved message.
    pub open: resolve::Open,
    /// Cascades with nothing left, until one of their requests is answered.
    dead: resolve::DeadCascades,
    /// An in-process receiver of every alert that goes out, beside the
    /// sinks (`spillway drill` reports them); see [`AlertBus::tap`].
    tap: std::sync::OnceLock<tokio::sync::mpsc::Sender<sink::Message>>,
}

impl Default for AlertBus {
    fn default() -> Self {
        // Alerts are rare; 256 queued between dispatcher wake-ups is plenty.
        let (tx, _) = broadcast::channel(256);
        Self {
            tx,
            sent: Mutex::new(HashMap::new()),
            digest: Mutex::new(digest::Digest::default()),
            traffic: window::Traffic::default(),
            open: resolve::Open::default(),
            dead: resolve::DeadCascades::default(),
            tap: std::sync::OnceLock::new(),
        }
    }
}

impl AlertBus {
    /// Publishes an event; never blocks (dropped when no dispatcher runs).
    pub fn publish(&self, event: Event) {
        let _ = self.tx.send(Outbound::Alert(event));
    }

    /// Nothing of `cascade` could answer a request: [`Event::CascadeDead`].
    pub fn cascade_dead(&self, cascade: &str) {
        self.dead.died(cascade);
        self.publish(Event::CascadeDead { cascade: cascade.to_owned() });
    }

    /// A model of `cascade` answered: [`Event::CascadeAlive`] when it had
    /// nothing left before (one atomic load otherwise).
    pub fn cascade_answered(&self, cascade: &str) {
        if self.dead.answered(cascade) {
            self.publish(Event::CascadeAlive { cascade: cascade.to_owned() });
        }
    }

    /// Queues a `handoff.webhook` notification.
    pub fn notify_handoff(&self, body: Value) {
        let _ = self.tx.send(Outbound::Handoff(body));
    }

    /// Every alert that goes out from now on (after deduplication, as the
    /// sinks get it), up to `capacity` unread; `None` when tapped already.
    /// Read by the dispatcher at each alert, so it may be taken any time.
    pub fn tap(&self, capacity: usize) -> Option<tokio::sync::mpsc::Receiver<sink::Message>> {
        let (tx, rx) = tokio::sync::mpsc::channel(capacity);
        self.tap.set(tx).ok().map(|()| rx)
    }

    /// The tap's sending side, when there is one.
    pub(crate) fn tapped(&self) -> Option<&tokio::sync::mpsc::Sender<sink::Message>> {
        self.tap.get()
    }

    /// Receives what is published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Outbound> {
        self.tx.subscribe()
    }

    /// Whether an alert with `key` may go out at `now_ms` (none went out
    /// within `repeat_after`); records it when so.
    pub fn first_within(&self, key: &str, now_ms: u64, repeat_after: std::time::Duration) -> bool {
        let window = u64::try_from(repeat_after.as_millis()).unwrap_or(u64::MAX);
        let mut sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        match sent.get(key) {
            Some(&last) if now_ms.saturating_sub(last) < window => false,
            _ => {
                // Forget keys older than the window, so the map stays small.
                if sent.len() > 1024 {
                    sent.retain(|_, &mut t| now_ms.saturating_sub(t) < window);
                }
                sent.insert(key.to_string(), now_ms);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dedupe_within_repeat_after() {
        let bus = AlertBus::default();
        let w = Duration::from_secs(60);
        assert!(bus.first_within("a", 1_000, w));
        assert!(!bus.first_within("a", 30_000, w));
        assert!(bus.first_within("b", 30_000, w));
        assert!(!bus.first_within("a", 60_999, w));
        assert!(bus.first_within("a", 61_000, w));
    }

    #[test]
    fn texts_say_what_where_and_when() {
        let t = Event::BreakerOpened { model: "groq/llama".into(), reason: "5 failures in a row".into() }.text(0);
        assert_eq!(t, "Breaker opened for groq/llama: 5 failures in a row. Traffic goes to the next model since 1970-01-01 00:00:00 UTC.");
        assert_eq!(clock_text(1_764_441_000_000), "2025-11-29 18:30:00 UTC");
    }
}
