//! A Redis connection for stores a request waits on (the handoff queue,
//! stored responses): made on first use, every call within a deadline, and
//! failing at once for a moment after a failure instead of each call
//! waiting out its deadline against a server known to be down.
//!
//! Unlike the state store's link (`redis/link.rs`), nothing watches it in
//! the background: these stores are used rarely enough that the next call
//! finding out is soon enough.

use futures_util::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The most one call may take (a request or an admin call is waiting on
/// it); the connection's own timeouts are shorter.
pub const CALL_DEADLINE: Duration = Duration::from_secs(1);
/// After a failure, calls fail at once for this long.
const DOWN_FOR_MS: u64 = 1_000;

/// A lazily connected Redis client. Clones share the connection.
#[derive(Clone)]
pub struct LazyRedis {
    client: redis::Client,
    conn: Arc<tokio::sync::OnceCell<ConnectionManager>>,
    /// Unix ms until which calls fail without trying.
    down_until: Arc<AtomicU64>,
}

impl std::fmt::Debug for LazyRedis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL: it may hold a password.
        f.debug_struct("LazyRedis").field("connected", &self.conn.initialized()).finish()
    }
}

/// A Redis error as text: its kind and the server's message, never the URL.
pub fn error_text(e: &redis::RedisError) -> String {
    format!("redis: {:?}: {}", e.kind(), e.detail().unwrap_or("request failed"))
}

impl LazyRedis {
    /// A client for `url`; no I/O until the first call.
    pub fn new(url: &str) -> Result<Self, String> {
        let client = redis::Client::open(url).map_err(|e| error_text(&e))?;
        Ok(Self { client, conn: Arc::default(), down_until: Arc::default() })
    }

    /// The connection: made on first use, within the call deadline.
    pub async fn conn(&self) -> Result<ConnectionManager, String> {
        let now = crate::health::clock::now_ms();
        if self.down_until.load(Ordering::Relaxed) > now {
            return Err("redis: down (retrying shortly)".into());
        }
        let made = self.conn.get_or_try_init(|| async {
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Duration::from_millis(500))
                .set_response_timeout(Duration::from_millis(500))
                .set_number_of_retries(0);
            let connect = ConnectionManager::new_with_config(self.client.clone(), config);
            match tokio::time::timeout(CALL_DEADLINE, connect).await {
                Ok(r) => r.map_err(|e| error_text(&e)),
                Err(_) => Err("redis: no connection within the deadline".to_string()),
            }
        });
        match made.await {
            Ok(c) => Ok(c.clone()),
            Err(e) => Err(self.failed(e)),
        }
    }

    /// Runs one call with the deadline; a failure marks the server down for a moment.
    pub async fn call<'f, T>(
        &self,
        f: impl FnOnce(ConnectionManager) -> BoxFuture<'f, redis::RedisResult<T>>,
    ) -> Result<T, String> {
        let conn = self.conn().await?;
        match tokio::time::timeout(CALL_DEADLINE, f(conn)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.failed(error_text(&e))),
            Err(_) => Err(self.failed("redis: no answer within the deadline".to_string())),
        }
    }

    fn failed(&self, e: String) -> String {
        self.down_until.store(crate::health::clock::now_ms() + DOWN_FOR_MS, Ordering::Relaxed);
        e
    }
}
