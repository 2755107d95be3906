//! The fallback-share rule as a background job, across instances when a
//! shared store exists.
//!
//! Each tick of [`ShareJob`] (a tenth of `fallback_share.for`, between 1 s
//! and 1 min) reads every cascade's share over the window and runs the
//! [`ShareRule`]. Without a shared store (`backend: memory`) the share is
//! this instance's own [`Traffic`]. With one, the job first adds this
//! instance's new answers to per-bucket counters
//! `traffic:{cascade}:{first|fallback}:{width_ms}:{bucket}` (bucket =
//! `now_ms / width_ms`, so every instance counts into the same keys; the
//! width is in the key so a changed `for` never mixes windows), then reads
//! every instance's totals over the window, bucket by bucket: traffic split
//! over instances crosses the threshold when the sum does. An alert is then claimed with
//! the counter `alert:{key}`, which lives `repeat_after`: only the instance
//! that created it publishes, so one alert goes out for all instances. When
//! the store fails the round decides from local counts and the unsent
//! answers wait for the next round. All of it runs here, never on the
//! request path, which only counts into [`Traffic`].

use super::rule::ShareRule;
use super::window::{Bucket, Series, Traffic, Unsent};
use super::AlertBus;
use super::Event;
use crate::state::{StateError, StateStatus, StateStore};
use futures_util::future::join_all;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Buckets per window (the same as [`Traffic`]'s ring).
const SLOTS: u64 = 10;

/// The shared counter of `series` (`first` or `fallback`) answers of `cascade` in bucket `index`.
fn key(cascade: &str, series: &str, width_ms: u64, index: u64) -> String {
    format!("traffic:{cascade}:{series}:{width_ms}:{index}")
}

/// Adds this instance's new answers to the shared counters, then returns
/// every instance's answers per cascade over the window, bucket by bucket
/// (`cascades` plus any that answered here). `Err` when the store failed;
/// what was not added is kept for the next round.
pub async fn shared_series(
    traffic: &Traffic,
    store: &dyn StateStore,
    cascades: &[String],
    now_ms: u64,
) -> Result<Vec<Series>, StateError> {
    let Some(width_ms) = traffic.width_ms() else { return Ok(Vec::new()) };
    // Twice the window: a bucket is read for one window after it began,
    // and instances' clocks differ a little.
    let ttl = Duration::from_millis(width_ms.saturating_mul(2 * SLOTS).max(1_000));
    let unsent = traffic.take_unsent(now_ms);
    for (i, u) in unsent.iter().enumerate() {
        if let Err(e) = add(store, u, width_ms, ttl).await {
            // A half-added bucket is counted again next round: a rare
            // overcount beats losing answers for the whole window.
            unsent[i..].iter().for_each(|u| traffic.restore(u));
            return Err(e);
        }
    }
    let mut names: Vec<String> = cascades.to_vec();
    names.extend(traffic.cascades().into_iter().filter(|c| !cascades.contains(c)));
    let current = now_ms / width_ms;
    let buckets = current.saturating_sub(SLOTS - 1)..=current;
    let reads = names
        .iter()
        .flat_map(|name| buckets.clone().flat_map(move |i| ["first", "fallback"].map(|series| (name, series, i))));
    let counts = join_all(reads.map(|(name, series, i)| async move {
        let n = store.counter(&key(name, series, width_ms, i)).await?;
        Ok::<_, StateError>((name, series, i, n))
    }))
    .await;
    let mut out: Vec<Series> = names.iter().map(|name| Series { cascade: name.clone(), buckets: Vec::new() }).collect();
    for count in counts {
        let (name, series, index, n) = count?;
        let Some(s) = out.iter_mut().find(|s| &s.cascade == name) else { continue };
        if n == 0 {
            continue;
        }
        let bucket = match s.buckets.iter_mut().position(|b| b.index == index) {
            Some(at) => &mut s.buckets[at],
            None => {
                s.buckets.push(Bucket { index, ..Bucket::default() });
                let last = s.buckets.len() - 1;
                &mut s.buckets[last]
            }
        };
        bucket.total += n;
        if series == "fallback" {
            bucket.fallback += n;
        }
    }
    Ok(out)
}

async fn add(store: &dyn StateStore, u: &Unsent, width_ms: u64, ttl: Duration) -> Result<(), StateError> {
    let first = u.total - u.fallback;
    if first > 0 {
        store.incr(&key(&u.cascade, "first", width_ms, u.index), first, ttl).await?;
    }
    if u.fallback > 0 {
        store.incr(&key(&u.cascade, "fallback", width_ms, u.index), u.fallback, ttl).await?;
    }
    Ok(())
}

/// Whether this instance sends `event`: the first claim within
/// `repeat_after` over all instances wins. A failing store lets it through
/// (each instance's dispatcher still deduplicates its own repeats).
pub async fn claim(store: &dyn StateStore, event: &Event, repeat_after: Duration) -> bool {
    match store.incr(&format!("alert:{}", event.key()), 1, repeat_after.max(Duration::from_millis(1))).await {
        Ok(n) => n == 1,
        Err(e) => {
            tracing::debug!(error = %e, "Cannot claim an alert in the shared store; sending it from here.");
            true
        }
    }
}

/// The fallback-share job of one config generation.
pub struct ShareJob {
    /// The bus to publish on; it holds the traffic counters.
    pub bus: Arc<AlertBus>,
    /// Where the shared store is, once the state backend is up.
    pub state: Arc<StateStatus>,
    /// The generation's cascades (read in the shared counters even when
    /// none answered here).
    pub cascades: Vec<String>,
    pub repeat_after: Duration,
    /// The rule's memory.
    pub rule: ShareRule,
}

impl ShareJob {
    /// One tick: shares, the rule, claimed alerts onto the bus.
    async fn round(&mut self, now_ms: u64) {
        let traffic = &self.bus.traffic;
        // The store is set once the state backend is up; read it each round.
        let store = self.state.store();
        let series = match &store {
            Some(store) => match shared_series(traffic, store.as_ref(), &self.cascades, now_ms).await {
                Ok(series) => series,
                Err(e) => {
                    tracing::debug!(error = %e, "Cannot share traffic counters now; using this instance's.");
                    traffic.series(now_ms)
                }
            },
            None => traffic.series(now_ms),
        };
        let Some(width_ms) = traffic.width_ms() else { return };
        for mut event in self.rule.check(&series, width_ms, now_ms) {
            if let Event::FallbackShare { cascade, models, .. } = &mut event {
                *models = traffic.carriers(cascade, now_ms);
            }
            // A resolution is not claimed: it goes out from the instance
            // whose alert it resolves (its dispatcher knows), and only there.
            if let Some(store) = store.as_ref().filter(|_| event.resolves().is_none()) {
                if !claim(store.as_ref(), &event, self.repeat_after).await {
                    continue;
                }
            }
            self.bus.publish(event);
        }
    }
}

impl crate::supervisor::BackgroundJob for ShareJob {
    fn name(&self) -> &'static str {
        "fallback-share"
    }

    async fn run(mut self, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(self.rule.tick());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => self.round(crate::health::clock::now_ms()).await,
                () = shutdown.cancelled() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::memory::MemoryStore;

    /// Two instances' counters meet in the store; each alone is too thin.
    #[tokio::test(start_paused = true)]
    async fn shares_add_up_over_instances() {
        let store = MemoryStore::new();
        let (a, b) = (Traffic::default(), Traffic::default());
        let now = crate::health::clock::now_ms();
        for t in [&a, &b] {
            t.configure(Some(Duration::from_secs(10)));
            t.record("chat", true, now);
            t.record("chat", true, now);
            t.record("chat", false, now);
            assert!(t.shares(now).is_empty(), "3 answers are too few alone");
        }
        let none: &[String] = &[];
        let first = shared_series(&a, &store, none, now).await.unwrap();
        assert_eq!(first[0].share(), None, "only a's answers are in yet: {first:?}");
        let both = shared_series(&b, &store, none, now).await.unwrap();
        assert_eq!(both.len(), 1);
        assert_eq!(both[0].buckets, [Bucket { index: now / 1_000, total: 6, fallback: 4 }]);
        assert!((both[0].share().unwrap() - 4.0 / 6.0).abs() < 1e-9, "{both:?}");
        // Nothing is added twice.
        let again = shared_series(&a, &store, &["chat".to_string()], now).await.unwrap();
        assert_eq!(again, both);
        // The window moves on.
        let later = now + 10_000;
        assert!(shared_series(&a, &store, none, later).await.unwrap()[0].buckets.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn one_claim_wins_within_repeat_after() {
        let store = MemoryStore::new();
        let e = Event::FallbackShare { cascade: "chat".into(), share: 0.5, since_ms: 0, at_ms: 0, models: Vec::new() };
        let repeat = Duration::from_secs(60);
        assert!(claim(&store, &e, repeat).await);
        assert!(!claim(&store, &e, repeat).await);
        // The clock's origin is shared by every test of the process; advance
        // until this runtime's clock has moved `repeat` past the claim.
        let claimed = crate::health::clock::now_ms();
        while crate::health::clock::now_ms() < claimed + 60_000 {
            tokio::time::advance(repeat).await;
        }
        assert!(claim(&store, &e, repeat).await);
    }
}
