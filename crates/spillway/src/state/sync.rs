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
//! registry's channel is unbounded and this job always drains it.

use super::{BreakerRules, LinkState, StateChange, StateStatus, StateStore, StoredMark};
use crate::config::BreakerConfig;
use crate::health::clock::now_ms;
use crate::health::registry::{DeadReason, LocalChange};
use crate::health::HealthRegistry;
use crate::supervisor::BackgroundJob;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc, watch};
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

    /// Applies the store's live marks and open breakers.
    async fn resync(&self) {
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

    /// Shares one local change. A dead mark or revive that could not be
    /// written is returned, to be kept for the next reconnect.
    async fn share(&self, change: LocalChange, rules: BreakerRules) -> Option<(String, Pending)> {
        let now = now_ms();
        let result = match &change {
            LocalChange::Dead { key, until_ms, reason } => {
                let mark = StoredMark { until_ms: *until_ms, reason: reason.as_str().to_string() };
                self.store.mark_dead(key, mark, now).await.map(drop)
            }
            LocalChange::Outcome { key, failed } => {
                self.store.record_outcome(key, *failed, now, rules).await.map(|t| {
                    if let Some(trip) = t {
                        self.tripped(key, &trip, now, rules);
                    }
                })
            }
            LocalChange::Ttft { key, ms } => self.store.record_ttft(key, *ms).await,
            LocalChange::Revived { key } => self.store.revive(key).await,
            LocalChange::BreakerClosed { key } => self.store.close_breaker(key).await,
            // A quality demotion travels as a mark on `quality:MODEL`
            // (extended, never shortened, by every store), its end as a
            // revive of that key.
            LocalChange::Demoted { key, until_ms, reason } => {
                let mark = StoredMark { until_ms: *until_ms, reason: reason.label().to_string() };
                self.store.mark_dead(&format!("{QUALITY_PREFIX}{key}"), mark, now).await.map(drop)
            }
            LocalChange::Restored { key } => self.store.revive(&format!("{QUALITY_PREFIX}{key}")).await,
        };
        let Err(e) = result else {
            return None;
        };
        tracing::debug!(error = %e, "A local change was not shared.");
        keep(change)
    }

    /// Shares a batch. Answers and TTFT samples are held in `held` and go
    /// out on the next [`HOLD`] tick, a count and a list per model (so
    /// steady traffic costs a few round trips per model per tick, not two
    /// per request); a failure goes out at once, after the answers held
    /// for its model, so each model's order is kept. Returns what to keep.
    async fn share_batch(&self, changes: impl Iterator<Item = LocalChange>, held: &mut Held) -> Vec<(String, Pending)> {
        let mut failures: HashMap<String, Vec<Run>> = HashMap::new();
        let mut others = Vec::new();
        for change in changes {
            match change {
                LocalChange::Outcome { key, failed: false } => *held.answers.entry(key).or_default() += 1,
                LocalChange::Outcome { key, failed: true } => {
                    let n = held.answers.remove(&key).unwrap_or(0);
                    let runs = failures.entry(key).or_default();
                    if n > 0 {
                        runs.push(Run::Answers(n));
                    }
                    runs.push(Run::Failure);
                }
                LocalChange::Ttft { key, ms } => {
                    let samples = held.ttft.entry(key).or_default();
                    // The store keeps only the last TTFT_WINDOW samples anyway.
                    if samples.len() >= super::TTFT_WINDOW {
                        samples.remove(0);
                    }
                    samples.push(ms);
                }
                other => others.push(other),
            }
        }
        self.send(failures, HashMap::new(), others).await
    }

    /// Sends the held answers and TTFT samples.
    async fn flush(&self, held: &mut Held) {
        let answers = held.answers.drain().map(|(k, n)| (k, vec![Run::Answers(n)])).collect();
        let ttft = std::mem::take(&mut held.ttft);
        self.send(answers, ttft, Vec::new()).await;
    }

    /// Sends outcome runs (in order per model), TTFT samples and other
    /// changes; models go concurrently over the multiplexed connection.
    async fn send(
        &self,
        outcomes: HashMap<String, Vec<Run>>,
        ttfts: HashMap<String, Vec<f64>>,
        others: Vec<LocalChange>,
    ) -> Vec<(String, Pending)> {
        let rules = to_rules(&(self.rules)());
        let now = now_ms();
        let outcome_work = outcomes.into_iter().map(|(key, runs)| async move {
            for run in runs {
                let r = match run {
                    Run::Answers(n) => self.store.record_answers(&key, n, now, rules).await,
                    Run::Failure => self.store.record_outcome(&key, true, now, rules).await.map(|trip| {
                        if let Some(trip) = trip {
                            self.tripped(&key, &trip, now, rules);
                        }
                    }),
                };
                if let Err(e) = r {
                    tracing::debug!(error = %e, "Breaker outcomes were not shared.");
                    return;
                }
            }
        });
        let ttft_work = ttfts.iter().map(|(key, samples)| async move {
            if let Err(e) = self.store.record_ttfts(key, samples).await {
                tracing::debug!(error = %e, "TTFT samples were not shared.");
            }
        });
        let (_, _, kept) = futures_util::join!(
            futures_util::future::join_all(outcome_work),
            futures_util::future::join_all(ttft_work),
            futures_util::future::join_all(others.into_iter().map(|c| self.share(c, rules))),
        );
        kept.into_iter().flatten().collect()
    }

    /// A shared trip this instance's outcome caused: open here at once; the
    /// published copy reaches the others.
    fn tripped(&self, key: &str, trip: &super::SharedTrip, now: u64, rules: BreakerRules) {
        let until_ms = now + u64::try_from(rules.open_for.as_millis()).unwrap_or(u64::MAX);
        let reason = super::memory::describe(trip);
        tracing::warn!(model = %key, %reason, "Shared circuit breaker opened: failures over every instance crossed a rule.");
        apply(&self.health, &StateChange::BreakerOpen { key: key.to_string(), until_ms, reason }, &(self.rules)());
    }

    /// Follows the link: degraded flag, alert, and catch-up on return.
    async fn on_link(&mut self, state: LinkState, pending: &mut HashMap<String, Pending>) {
        match state {
            LinkState::Up => {
                let was = self.status.set_degraded(false);
                if let Some((since, before)) = self.down.take() {
                    let node = self.store.node().unwrap_or_default();
                    self.status.announce(super::StateEvent::Restored {
                        down_ms: now_ms().saturating_sub(since),
                        failed_over_from: before.filter(|b| *b != node),
                        node,
                    });
                }
                let rules = to_rules(&(self.rules)());
                let kept: Vec<_> = pending.drain().collect();
                if was && !kept.is_empty() {
                    tracing::info!(
                        changes = kept.len(),
                        "Sharing dead marks, revives and quality demotions made while Redis was unreachable."
                    );
                }
                let now = now_ms();
                for (key, p) in kept {
                    let model = || key.strip_prefix(QUALITY_PREFIX).unwrap_or(&key).to_string();
                    let change = match p {
                        Pending::Dead(until_ms, _) | Pending::Demoted(until_ms, _) if until_ms <= now => continue,
                        Pending::Dead(until_ms, reason) => LocalChange::Dead { key, until_ms, reason },
                        Pending::Revived => LocalChange::Revived { key },
                        Pending::Demoted(until_ms, reason) => LocalChange::Demoted { key: model(), until_ms, reason },
                        Pending::Restored => LocalChange::Restored { key: model() },
                    };
                    if let Some((k, p)) = self.share(change, rules).await {
                        pending.insert(k, p);
                    }
                }
                self.resync().await;
            }
            LinkState::Connecting => {
                self.status.set_degraded(true);
            }
            LinkState::Down(detail) => {
                self.status.set_degraded(true);
                if self.down.is_none() {
                    self.down = Some((now_ms(), self.store.node()));
                }
                self.status.announce(super::StateEvent::Degraded { detail });
            }
        }
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
    status.set_store(store.clone());
    supervisor.spawn(link);
    supervisor.spawn(StateSync::new(store.clone(), health.clone(), status.clone(), rules));
    Ok(store)
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

/// What to keep of a change that could not be shared.
fn keep(change: LocalChange) -> Option<(String, Pending)> {
    match change {
        LocalChange::Dead { key, until_ms, reason } => Some((key, Pending::Dead(until_ms, reason))),
        LocalChange::Revived { key } => Some((key, Pending::Revived)),
        // Quality demotions and their ends are kept like dead marks (the
        // other instances have not judged these answers), under the key
        // the store keeps them at.
        LocalChange::Demoted { key, until_ms, reason } => {
            Some((format!("{QUALITY_PREFIX}{key}"), Pending::Demoted(until_ms, reason)))
        }
        LocalChange::Restored { key } => Some((format!("{QUALITY_PREFIX}{key}"), Pending::Restored)),
        LocalChange::Outcome { .. } | LocalChange::Ttft { .. } | LocalChange::BreakerClosed { .. } => None,
    }
}

/// Records a kept change: the latest per key wins, except that a shorter
/// mark never replaces a longer one; new keys beyond the bound are dropped.
fn remember(pending: &mut HashMap<String, Pending>, key: String, p: Pending) {
    if pending.len() >= PENDING_MAX && !pending.contains_key(&key) {
        return;
    }
    match (pending.get(&key), p) {
        (Some(Pending::Dead(old, _)), Pending::Dead(new, _)) if *old >= new => {}
        (Some(Pending::Demoted(old, _)), Pending::Demoted(new, _)) if *old >= new => {}
        _ => {
            pending.insert(key, p);
        }
    }
}

/// The next link state; never resolves for a store without a link.
async fn next_state(link: &mut Option<watch::Receiver<LinkState>>) -> LinkState {
    if let Some(rx) = link {
        if rx.changed().await.is_ok() {
            return rx.borrow_and_update().clone();
        }
        *link = None;
    }
    std::future::pending().await
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
#[path = "sync_tests.rs"]
mod tests;
