//! The human handoff queue (SPEC §8): the tier after the last resort.
//!
//! When every model of a cascade with `handoff: true` failed, the runner
//! calls [`queue`]: the request (messages, cascade, every attempt and its
//! reason, time, client key id) is written to a durable [`Queue`] — the
//! embedded SQLite store in `state.data_dir` ([`sqlite`]) or Redis with
//! `backend: redis` ([`redis`]) — and only once that write is committed does
//! the client get a normal completion whose content is `handoff.reply`
//! ([`reply`]) with the item's id. An operator answers through the admin API
//! or `spillway handoff answer`; the client reads the answer at
//! `GET /v1/handoff/{id}` with the same client key.
//!
//! The store is opened lazily, on first use, and kept in [`Desk`] (part of
//! `gateway::Shared`, so it outlives config reloads): most gateways never
//! hand anything off, and opening Redis or a file needs I/O that
//! `Gateway::build` must not do.

pub mod key_id;
pub mod redis;
pub mod reply;
pub mod spool;
pub mod sqlite;

use crate::alerts::AlertBus;
use crate::api::error::AttemptSummary;
use crate::api::ChatRequest;
use crate::cascade::{CascadePlan, Served};
use crate::config::{HandoffConfig, StateBackend, StateConfig};
use crate::metrics::Metrics;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// Whether a person has answered an item yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting for a person.
    Open,
    /// Answered.
    Answered,
}

impl Status {
    /// The label used in the API and in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Answered => "answered",
        }
    }

    /// Parses `open` / `answered`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "open" => Some(Self::Open),
            "answered" => Some(Self::Answered),
            _ => None,
        }
    }
}

/// One attempt of the failed walk, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredAttempt {
    /// Model ref.
    pub model: String,
    /// Why it did not answer.
    pub reason: String,
}

/// The "answer" that closes an item without answering it
/// ([`Queue::answer`] with no text; the answer route refuses empty text,
/// so only a close sends it).
pub const CLOSE: &str = "";

/// One queued request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// `ho_…`, random (it is also a capability when clients have no keys).
    pub id: String,
    /// Open or answered.
    pub status: Status,
    /// The cascade that failed.
    pub cascade: String,
    /// Which client key sent it ([`key_id::KeyIds`]); none when clients need no key.
    pub client_key_id: Option<String>,
    /// The client request's id (`x-request-id`), to find its log lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The end user a virtual key's request named (`user`, `metadata.user_id`, `x-spillway-user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The request's `messages`, as sent.
    pub messages: Value,
    /// Every attempt, in order.
    pub attempts: Vec<StoredAttempt>,
    /// Unix milliseconds.
    pub created_ms: u64,
    /// The person's answer.
    pub answer: Option<String>,
    /// Closed by a person without an answer (status `answered`, no
    /// `answer`): the client is told it was closed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub closed: bool,
    /// Unix milliseconds.
    pub answered_ms: Option<u64>,
}

/// A failure of the queue's storage.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HandoffError {
    /// The store could not be opened or written (secret-free text).
    #[error("handoff store: {0}")]
    Store(String),
}

/// What answering an item did.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// It is answered now.
    Done(Item),
    /// It was answered before; nothing changed.
    AlreadyAnswered(Item),
    /// No such item.
    Missing,
}

/// Durable storage of the queue. Every write is committed before its
/// future resolves: that is what lets the client have its id.
pub trait Queue: Send + Sync + 'static {
    /// `sqlite` or `redis`.
    fn backend(&self) -> &'static str;
    /// The ids of client keys under this store's key (the Redis store reads
    /// its shared key on first use).
    fn key_ids(&self) -> BoxFuture<'_, Result<Arc<key_id::KeyIds>, HandoffError>>;
    /// Whether `stored` (an item's `client_key_id`) names `client_key`.
    fn owns<'a>(&'a self, stored: &'a str, client_key: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move { self.key_ids().await.is_ok_and(|ids| ids.owns(stored, client_key)) })
    }
    /// Stores a new item.
    fn push(&self, item: Item) -> BoxFuture<'_, Result<(), HandoffError>>;
    /// Reads one item.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Item>, HandoffError>>;
    /// Items with `status` (all when none), oldest first.
    fn list(&self, status: Option<Status>) -> BoxFuture<'_, Result<Vec<Item>, HandoffError>>;
    /// Records a person's answer (once).
    fn answer<'a>(&'a self, id: &'a str, text: &'a str, now_ms: u64) -> BoxFuture<'a, Result<Answered, HandoffError>>;
    /// Deletes items created before `before_ms`; returns how many.
    fn purge(&self, before_ms: u64) -> BoxFuture<'_, Result<u64, HandoffError>>;
    /// How many items are open.
    fn open_count(&self) -> BoxFuture<'_, Result<u64, HandoffError>>;
}

/// The lazily opened queue, shared by every config generation.
#[derive(Default)]
pub struct Desk {
    queue: OnceCell<Arc<dyn Queue>>,
    /// The same queue, when it is Redis with a spool (for the drain job).
    spooled: std::sync::OnceLock<Arc<spool::Spooled>>,
}

impl std::fmt::Debug for Desk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desk").field("open", &self.queue.get().map(|q| q.backend())).finish()
    }
}

impl Desk {
    /// The queue, opened on first use from `state:` (the first config that
    /// opens it wins: moving a live queue on reload would strand items).
    /// A failed open is retried on the next call.
    pub async fn queue(&self, cfg: &StateConfig) -> Result<Arc<dyn Queue>, HandoffError> {
        self.queue
            .get_or_try_init(|| async {
                let q: Arc<dyn Queue> = match cfg.backend {
                    StateBackend::Memory => Arc::new(sqlite::SqliteQueue::open(cfg.data_dir.clone()).await?),
                    StateBackend::Redis => {
                        let url = cfg
                            .redis_url
                            .as_ref()
                            .ok_or_else(|| HandoffError::Store("state.redis_url is not set".into()))?;
                        let q = Arc::new(spool::Spooled::new(url.expose(), &cfg.key_prefix, cfg.data_dir.clone())?);
                        let _ = self.spooled.set(q.clone());
                        q
                    }
                };
                Ok(q)
            })
            .await
            .cloned()
    }

    /// The Redis queue's spool, once the queue is open with `backend: redis`.
    pub fn spooled(&self) -> Option<Arc<spool::Spooled>> {
        self.spooled.get().cloned()
    }

    /// The queue if it is open already (for jobs that must not open it).
    pub fn opened(&self) -> Option<Arc<dyn Queue>> {
        self.queue.get().cloned()
    }
}

/// A new random item id: 128 bits from the OS's CSPRNG, because the id is
/// the only thing guarding `GET /v1/handoff/{id}` when clients have no keys.
pub fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness (it never fails on Linux): a fast PRNG still
        // gives unique ids, only not unguessable ones.
        tracing::warn!("The OS random source failed; handoff ids fall back to a fast PRNG.");
        bytes = ((u128::from(fastrand::u64(..)) << 64) | u128::from(fastrand::u64(..))).to_le_bytes();
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("ho_{hex}")
}

/// What the handoff tier touches: the queue, its settings, the alert bus
/// and the depth gauge (the handler lends it; `Gateway::handoff`).
#[derive(Clone, Copy)]
pub struct Handoff<'a> {
    pub desk: &'a Desk,
    pub state: &'a StateConfig,
    pub config: &'a HandoffConfig,
    pub alerts: &'a AlertBus,
    pub metrics: &'a Metrics,
}

/// The last tier, after the runner found no answer: stores the request and
/// answers with `handoff.reply`. When the store fails, nothing was queued
/// and the caller answers with the error it would have given without
/// handoff (promising an answer would be a lie).
pub async fn queue(
    h: Handoff<'_>,
    plan: &CascadePlan,
    req: &ChatRequest,
    attempts: &[AttemptSummary],
    calls: u32,
) -> Result<Served, HandoffError> {
    let q = h.desk.queue(h.state).await?;
    let owner = match (&req.key_id, &req.caller) {
        (Some(id), _) => Some(key_id::key_owner(id)),
        (None, Some(key)) => Some(q.key_ids().await?.id(key.expose())),
        (None, None) => None,
    };
    let item = Item {
        id: new_id(),
        status: Status::Open,
        cascade: plan.name.clone(),
        client_key_id: owner,
        request_id: req.request_id.as_ref().map(|id| id.as_str().to_string()),
        user: req.end_user.clone(),
        messages: req.body().get("messages").cloned().unwrap_or(Value::Null),
        attempts: attempts.iter().map(|a| StoredAttempt { model: a.model.clone(), reason: a.reason.clone() }).collect(),
        created_ms: crate::health::clock::now_ms(),
        answer: None,
        closed: false,
        answered_ms: None,
    };
    q.push(item.clone()).await?;
    plan.metrics.served_handoff.inc();
    tracing::info!(cascade = %plan.name, id = %item.id, "Every model failed; the request is queued for a person.");
    refresh_depth(h.metrics, q.as_ref()).await;
    h.alerts.publish(crate::alerts::Event::HandoffQueued {
        id: item.id.clone(),
        cascade: plan.name.clone(),
        attempts: item.attempts.len(),
    });
    if h.config.webhook.is_some() {
        h.alerts.notify_handoff(serde_json::json!({
            "event": "handoff.queued",
            "id": item.id,
            "cascade": item.cascade,
            "created_ms": item.created_ms,
            "attempts": item.attempts,
        }));
    }
    Ok(reply::served(plan, req, &h.config.reply, item.id, calls))
}

/// Sets `spillway_handoff_queue_depth` from the store; returns the count.
pub async fn refresh_depth(metrics: &Metrics, q: &dyn Queue) -> Option<u64> {
    let n = q.open_count().await.ok()?;
    metrics.handoff_queue_depth.set(i64::try_from(n).unwrap_or(i64::MAX));
    Some(n)
}

/// Open items now, read from the store (so items queued before a restart
/// or by another instance count), with the gauge refreshed. `None` when no
/// cascade hands off (`in_use` false) and the queue was never opened
/// (nothing is created just to count), or when the store cannot be read.
pub async fn depth(h: Handoff<'_>, in_use: bool) -> Option<u64> {
    let q = match h.desk.opened() {
        Some(q) => q,
        None if in_use => h.desk.queue(h.state).await.ok()?,
        None => return None,
    };
    refresh_depth(h.metrics, q.as_ref()).await
}

/// The client's view of an item (`GET /v1/handoff/{id}`): no messages, no
/// attempts, no key id.
pub fn client_view(item: &Item) -> Value {
    serde_json::json!({
        "id": item.id,
        "object": "spillway.handoff",
        "status": if item.closed { "closed" } else { item.status.as_str() },
        "created": item.created_ms / 1000,
        "answer": item.answer,
        "answered_at": item.answered_ms.map(|ms| ms / 1000),
    })
}

/// The retention job: deletes items older than `handoff.retention` — never
/// sooner — once an hour (and at start), only when the queue was opened.
pub struct Retention {
    /// The desk.
    pub desk: Arc<Desk>,
    /// `handoff.retention`.
    pub retention: std::time::Duration,
}

impl crate::supervisor::BackgroundJob for Retention {
    fn name(&self) -> &'static str {
        "handoff-retention"
    }

    async fn run(self, shutdown: tokio_util::sync::CancellationToken) {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = shutdown.cancelled() => return,
            }
            let Some(q) = self.desk.opened() else { continue };
            let keep_ms = u64::try_from(self.retention.as_millis()).unwrap_or(u64::MAX);
            let before = crate::health::clock::now_ms().saturating_sub(keep_ms);
            match q.purge(before).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "Expired handoff items deleted."),
                Err(e) => tracing::warn!(error = %e, "Cannot delete expired handoff items; will retry."),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_round_trips() {
        for s in [Status::Open, Status::Answered] {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
        assert_eq!(Status::parse("closed"), None);
    }
}
