//! The state store: where health and traffic state is shared.
//!
//! The request path never reads this store: it reads the in-memory
//! [`crate::health::HealthRegistry`]. The store is where one instance's
//! observations go so that every instance can act on them — dead marks,
//! breaker trips and their shared failure counts, TTFT statistics, traffic
//! counters, and cached discovery results — and where changes made
//! elsewhere come from ([`StateStore::subscribe`]). With `backend: memory`
//! the [`memory::MemoryStore`] keeps everything in-process; `backend:
//! redis` shares it between instances.
//!
//! Every method is atomic where races matter (a dead mark only ever
//! extends; breaker counts are read-modify-write in one step), every entry
//! expires or is bounded, and times are passed in explicitly (`now_ms`) so
//! the semantics can be tested without waiting. [`conformance`] checks an
//! implementation against those rules; both backends run it.

pub mod conformance;
pub mod lazy_redis;
pub mod memory;
pub mod redis;
pub mod sqlite_file;
pub mod sync;

use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::broadcast;

/// A failure of the store itself (Redis down, a script error). Callers
/// degrade to local state; a request never fails because of it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("state store: {0}")]
pub struct StateError(pub String);

/// A dead mark as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMark {
    /// Unix milliseconds.
    pub until_ms: u64,
    /// Reason label (`rate_limited`, `key_rejected`, …).
    pub reason: String,
}

/// Breaker rules a store applies to shared counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerRules {
    /// Failures in a row.
    pub consecutive_failures: u32,
    /// Failure share over the window.
    pub failure_rate: f64,
    /// Requests before the rate rule applies.
    pub min_requests: u32,
    /// Rolling window.
    pub window: Duration,
    /// How long a trip lasts.
    pub open_for: Duration,
}

/// Why a shared breaker tripped.
#[derive(Debug, Clone, PartialEq)]
pub enum SharedTrip {
    /// Failures in a row, over every instance.
    Consecutive(u32),
    /// Failures of requests in the window, over every instance.
    Rate {
        /// Failures.
        failures: u32,
        /// Requests.
        requests: u32,
    },
}

/// A change another instance (or this one) made, as broadcast.
#[derive(Debug, Clone, PartialEq)]
pub enum StateChange {
    /// `key` is dead until `until_ms`.
    Dead {
        /// Model ref, `provider:NAME` or `provider:NAME:free`.
        key: String,
        /// The mark.
        mark: StoredMark,
    },
    /// The breaker of `key` is open until `until_ms`.
    BreakerOpen {
        /// Model ref.
        key: String,
        /// Unix ms.
        until_ms: u64,
        /// Human reason.
        reason: String,
    },
    /// The breaker of `key` closed.
    BreakerClosed {
        /// Model ref.
        key: String,
    },
    /// `key` was revived (marks cleared, breaker closed).
    Revived {
        /// Model ref or provider key.
        key: String,
    },
}

/// What a newly connected instance reads to catch up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Live dead marks.
    pub dead: HashMap<String, StoredMark>,
    /// Open breakers: until and reason.
    pub open: HashMap<String, (u64, String)>,
}

/// Whether a networked store can be reached, as its link task sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkState {
    /// Not connected yet (the first attempt is under way).
    Connecting,
    /// Connected and subscribed to changes.
    Up,
    /// Unreachable; the detail is secret-free (no URL, no password).
    Down(String),
}

/// Shared state. Implementations: [`memory::MemoryStore`] and the Redis store.
pub trait StateStore: Send + Sync + 'static {
    /// `memory` or `redis`.
    fn backend(&self) -> &'static str;

    /// Marks `key` dead; a later deadline extends an earlier one, never the
    /// reverse. Returns the effective mark and publishes the change.
    fn mark_dead<'a>(
        &'a self,
        key: &'a str,
        mark: StoredMark,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<StoredMark, StateError>>;

    /// Clears marks and closes the breaker of `key`; publishes `Revived`.
    fn revive<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StateError>>;

    /// Counts one outcome of `key` in the shared breaker window and returns
    /// a trip when this outcome crossed a rule (at most one caller sees a
    /// given trip). A trip opens the shared breaker and publishes it.
    fn record_outcome<'a>(
        &'a self,
        key: &'a str,
        failed: bool,
        now_ms: u64,
        rules: BreakerRules,
    ) -> BoxFuture<'a, Result<Option<SharedTrip>, StateError>>;

    /// Counts a run of `n` answers of `key` in a row: the same as `n` calls
    /// of `record_outcome(key, false, ..)` (answers never trip). Stores
    /// that can count them in one round trip override this.
    fn record_answers<'a>(
        &'a self,
        key: &'a str,
        n: u32,
        now_ms: u64,
        rules: BreakerRules,
    ) -> BoxFuture<'a, Result<(), StateError>> {
        Box::pin(async move {
            for _ in 0..n {
                self.record_outcome(key, false, now_ms, rules).await?;
            }
            Ok(())
        })
    }

    /// Closes the shared breaker of `key` (a probe succeeded) and publishes it.
    fn close_breaker<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StateError>>;

    /// Live marks and open breakers, in one batched read.
    fn snapshot(&self, now_ms: u64) -> BoxFuture<'_, Result<Snapshot, StateError>>;

    /// Adds a TTFT sample (ms) to the shared recent samples of `key`.
    fn record_ttft<'a>(&'a self, key: &'a str, ms: f64) -> BoxFuture<'a, Result<(), StateError>>;

    /// Adds TTFT samples of `key` in order: the same as one
    /// [`StateStore::record_ttft`] each, which this does unless overridden.
    fn record_ttfts<'a>(&'a self, key: &'a str, samples: &'a [f64]) -> BoxFuture<'a, Result<(), StateError>> {
        Box::pin(async move {
            for ms in samples {
                self.record_ttft(key, *ms).await?;
            }
            Ok(())
        })
    }

    /// The median TTFT (ms) of every key that has samples.
    fn ttft_all(&self) -> BoxFuture<'_, Result<HashMap<String, f64>, StateError>>;

    /// Adds `by` to counter `key` (created with `ttl`); returns the new value.
    fn incr<'a>(&'a self, key: &'a str, by: u64, ttl: Duration) -> BoxFuture<'a, Result<u64, StateError>>;

    /// Reads counter `key` (0 when absent).
    fn counter<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<u64, StateError>>;

    /// Stores a cached value (discovery results) for `ttl`.
    fn cache_put<'a>(&'a self, key: &'a str, value: String, ttl: Duration) -> BoxFuture<'a, Result<(), StateError>>;

    /// Reads a cached value.
    fn cache_get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, StateError>>;

    /// Changes published by any instance, this one included.
    fn subscribe(&self) -> broadcast::Receiver<StateChange>;

    /// Reachability of a networked store; `None` for one that is always
    /// reachable (memory). Changes published while it was not `Up` are
    /// missed: read [`StateStore::snapshot`] after every return to `Up`.
    fn link(&self) -> Option<tokio::sync::watch::Receiver<LinkState>> {
        None
    }

    /// The server a networked store reached last (`host:port`), for logs
    /// and alerts: after a failover it differs from before. `None` for memory.
    fn node(&self) -> Option<String> {
        None
    }
}

pub use crate::health::stats::{median, TTFT_WINDOW};

/// Which backend serves shared state and whether it is reachable; read by
/// `/readyz`, `/admin/state` and `spillway status`.
pub struct StateStatus {
    backend: std::sync::Mutex<&'static str>,
    degraded: std::sync::atomic::AtomicBool,
    /// The shared store, when one is configured (`backend: redis`).
    store: std::sync::OnceLock<std::sync::Arc<dyn StateStore>>,
    /// What an operator should hear about the link (the alert dispatcher
    /// subscribes; the state layer knows nothing of alerts).
    events: tokio::sync::broadcast::Sender<StateEvent>,
}

/// A change of the shared store's link worth an operator's attention.
#[derive(Debug, Clone, PartialEq)]
pub enum StateEvent {
    /// The link to the shared store is down; serving from local state.
    Degraded {
        /// Why (secret-free).
        detail: String,
    },
    /// The link is back after a [`StateEvent::Degraded`]: sharing resumed.
    Restored {
        /// How long it was down, in ms.
        down_ms: u64,
        /// The server reached now (`host:port`).
        node: String,
        /// The server reached before the outage, when it was another one (a
        /// Sentinel or Cluster failover).
        failed_over_from: Option<String>,
    },
}

impl std::fmt::Debug for StateStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateStatus").field("backend", &self.backend()).field("degraded", &self.degraded()).finish()
    }
}

impl Default for StateStatus {
    fn default() -> Self {
        Self {
            backend: std::sync::Mutex::new("memory"),
            degraded: std::sync::atomic::AtomicBool::new(false),
            store: std::sync::OnceLock::new(),
            events: tokio::sync::broadcast::channel(16).0,
        }
    }
}

impl StateStatus {
    /// Link events from now on.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<StateEvent> {
        self.events.subscribe()
    }

    /// Tells subscribers of a link event (none listening is fine).
    pub fn announce(&self, event: StateEvent) {
        let _ = self.events.send(event);
    }

    /// The shared store (`backend: redis`), for the discovery cache and
    /// counters; `None` with `backend: memory`.
    pub fn store(&self) -> Option<std::sync::Arc<dyn StateStore>> {
        self.store.get().cloned()
    }

    /// Records the shared store; only the first call takes effect.
    pub fn set_store(&self, store: std::sync::Arc<dyn StateStore>) {
        let _ = self.store.set(store);
    }

    /// The active backend (`memory` or `redis`).
    pub fn backend(&self) -> &'static str {
        *self.backend.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sets the active backend.
    pub fn set_backend(&self, backend: &'static str) {
        *self.backend.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = backend;
    }

    /// The shared store is unreachable: this instance serves from local state.
    pub fn degraded(&self) -> bool {
        self.degraded.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Records reachability; returns the previous value.
    pub fn set_degraded(&self, degraded: bool) -> bool {
        self.degraded.swap(degraded, std::sync::atomic::Ordering::AcqRel)
    }

    /// The JSON shown by `/readyz` and `/admin/state`.
    pub fn view(&self) -> serde_json::Value {
        let mut view = serde_json::json!({"backend": self.backend(), "degraded": self.degraded()});
        if self.degraded() {
            view["detail"] = "the shared state store is unreachable; this instance serves from its local state".into();
        }
        view
    }
}
