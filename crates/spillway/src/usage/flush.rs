//! Sharing spend between instances: every [`INTERVAL`] the job adds this
//! instance's new spend per cascade and UTC day to the shared store's
//! counter `spend:{cascade}:{YYYY-MM-DD}` (micro-USD, kept two days) and
//! takes the returned total — every instance's spend — as today's spend.
//! Cascades with a budget and nothing new are read, to see the others'
//! spend. Without a shared store (`backend: memory`) it does nothing; when
//! the store fails, the unsent spend is kept for the next round.

use super::{Books, Ledger, DAY_MS};
use crate::state::StateStore;
use std::sync::PoisonError;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often spend is shared.
pub const INTERVAL: Duration = Duration::from_secs(5);
/// Lifetime of a day's counter: the day and the next, for late flushes.
const TTL: Duration = Duration::from_secs(2 * 86_400);

fn key(cascade: &str, day: u64) -> String {
    format!("spend:{cascade}:{}", super::day_text(day))
}

impl Ledger {
    /// One round of sharing with `store`.
    pub async fn flush(&self, b: Books<'_>, store: &dyn StateStore, now_ms: u64) {
        let day = now_ms / DAY_MS;
        let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        let mut budgeted: Vec<&str> =
            b.config.cascades.values().filter(|c| c.daily_budget_usd.is_some()).map(|c| c.name.as_str()).collect();
        for ((cascade, d), micro) in pending {
            budgeted.retain(|c| *c != cascade || d != day);
            match store.incr(&key(&cascade, d), micro, TTL).await {
                Ok(total) if d == day => self.adopt(b, &cascade, day, total),
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "Cannot share spend now; keeping it for the next round.");
                    *self.pending.lock().unwrap_or_else(PoisonError::into_inner).entry((cascade, d)).or_insert(0) +=
                        micro;
                }
            }
        }
        for cascade in budgeted {
            if let Ok(total) = store.counter(&key(cascade, day)).await {
                self.adopt(b, cascade, day, total);
            }
        }
    }

    /// Takes the shared total (micro-USD) as today's spend, plus whatever
    /// was spent here since the round began (spend never goes down).
    fn adopt(&self, b: Books<'_>, cascade: &str, day: u64, total_micro: u64) {
        let unsent = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(cascade.to_string(), day))
            .copied()
            .unwrap_or(0);
        let shared = total_micro as f64 / 1e6;
        let (before, after) = {
            let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
            let entry = spent.entry(cascade.to_string()).or_insert((day, 0.0));
            if entry.0 != day {
                *entry = (day, 0.0);
            }
            // This instance's own spend was in already; the others' is news.
            let before = entry.1;
            entry.1 = entry.1.max(shared + unsent as f64 / 1e6);
            (before, entry.1)
        };
        self.check_budget(b, cascade, day, before, after);
    }
}

/// The sharing job (one per config generation).
pub struct Flush {
    /// The generation's config (it names the budgets), ledger and store.
    pub books: super::OwnedBooks,
}

impl crate::supervisor::BackgroundJob for Flush {
    fn name(&self) -> &'static str {
        "usage-flush"
    }

    async fn run(self, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(INTERVAL);
        loop {
            let stop = tokio::select! {
                _ = tick.tick() => false,
                () = shutdown.cancelled() => true,
            };
            // The store is set once the state backend is up; read it each round.
            if let Some(store) = self.books.state.store() {
                let b = &self.books;
                b.ledger.flush(b.books(None), store.as_ref(), crate::health::clock::now_ms()).await;
            }
            if stop {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::gateway::{Gateway, Shared};
    use crate::state::memory::MemoryStore;
    use crate::usage::Tokens;
    use serde_json::json;

    const YAML: &str = "providers:\n  p:\n    kind: mock\n    models: [{ id: m, price_per_1m: { input: 100000, output: 100000 } }]\ncascades:\n  chat:\n    models: [p/m]\n    budget: { daily_usd: 1.0 }\n";

    fn gateway() -> Gateway {
        let config = crate::config::load_str(YAML, None, &|_| None).unwrap();
        Gateway::build(config, &Shared::default()).unwrap()
    }

    /// Two instances share one store: each spent $0.70, so after a round
    /// both know $1.40 was spent and stop paid models.
    #[tokio::test]
    async fn instances_see_each_others_spend() {
        let store = MemoryStore::new();
        let (a, b) = (gateway(), gateway());
        let usage = json!({"prompt_tokens": 5, "completion_tokens": 2});
        let now = 1_764_441_000_000;
        a.shared.usage.record((&a).into(), "chat", "p/m", Some(Tokens::of(&usage)), now);
        b.shared.usage.record((&b).into(), "chat", "p/m", Some(Tokens::of(&usage)), now);
        assert!((a.shared.usage.spent_today("chat", now) - 0.7).abs() < 1e-9);
        a.shared.usage.flush((&a).into(), &store, now).await;
        b.shared.usage.flush((&b).into(), &store, now).await;
        a.shared.usage.flush((&a).into(), &store, now).await;
        for gw in [&a, &b] {
            assert!((gw.shared.usage.spent_today("chat", now) - 1.4).abs() < 1e-9);
            let plan = gw.shared.usage.budget_plan(&gw.config, &gw.shared.discovery, gw.cascades["chat"].clone(), now);
            assert!(plan.targets.is_empty());
        }
        // The next UTC day starts from zero.
        assert_eq!(a.shared.usage.spent_today("chat", now + super::DAY_MS), 0.0);
    }
}
