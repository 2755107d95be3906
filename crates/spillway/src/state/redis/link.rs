//! The Redis link: a background job that connects, subscribes to the
//! change channel, forwards published changes to the store's broadcast,
//! and watches the connection, reconnecting until Redis answers again.
//!
//! It alone decides [`LinkState`]: `Up` once the subscription and the
//! command connection both work; `Down` as soon as the subscription drops
//! (a killed or restarted server closes it at once), or a PING fails (a
//! silent network, checked every second and right after any failed
//! command). While not `Up` the store fails fast, so nothing waits on a
//! dead server; the sync job re-reads a snapshot after every return to
//! `Up`, which covers what was published meanwhile.

use super::{parse_change, store_err, LinkState, RedisStore};
use crate::supervisor::BackgroundJob;
use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a connection attempt, a subscription or a PING may take. Redis
/// answers in well under a millisecond on a LAN; a second means trouble.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(1);
/// How often a connected link PINGs, to notice a silent network.
const PING_EVERY: Duration = Duration::from_secs(1);
/// Reconnect backoff: from the first to the last value, doubling.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(1));

/// The job that keeps a [`RedisStore`] connected.
#[derive(Debug)]
pub struct RedisLink {
    store: Arc<RedisStore>,
}

impl RedisLink {
    pub(super) fn new(store: Arc<RedisStore>) -> Self {
        Self { store }
    }

    /// The command connection: created on the first success, then reused
    /// (the manager reconnects by itself) and checked with a PING.
    async fn command_connection(&self) -> Result<(), String> {
        let s = &self.store;
        let mut conn = match s.conn.load_full() {
            Some(c) => (*c).clone(),
            None => {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(ATTEMPT_TIMEOUT)
                    .set_response_timeout(ATTEMPT_TIMEOUT)
                    // Reconnecting is this job's business: the manager tries once
                    // per failed command, so no command waits through a backoff.
                    .set_number_of_retries(1)
                    .set_max_delay(200);
                let c =
                    ConnectionManager::new_with_config(s.client.clone(), config).await.map_err(|e| store_err(&e).0)?;
                s.conn.store(Some(Arc::new(c.clone())));
                c
            }
        };
        ping(&mut conn).await
    }

    /// One connected period: subscribe, go `Up`, forward messages until the
    /// connection fails or `shutdown`. Returns why it ended (`None`: shutdown).
    async fn session(&self, shutdown: &CancellationToken) -> Option<String> {
        let s = &self.store;
        let subscribed = tokio::time::timeout(ATTEMPT_TIMEOUT, async {
            let mut pubsub = s.client.get_async_pubsub().await.map_err(|e| store_err(&e).0)?;
            pubsub.subscribe(&s.channel).await.map_err(|e| store_err(&e).0)?;
            Ok::<_, String>(pubsub)
        })
        .await
        .unwrap_or_else(|_| Err("redis: connection timed out".to_string()));
        let pubsub = match subscribed {
            Ok(p) => p,
            Err(e) => return Some(e),
        };
        if let Err(e) = self.command_connection().await {
            return Some(e);
        }
        s.link.send_replace(LinkState::Up);
        let mut messages = pubsub.into_on_message();
        let mut tick = tokio::time::interval(PING_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return None,
                msg = messages.next() => match msg {
                    Some(msg) => {
                        let payload: Result<String, _> = msg.get_payload();
                        match payload.ok().as_deref().and_then(parse_change) {
                            Some(change) => {
                                let _ = s.changes.send(change);
                            }
                            None => tracing::debug!("Ignored a message on the state channel."),
                        }
                    }
                    None => return Some("redis: the subscription connection closed".into()),
                },
                _ = tick.tick() => if let Err(e) = self.check().await {
                    return Some(e);
                },
                () = s.trouble.notified() => if let Err(e) = self.check().await {
                    return Some(e);
                },
            }
        }
    }

    async fn check(&self) -> Result<(), String> {
        match self.store.conn.load_full() {
            Some(c) => ping(&mut (*c).clone()).await,
            None => Err("redis: not connected".into()),
        }
    }
}

async fn ping(conn: &mut ConnectionManager) -> Result<(), String> {
    match tokio::time::timeout(ATTEMPT_TIMEOUT, ::redis::cmd("PING").query_async::<String>(conn)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(store_err(&e).0),
        Err(_) => Err("redis: PING timed out".into()),
    }
}

impl BackgroundJob for RedisLink {
    fn name(&self) -> &'static str {
        "redis-link"
    }

    async fn run(self, shutdown: CancellationToken) {
        let mut backoff = BACKOFF.0;
        loop {
            let Some(why) = self.session(&shutdown).await else {
                return;
            };
            let was_up = *self.store.link.borrow() == LinkState::Up;
            if was_up {
                backoff = BACKOFF.0;
            }
            // Log a change of state once, not every failed attempt.
            let changed = self.store.link.send_if_modified(|state| {
                let down = LinkState::Down(why.clone());
                let modified = !matches!(state, LinkState::Down(_));
                *state = down;
                modified
            });
            if changed {
                tracing::warn!(redis = %self.store.address, error = %why, "Redis is unreachable; this instance serves from local state and keeps retrying.");
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(BACKOFF.1);
        }
    }
}
