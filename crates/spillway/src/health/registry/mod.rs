//! The in-memory health view: one [`ModelHealth`] per model ref and one
//! [`ProviderHealth`] per provider, shared by every config generation.
//!
//! Targets hold `Arc`s to their entries (resolved when a cascade is built),
//! so the request path never looks anything up: a dead check is one atomic
//! load, a breaker admission one short uncontended lock. Changes worth an
//! operator's attention go out as [`HealthEvent`]s on a broadcast channel
//! (logs now, alert sinks later).
//!
//! - `dead`: dead reasons, marks and the atomic slot that holds them.
//! - `events`: local changes for the state store, operator events.
//! - `model`: one model ref's health ([`ModelHealth`]).
//! - this file: provider health, the registry itself and the gauges.

mod dead;
mod events;
mod model;

pub use dead::{DeadMark, DeadReason, DeadSlot};
pub use events::{HealthEvent, LocalChange, Observer};
pub use model::ModelHealth;

use super::clock::now_ms;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::broadcast;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks cannot leave them inconsistent
    // (every update is a single assignment), so poisoning is ignored.
    m.lock().unwrap_or_else(PoisonError::into_inner)
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
mod tests;
