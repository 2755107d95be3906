//! The in-process [`StateStore`]: one instance, no I/O.
//!
//! Also the reference implementation: the Redis store must behave the
//! same, and [`super::conformance`] checks both.

use super::*;
use std::sync::{Mutex, MutexGuard, PoisonError};

#[derive(Debug, Default)]
struct Window {
    /// (second, ok, failed), oldest first.
    buckets: Vec<(u64, u32, u32)>,
    consecutive: u32,
}

#[derive(Debug, Default)]
struct Inner {
    dead: HashMap<String, StoredMark>,
    open: HashMap<String, (u64, String)>,
    windows: HashMap<String, Window>,
    ttft: HashMap<String, std::collections::VecDeque<f64>>,
    counters: HashMap<String, (u64, u64)>,
    cache: HashMap<String, (String, u64)>,
}

/// State in this process.
#[derive(Debug)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    changes: broadcast::Sender<StateChange>,
    /// Expiry of counters and cache entries is checked against this clock.
    clock: fn() -> u64,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        let (changes, _) = broadcast::channel(1024);
        Self { inner: Mutex::new(Inner::default()), changes, clock: crate::health::clock::now_ms }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every update is a plain assignment: a poisoned lock holds consistent data.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, change: StateChange) {
        let _ = self.changes.send(change);
    }
}

fn ready<T: Send + 'static>(v: T) -> BoxFuture<'static, T> {
    Box::pin(std::future::ready(v))
}

impl StateStore for MemoryStore {
    fn backend(&self) -> &'static str {
        "memory"
    }

    fn mark_dead<'a>(
        &'a self,
        key: &'a str,
        mark: StoredMark,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<StoredMark, StateError>> {
        let effective = {
            let mut inner = self.lock();
            let entry = inner.dead.entry(key.to_string()).or_insert_with(|| mark.clone());
            if entry.until_ms <= now_ms || mark.until_ms > entry.until_ms {
                *entry = mark;
            }
            entry.clone()
        };
        self.publish(StateChange::Dead { key: key.to_string(), mark: effective.clone() });
        ready(Ok(effective))
    }

    fn revive<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StateError>> {
        {
            let mut inner = self.lock();
            inner.dead.remove(key);
            inner.open.remove(key);
            inner.windows.remove(key);
        }
        self.publish(StateChange::Revived { key: key.to_string() });
        ready(Ok(()))
    }

    fn record_outcome<'a>(
        &'a self,
        key: &'a str,
        failed: bool,
        now_ms: u64,
        rules: BreakerRules,
    ) -> BoxFuture<'a, Result<Option<SharedTrip>, StateError>> {
        let trip = {
            let mut inner = self.lock();
            if inner.open.get(key).is_some_and(|(until, _)| *until > now_ms) {
                return ready(Ok(None));
            }
            let w = inner.windows.entry(key.to_string()).or_default();
            let second = now_ms / 1000;
            let window_s = rules.window.as_secs().max(1);
            w.buckets.retain(|(s, _, _)| s + window_s > second);
            match w.buckets.last_mut() {
                Some(b) if b.0 == second => {
                    if failed {
                        b.2 += 1
                    } else {
                        b.1 += 1
                    }
                }
                _ => w.buckets.push((second, u32::from(!failed), u32::from(failed))),
            }
            w.consecutive = if failed { w.consecutive + 1 } else { 0 };
            let (requests, failures) = w.buckets.iter().fold((0, 0), |(r, f), b| (r + b.1 + b.2, f + b.2));
            let trip = if !failed {
                None
            } else if w.consecutive >= rules.consecutive_failures {
                Some(SharedTrip::Consecutive(w.consecutive))
            } else if requests >= rules.min_requests
                && f64::from(failures) / f64::from(requests.max(1)) >= rules.failure_rate
            {
                Some(SharedTrip::Rate { failures, requests })
            } else {
                None
            };
            if let Some(t) = &trip {
                let until = now_ms + rules.open_for.as_millis() as u64;
                let reason = describe(t);
                inner.windows.remove(key);
                inner.open.insert(key.to_string(), (until, reason));
            }
            trip
        };
        if let Some(t) = &trip {
            let until_ms = now_ms + rules.open_for.as_millis() as u64;
            self.publish(StateChange::BreakerOpen { key: key.to_string(), until_ms, reason: describe(t) });
        }
        ready(Ok(trip))
    }

    fn close_breaker<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StateError>> {
        let was_open = self.lock().open.remove(key).is_some();
        if was_open {
            self.publish(StateChange::BreakerClosed { key: key.to_string() });
        }
        ready(Ok(()))
    }

    fn snapshot(&self, now_ms: u64) -> BoxFuture<'_, Result<Snapshot, StateError>> {
        let inner = self.lock();
        let dead =
            inner.dead.iter().filter(|(_, m)| m.until_ms > now_ms).map(|(k, m)| (k.clone(), m.clone())).collect();
        let open = inner.open.iter().filter(|(_, (u, _))| *u > now_ms).map(|(k, v)| (k.clone(), v.clone())).collect();
        ready(Ok(Snapshot { dead, open }))
    }

    fn record_ttft<'a>(&'a self, key: &'a str, ms: f64) -> BoxFuture<'a, Result<(), StateError>> {
        let mut inner = self.lock();
        let window = inner.ttft.entry(key.to_string()).or_default();
        window.push_back(ms);
        while window.len() > super::TTFT_WINDOW {
            window.pop_front();
        }
        ready(Ok(()))
    }

    fn ttft_all(&self) -> BoxFuture<'_, Result<HashMap<String, f64>, StateError>> {
        let inner = self.lock();
        let all = inner.ttft.iter().filter_map(|(k, w)| Some((k.clone(), super::median(w.iter().copied())?))).collect();
        ready(Ok(all))
    }

    fn incr<'a>(&'a self, key: &'a str, by: u64, ttl: Duration) -> BoxFuture<'a, Result<u64, StateError>> {
        let now = (self.clock)();
        let mut inner = self.lock();
        let entry = inner.counters.entry(key.to_string()).or_insert((0, now + ttl.as_millis() as u64));
        if entry.1 <= now {
            *entry = (0, now + ttl.as_millis() as u64);
        }
        entry.0 += by;
        ready(Ok(entry.0))
    }

    fn counter<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<u64, StateError>> {
        let now = (self.clock)();
        let v = self.lock().counters.get(key).filter(|(_, exp)| *exp > now).map(|(v, _)| *v).unwrap_or(0);
        ready(Ok(v))
    }

    fn cache_put<'a>(&'a self, key: &'a str, value: String, ttl: Duration) -> BoxFuture<'a, Result<(), StateError>> {
        let now = (self.clock)();
        self.lock().cache.insert(key.to_string(), (value, now + ttl.as_millis() as u64));
        ready(Ok(()))
    }

    fn cache_get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StateError>> {
        let now = (self.clock)();
        let v = self.lock().cache.get(key).filter(|(_, exp)| *exp > now).map(|(v, _)| v.clone());
        ready(Ok(v))
    }

    fn subscribe(&self) -> broadcast::Receiver<StateChange> {
        self.changes.subscribe()
    }
}

/// The human reason of a shared trip.
pub fn describe(t: &SharedTrip) -> String {
    match t {
        SharedTrip::Consecutive(n) => format!("{n} consecutive failures"),
        SharedTrip::Rate { failures, requests } => format!("failure rate {failures}/{requests} over the window"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn memory_store_passes_the_conformance_suite() {
        let store = MemoryStore::new();
        if let Err(e) = conformance::run(&store, "conf:").await {
            panic!("{e}");
        }
    }
}
