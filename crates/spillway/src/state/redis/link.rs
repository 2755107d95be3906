//! The Redis link: a background job that connects, subscribes to the
//! change channel, forwards published changes to the store's broadcast,
//! and watches the connection, reconnecting until Redis answers again.
//!
//! It alone decides [`LinkState`]: `Up` once the subscription and the
//! command connection both work; `Down` as soon as the subscription drops
//! (a killed or restarted server closes it at once), or a probe fails (a
//! silent network, checked every second and right after any failed
//! command). While not `Up` the store fails fast, so nothing waits on a
//! dead server; the sync job re-reads a snapshot after every return to
//! `Up`, which covers what was published meanwhile.
//!
//! Each connected period starts from the [`super::target::Target`]: a new
//! command connection and subscription, so behind Sentinels both reach the
//! master named now. A write refused as `READONLY` (the master turned
//! replica) ends the period like a failed probe, and behind Sentinels the
//! probe asks `ROLE`, so a store that only reads notices a planned
//! failover too. The return to `Up` is
//! logged, and a change of server is logged as a failover.

use super::target::{Conn, Limits};
use super::{parse_change, store_err, LinkState, RedisStore};
use crate::supervisor::BackgroundJob;
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a connection attempt, a subscription or a probe may take. Redis
/// answers in well under a millisecond on a LAN; a second means trouble.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(1);
/// How often a connected link probes, to notice a silent network.
const PROBE_EVERY: Duration = Duration::from_secs(1);
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

    /// One connected period: connect, subscribe, go `Up`, forward messages
    /// until the connection fails or `shutdown`. Returns why it ended
    /// (`None`: shutdown).
    async fn session(&self, shutdown: &CancellationToken) -> Option<String> {
        let s = &self.store;
        let limits = Limits {
            connect: ATTEMPT_TIMEOUT,
            response: ATTEMPT_TIMEOUT,
            // Reconnecting is this job's business: the connection tries once
            // per failed command, so no command waits through a backoff.
            retries: 1,
        };
        let linked = tokio::time::timeout(ATTEMPT_TIMEOUT * 4, async {
            let mut linked = s.target.link(limits).await.map_err(|e| store_err(&e).0)?;
            linked.pubsub.subscribe(&s.channel).await.map_err(|e| store_err(&e).0)?;
            self.probe(&mut linked.conn, &linked.node).await?;
            Ok::<_, String>(linked)
        })
        .await
        .unwrap_or_else(|_| Err("redis: connection timed out".to_string()));
        let linked = match linked {
            Ok(l) => l,
            Err(e) => return Some(e),
        };
        s.stale.store(false, std::sync::atomic::Ordering::Release);
        s.conn.store(Some(Arc::new(linked.conn)));
        let previous = s.node.lock().unwrap_or_else(std::sync::PoisonError::into_inner).replace(linked.node.clone());
        let was = s.link.send_replace(LinkState::Up);
        match (&was, previous) {
            (LinkState::Down(_), Some(old)) if old != linked.node => tracing::warn!(
                redis = %s.address, from = %old, to = %linked.node,
                "Redis failed over: another server serves now; sharing state resumes there."
            ),
            (LinkState::Down(_), _) => {
                tracing::info!(redis = %s.address, node = %linked.node, "Redis is reachable again; sharing state resumes.");
            }
            _ => tracing::debug!(redis = %s.address, node = %linked.node, "Connected to Redis."),
        }
        let mut messages = linked.pubsub.into_on_message();
        let mut tick = tokio::time::interval(PROBE_EVERY);
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
        if self.store.stale.swap(false, std::sync::atomic::Ordering::AcqRel) {
            return Err("redis: the server refused a write as a replica (READONLY): a failover".into());
        }
        match self.store.conn.load_full() {
            Some(c) => {
                let node = self.store.node.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
                self.probe(&mut (*c).clone(), &node.unwrap_or_default()).await
            }
            None => Err("redis: not connected".into()),
        }
    }

    /// [`super::target::Target::probe`] within [`ATTEMPT_TIMEOUT`].
    async fn probe(&self, conn: &mut Conn, node: &str) -> Result<(), String> {
        let s = &self.store;
        match tokio::time::timeout(ATTEMPT_TIMEOUT, s.target.probe(conn, &s.probe_key(), node)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(store_err(&e).0),
            Err(_) => Err("redis: no answer in time".into()),
        }
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
