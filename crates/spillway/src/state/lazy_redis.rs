//! A Redis connection for stores a request waits on (the handoff queue,
//! stored responses): made on first use, every call within a deadline, and
//! failing at once for a moment after a failure instead of each call
//! waiting out its deadline against a server known to be down.
//!
//! Unlike the state store's link (`redis/link.rs`), nothing watches it in
//! the background: these stores are used rarely enough that the next call
//! finding out is soon enough. It reaches Redis through
//! [`super::redis::target::Target`], so `redis_url` may name a Sentinel set
//! or a Cluster: after a failure the connection is dropped and the next
//! call makes a new one (behind Sentinels, to the master named then), a
//! held connection is checked against the master the Sentinels name once a
//! second (a planned failover leaves the old master writable for seconds,
//! and what is written there then is lost when it turns replica), and on a
//! cluster [`LazyRedis::key_prefix`] puts one store's keys in one slot.

use super::redis::target::{Conn, Limits, Target};
use futures_util::future::BoxFuture;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The most one call may take (a request or an admin call is waiting on
/// it); the connection's own timeouts are shorter.
pub const CALL_DEADLINE: Duration = Duration::from_secs(1);
/// After a failure, calls fail at once for this long.
const DOWN_FOR_MS: u64 = 1_000;
/// How often a held connection is checked against the master the Sentinels name.
const RECHECK_MS: u64 = 1_000;

/// The connection and what it reaches.
struct Held {
    conn: Conn,
    /// `host:port` of the server.
    node: String,
    /// Unix ms of the last check that the Sentinels still name `node`.
    checked_ms: u64,
}

/// A lazily connected Redis client. Clones share the connection.
#[derive(Clone)]
pub struct LazyRedis {
    target: Arc<Target>,
    /// Made on first use and after every failure (then dropped).
    conn: Arc<tokio::sync::Mutex<Option<Held>>>,
    /// Unix ms until which calls fail without trying.
    down_until: Arc<AtomicU64>,
    /// The most one call may take ([`CALL_DEADLINE`] unless [`Self::with_deadline`] says otherwise).
    deadline: Duration,
}

impl std::fmt::Debug for LazyRedis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL: it may hold a password.
        f.debug_struct("LazyRedis").field("hosts", &self.target.hosts()).finish()
    }
}

/// A Redis error as text: its kind and the server's message, never the URL.
pub fn error_text(e: &redis::RedisError) -> String {
    format!("redis: {:?}: {}", e.kind(), e.detail().unwrap_or("request failed"))
}

impl LazyRedis {
    /// A client for `url`; no I/O until the first call.
    pub fn new(url: &str) -> Result<Self, String> {
        let target = Target::open(url).map_err(|e| error_text(&e))?;
        Ok(Self { target: Arc::new(target), conn: Arc::default(), down_until: Arc::default(), deadline: CALL_DEADLINE })
    }

    /// The same client with another call deadline (a command's own
    /// response timeout is half of it).
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The prefix a store's keys go under: `prefix`, in braces on a cluster
    /// (see [`Target::key_prefix`]).
    pub fn key_prefix(&self, prefix: &str) -> String {
        self.target.key_prefix(prefix)
    }

    /// The connection: made on first use and after a failure, within the call deadline.
    pub async fn conn(&self) -> Result<Conn, String> {
        let now = crate::health::clock::now_ms();
        if self.down_until.load(Ordering::Relaxed) > now {
            return Err("redis: down (retrying shortly)".into());
        }
        let mut slot = self.conn.lock().await;
        if let Some(held) = slot.as_mut() {
            if now.saturating_sub(held.checked_ms) < RECHECK_MS {
                return Ok(held.conn.clone());
            }
            held.checked_ms = now;
            if !self.target.names_another_master(&held.node).await {
                return Ok(held.conn.clone());
            }
            tracing::info!(from = %held.node, "The Sentinels name another master: reconnecting.");
            *slot = None;
        }
        let half = self.deadline / 2;
        let limits = Limits { connect: half, response: half, retries: 0 };
        let made = match tokio::time::timeout(self.deadline, self.target.connect(limits)).await {
            Ok(r) => r.map_err(|e| error_text(&e)),
            Err(_) => Err("redis: no connection within the deadline".to_string()),
        };
        match made {
            Ok((conn, node)) => Ok(slot.insert(Held { conn, node, checked_ms: now }).conn.clone()),
            Err(e) => {
                drop(slot);
                Err(self.failed(e))
            }
        }
    }

    /// Runs one call with the deadline; a failure marks the server down for
    /// a moment, and the next call connects afresh.
    pub async fn call<'f, T>(&self, f: impl FnOnce(Conn) -> BoxFuture<'f, redis::RedisResult<T>>) -> Result<T, String> {
        let conn = self.conn().await?;
        let failure = match tokio::time::timeout(self.deadline, f(conn)).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => error_text(&e),
            Err(_) => "redis: no answer within the deadline".to_string(),
        };
        *self.conn.lock().await = None;
        Err(self.failed(failure))
    }

    fn failed(&self, e: String) -> String {
        self.down_until.store(crate::health::clock::now_ms() + DOWN_FOR_MS, Ordering::Relaxed);
        e
    }
}
