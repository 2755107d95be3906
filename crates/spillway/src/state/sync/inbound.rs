//! Inbound: changes the store publishes (other instances' and this
//! one's) applied to the health registry, the snapshot re-read after a
//! gap, and the link state the loop waits on.

use super::{StateSync, QUALITY_PREFIX};
use crate::config::BreakerConfig;
use crate::health::clock::now_ms;
use crate::health::registry::DeadReason;
use crate::health::HealthRegistry;
use crate::state::{LinkState, StateChange};
use tokio::sync::watch;

impl StateSync {
    /// Applies the store's live marks and open breakers.
    pub(super) async fn resync(&self) {
        match self.store.snapshot(now_ms()).await {
            Ok(snap) => {
                let cfg = (self.rules)();
                for (key, mark) in snap.dead {
                    apply(&self.health, &StateChange::Dead { key, mark }, &cfg);
                }
                for (key, (until_ms, reason)) in snap.open {
                    apply(&self.health, &StateChange::BreakerOpen { key, until_ms, reason }, &cfg);
                }
            }
            Err(e) => tracing::debug!(error = %e, "Cannot read the shared state snapshot."),
        }
    }
}

/// Applies a change that came from the shared store, without sharing it again.
pub fn apply(health: &HealthRegistry, change: &StateChange, cfg: &BreakerConfig) {
    use StateChange as C;
    match change {
        C::Dead { key, mark } if key.starts_with(QUALITY_PREFIX) => {
            let model = &key[QUALITY_PREFIX.len()..];
            let reason = crate::quality::Signal::parse(&mark.reason).unwrap_or(crate::quality::Signal::Empty);
            health.model(model).quality.demote_remote(mark.until_ms, reason);
        }
        C::Revived { key } if key.starts_with(QUALITY_PREFIX) => {
            health.model(&key[QUALITY_PREFIX.len()..]).quality.restore();
        }
        C::Dead { key, mark } => {
            let reason = DeadReason::parse(&mark.reason).unwrap_or(DeadReason::RateLimited);
            match key.strip_prefix("provider:") {
                Some(rest) => match rest.strip_suffix(":free") {
                    Some(name) => health.provider(name).free_dead.mark(mark.until_ms, reason),
                    None => health.provider(rest).dead.mark(mark.until_ms, reason),
                },
                None => health.model(key).dead.mark(mark.until_ms, reason),
            };
        }
        C::BreakerOpen { key, until_ms, .. } => health.model(key).open_remote(*until_ms, cfg),
        C::BreakerClosed { key } => health.model(key).close_remote(),
        C::Revived { key } => match key.strip_prefix("provider:") {
            Some(rest) => {
                let p = health.provider(rest.trim_end_matches(":free"));
                p.dead.clear();
                p.free_dead.clear();
            }
            None => health.model(key).revive_quietly(),
        },
    }
}

/// The next link state; never resolves for a store without a link.
pub(super) async fn next_state(link: &mut Option<watch::Receiver<LinkState>>) -> LinkState {
    if let Some(rx) = link {
        if rx.changed().await.is_ok() {
            return rx.borrow_and_update().clone();
        }
        *link = None;
    }
    std::future::pending().await
}
