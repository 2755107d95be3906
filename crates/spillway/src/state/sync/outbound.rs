//! Outbound: local changes shared with the store, answers and TTFT
//! samples held and batched, dead marks and revives kept (the latest per
//! key, bounded) while the link is down and replayed on reconnect.

use super::{apply, to_rules, Held, Pending, Run, StateSync, PENDING_MAX, QUALITY_PREFIX};
use crate::health::clock::now_ms;
use crate::health::registry::LocalChange;
use crate::state::{BreakerRules, LinkState, StateChange, StoredMark};
use std::collections::HashMap;

impl StateSync {
    /// written is returned, to be kept for the next reconnect.
    pub(super) async fn share(&self, change: LocalChange, rules: BreakerRules) -> Option<(String, Pending)> {
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
    pub(super) async fn share_batch(
        &self,
        changes: impl Iterator<Item = LocalChange>,
        held: &mut Held,
    ) -> Vec<(String, Pending)> {
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
                    if samples.len() >= crate::state::TTFT_WINDOW {
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
    pub(super) async fn flush(&self, held: &mut Held) {
        let answers = held.answers.drain().map(|(k, n)| (k, vec![Run::Answers(n)])).collect();
        let ttft = std::mem::take(&mut held.ttft);
        self.send(answers, ttft, Vec::new()).await;
    }

    /// Sends outcome runs (in order per model), TTFT samples and other
    /// changes; models go concurrently over the multiplexed connection.
    pub(super) async fn send(
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
    pub(super) fn tripped(&self, key: &str, trip: &crate::state::SharedTrip, now: u64, rules: BreakerRules) {
        let until_ms = now + u64::try_from(rules.open_for.as_millis()).unwrap_or(u64::MAX);
        let reason = crate::state::memory::describe(trip);
        tracing::warn!(model = %key, %reason, "Shared circuit breaker opened: failures over every instance crossed a rule.");
        apply(&self.health, &StateChange::BreakerOpen { key: key.to_string(), until_ms, reason }, &(self.rules)());
    }

    /// Follows the link: degraded flag, alert, and catch-up on return.
    pub(super) async fn on_link(&mut self, state: LinkState, pending: &mut HashMap<String, Pending>) {
        match state {
            LinkState::Up => {
                let was = self.status.set_degraded(false);
                if let Some((since, before)) = self.down.take() {
                    let node = self.store.node().unwrap_or_default();
                    self.status.announce(crate::state::StateEvent::Restored {
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
                self.status.announce(crate::state::StateEvent::Degraded { detail });
            }
        }
    }
}

/// What to keep of a change that could not be shared.
pub(super) fn keep(change: LocalChange) -> Option<(String, Pending)> {
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
pub(super) fn remember(pending: &mut HashMap<String, Pending>, key: String, p: Pending) {
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
