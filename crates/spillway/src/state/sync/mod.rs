//! The sync job: the bridge between this instance's in-memory health (what
//! the request path reads) and the shared [`StateStore`].
//!
//! Outbound, it drains the [`LocalChange`] channel the health registry
//! feeds (dead marks, breaker outcomes, TTFT samples, revives) into store
//! calls, a batch at a time and concurrently (one multiplexed connection
//! pipelines them). Dead marks, revives and failures go out at once;
//! answers and TTFT samples are held up to 50 ms and sent as one count and
//! one list per model, which keeps Redis off the per-request budget. A
//! shared breaker trip is applied here at once, and comes back from the
//! store's channel to every other instance.
//!
//! Inbound, it applies every change the store publishes (other instances'
//! and its own, which are no-ops: marks only extend) to the registry, and
//! re-reads a [`Snapshot`] whenever it may have missed some: at start,
//! after every reconnect, and when the broadcast lagged.
//!
//! Outage: while the store's link is not `Up`, [`StateStatus`] says
//! degraded (`/readyz` stays 200 and says so), an alert goes out, and
//! local changes are not sent: outcomes and TTFT samples are dropped
//! (their windows would be stale by the time Redis returns), dead marks,
//! revives, quality demotions and restorations are kept, the latest per
//! key, bounded, and replayed on reconnect before the snapshot is read. Each instance serves from its
//! own local state meanwhile. Requests never wait on any of this: the
//! registry's channel is unbounded and this job always drains it.//!
//! - `inbound`: what the store publishes, applied to the registry
//!   ([`apply`]), and the snapshot re-read.
//! - `outbound`: local changes shared, held, batched, and kept through an
//!   outage.
//! - this file: the job, its start on Redis, and its loop.

mod inbound;
mod outbound;

pub use inbound::apply;
use inbound::next_state;
use outbound::{keep, remember};

use super::{BreakerRules, LinkState, StateStatus, StateStore};
use crate::config::BreakerConfig;
use crate::health::registry::{DeadReason, LocalChange};
use crate::health::HealthRegistry;
use crate::supervisor::BackgroundJob;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

/// The store key of a model's quality demotion: `quality:` and its ref.
pub const QUALITY_PREFIX: &str = "quality:";

/// Local changes handled per batch (then the inbound side gets a turn).
const BATCH: usize = 512;
/// Dead marks and revives kept while the store is unreachable.
const PENDING_MAX: usize = 10_000;

/// The current breaker rules (they change on config reload).
pub type RulesFn = Arc<dyn Fn() -> BreakerConfig + Send + Sync>;

/// What outlives the store, handed to the job.
pub struct StateSync {
    store: Arc<dyn StateStore>,
    health: Arc<HealthRegistry>,
    status: Arc<StateStatus>,
    local: mpsc::UnboundedReceiver<LocalChange>,
    rules: RulesFn,
    /// Since when (unix ms) the link has been down, and the server it
    /// reached before: set by `Down`, taken by the next `Up`, which tells
    /// operators it is back (and whether it failed over).
    down: Option<(u64, Option<String>)>,
}

impl std::fmt::Debug for StateSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSync").field("backend", &self.store.backend()).finish()
    }
}

/// How long answers and TTFT samples are held to be sent together. Only
/// failures, dead marks and revives must spread fast; an answer only adds
/// to the shared window's request count and resets the shared failures-in-a-row.
const HOLD: std::time::Duration = std::time::Duration::from_millis(50);

/// Answers and TTFT samples waiting for the next [`HOLD`] tick.
#[derive(Debug, Default)]
struct Held {
    answers: HashMap<String, u32>,
    ttft: HashMap<String, Vec<f64>>,
}

impl Held {
    fn is_empty(&self) -> bool {
        self.answers.is_empty() && self.ttft.is_empty()
    }
}

/// Consecutive outcomes of one key within a batch.
#[derive(Debug, Clone, Copy)]
enum Run {
    /// This many answers in a row.
    Answers(u32),
    /// One failure.
    Failure,
}

/// A change kept during an outage, to share once the store is back.
#[derive(Debug, Clone, Copy)]
enum Pending {
    Dead(u64, DeadReason),
    Revived,
    /// A quality demotion (kept under `quality:MODEL`).
    Demoted(u64, crate::quality::Signal),
    /// The end of one (kept under `quality:MODEL`).
    Restored,
}

fn to_rules(c: &BreakerConfig) -> BreakerRules {
    BreakerRules {
        consecutive_failures: c.consecutive_failures,
        failure_rate: c.failure_rate,
        min_requests: c.min_requests,
        window: c.window,
        // A shared trip lasts the first open period: after it, each
        // instance's own half-open probe decides (and backs off by itself).
        open_for: c.open_period(0, std::time::Duration::ZERO),
    }
}

impl StateSync {
    /// Connects `health` to `store`: from now on every local change goes to
    /// this job, and `status` names the store's backend.
    pub fn new(
        store: Arc<dyn StateStore>,
        health: Arc<HealthRegistry>,
        status: Arc<StateStatus>,
        rules: RulesFn,
    ) -> Self {
        let (tx, local) = mpsc::unbounded_channel();
        health.observe(tx);
        status.set_backend(store.backend());
        Self { store, health, status, local, rules, down: None }
    }
}

/// Starts shared state on Redis (`state.backend: redis`): the store, its
/// link job and the sync job, on `supervisor`. No I/O happens here: an
/// unreachable Redis makes a degraded start, not a failed one. Returns the
/// store (for the discovery cache and counters; also on `status.store()`).
/// `rules` reads the live breaker rules (they change on reload).
pub fn start_redis(
    config: &crate::config::StateConfig,
    health: &Arc<HealthRegistry>,
    status: &Arc<StateStatus>,
    supervisor: &crate::supervisor::Supervisor,
    rules: RulesFn,
) -> Result<Arc<dyn StateStore>, super::StateError> {
    let url = config.redis_url.as_ref().ok_or_else(|| super::StateError("state.redis_url is not set".into()))?;
    let (store, link) = super::redis::RedisStore::new(url.expose(), &config.key_prefix)?;
    tracing::info!(redis = %store.address(), prefix = %config.key_prefix, "Sharing state through Redis.");
    let store: Arc<dyn StateStore> = store;
    // Not sharing until the link is first up: `/readyz` says degraded from
    // the start, not only once the sync job has run (an instance that
    // answered "not degraded" before its first connection dropped the
    // outcomes it counted meanwhile).
    status.set_degraded(true);
    status.set_store(store.clone());
    supervisor.spawn(link);
    supervisor.spawn(StateSync::new(store.clone(), health.clone(), status.clone(), rules));
    Ok(store)
}

impl BackgroundJob for StateSync {
    fn name(&self) -> &'static str {
        "state-sync"
    }

    async fn run(mut self, shutdown: CancellationToken) {
        let mut remote = self.store.subscribe();
        let mut link = self.store.link();
        let mut pending = HashMap::new();
        let initial = link.as_mut().map_or(LinkState::Up, |rx| rx.borrow_and_update().clone());
        let mut up = initial == LinkState::Up;
        self.on_link(initial, &mut pending).await;
        let mut batch = Vec::with_capacity(BATCH);
        let mut held = Held::default();
        let mut tick = tokio::time::interval(HOLD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                state = next_state(&mut link) => {
                    up = state == LinkState::Up;
                    if !up {
                        held = Held::default();
                    }
                    self.on_link(state, &mut pending).await;
                }
                _ = tick.tick(), if up && !held.is_empty() => self.flush(&mut held).await,
                change = remote.recv() => match change {
                    Ok(change) => apply(&self.health, &change, &(self.rules)()),
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::debug!(missed, "Shared state changes lagged; re-reading the snapshot.");
                        self.resync().await;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                n = self.local.recv_many(&mut batch, BATCH) => {
                    if n == 0 {
                        return;
                    }
                    if up {
                        for (key, p) in self.share_batch(batch.drain(..), &mut held).await {
                            remember(&mut pending, key, p);
                        }
                    } else {
                        for (key, p) in batch.drain(..).filter_map(keep) {
                            remember(&mut pending, key, p);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
