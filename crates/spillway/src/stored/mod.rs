//! Stored responses of the Responses API: what `previous_response_id`,
//! `item_reference` items and `GET`/`DELETE /v1/responses/{id}` read.
//!
//! OpenAI keeps a response unless the client sends `store: false`, and
//! clients rely on it: the AI SDK's `openai(id)` sends the next turn of a
//! conversation as references to the items of earlier answers. So the
//! handler keeps each answered response here (with `responses.store`, the
//! default) — its own input items (references resolved), its output items
//! and the response object — in the embedded SQLite store under
//! `state.data_dir` ([`sqlite`]) or in Redis with `backend: redis`
//! ([`redis`]), so every instance sees it. It is kept for
//! `responses.retention` and at most `responses.max_stored` are kept
//! (the oldest go first; [`Retention`] and the stores' own trimming).
//!
//! A stored response belongs to the client key that made it ([`owner`]):
//! any other key finds nothing there, exactly as if it did not exist.
//!
//! The store is opened on first use and kept in [`Archive`] (part of
//! `gateway::Shared`, so it outlives reloads), like the handoff queue.

pub mod redis;
pub mod sqlite;
pub mod turn;

use crate::config::{ResponsesConfig, StateBackend, StateConfig};
use crate::secret::Secret;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The owner of responses made when clients need no key: anyone.
pub const ANYONE: &str = "-";
/// The longest `previous_response_id` chain read back (each link is one
/// read of the store); a conversation longer than that starts there.
pub const MAX_CHAIN: usize = 1000;

/// One stored response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// `resp_…`.
    pub id: String,
    /// Who may read it ([`owner`]).
    pub owner: String,
    /// Unix milliseconds.
    pub created_ms: u64,
    /// The response it continues (`previous_response_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// The request's own input items, each with an id, references resolved.
    pub input: Vec<Value>,
    /// The response's output items.
    pub output: Vec<Value>,
    /// The response object as the client got it.
    pub response: Value,
}

impl Record {
    /// The ids of its items (input and output), with the items.
    pub fn items(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.input.iter().chain(&self.output).filter_map(|i| Some((i.get("id")?.as_str()?, i)))
    }
}

/// A failure of the store itself (secret-free text).
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The store could not be opened, read or written.
    #[error("response store: {0}")]
    Store(String),
}

/// How long and how many responses are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `responses.retention` in milliseconds.
    pub retention_ms: u64,
    /// `responses.max_stored`.
    pub max_stored: u64,
}

impl From<&ResponsesConfig> for Limits {
    fn from(c: &ResponsesConfig) -> Self {
        Self { retention_ms: u64::try_from(c.retention.as_millis()).unwrap_or(u64::MAX), max_stored: c.max_stored }
    }
}

/// Items by id, each with its owner.
pub type Owned = HashMap<String, (String, Value)>;

/// Where responses are kept. No owner checks here: [`get`], [`items`] and
/// [`delete`] make them.
pub trait Shelf: Send + Sync + 'static {
    /// `sqlite` or `redis`.
    fn backend(&self) -> &'static str;
    /// Keeps `record` (and indexes its items by id); may trim to `limits`.
    fn put(&self, record: Record, limits: Limits) -> BoxFuture<'_, Result<(), StoreError>>;
    /// One response, whoever owns it.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Record>, StoreError>>;
    /// Deletes one response and its items; whether it was there.
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Items by id, each with its owner (missing ids are left out).
    fn items<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<Owned, StoreError>>;
    /// Deletes what is older than the retention or past the count; how many.
    fn purge(&self, limits: Limits, now_ms: u64) -> BoxFuture<'_, Result<u64, StoreError>>;
}

/// The lazily opened store, shared by every config generation.
#[derive(Default)]
pub struct Archive {
    shelf: OnceCell<Arc<dyn Shelf>>,
}

impl std::fmt::Debug for Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archive").field("open", &self.shelf.get().map(|s| s.backend())).finish()
    }
}

impl Archive {
    /// The store, opened on first use from `state:` (the first config that
    /// opens it wins). A failed open is retried on the next call.
    pub async fn shelf(&self, cfg: &StateConfig) -> Result<Arc<dyn Shelf>, StoreError> {
        self.shelf
            .get_or_try_init(|| async {
                let s: Arc<dyn Shelf> = match cfg.backend {
                    StateBackend::Memory => Arc::new(sqlite::SqliteShelf::open(cfg.data_dir.clone()).await?),
                    StateBackend::Redis => {
                        let url = cfg
                            .redis_url
                            .as_ref()
                            .ok_or_else(|| StoreError::Store("state.redis_url is not set".into()))?;
                        Arc::new(redis::RedisShelf::new(url.expose(), &cfg.key_prefix)?)
                    }
                };
                Ok(s)
            })
            .await
            .cloned()
    }

    /// The store if it is open already (for jobs that must not open it).
    pub fn opened(&self) -> Option<Arc<dyn Shelf>> {
        self.shelf.get().cloned()
    }
}

/// Who owns what a caller stores: a virtual key (`keys:`) by its id
/// (`handoff::key_id::key_owner`); a plain `server.api_keys` key by its HMAC-SHA-256 under
/// the store's key, the same id its handoff items carry
/// (`handoff::key_id`), so the key itself is never stored; without keys,
/// [`ANYONE`]. The one place that says whose a response is.
pub async fn owner(
    desk: &crate::handoff::Desk,
    state: &StateConfig,
    caller: Option<&Secret>,
    key_id: Option<&str>,
) -> Result<String, StoreError> {
    if let Some(id) = key_id {
        return Ok(crate::handoff::key_id::key_owner(id));
    }
    let Some(key) = caller else { return Ok(ANYONE.to_string()) };
    let err = |e: crate::handoff::HandoffError| StoreError::Store(e.to_string());
    let ids = desk.queue(state).await.map_err(err)?.key_ids().await.map_err(err)?;
    Ok(ids.id(key.expose()))
}

/// A new response id: `resp_` and 128 random bits from the OS, because
/// without client keys the id is all that guards a stored response.
pub fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // Never on Linux; the ids stay unique, only not unguessable.
        tracing::warn!("The OS random source failed; response ids fall back to a fast PRNG.");
        bytes = ((u128::from(fastrand::u64(..)) << 64) | u128::from(fastrand::u64(..))).to_le_bytes();
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("resp_{hex}")
}

/// `owner`'s response `id`, if it has one.
pub async fn get(shelf: &dyn Shelf, owner: &str, id: &str) -> Result<Option<Record>, StoreError> {
    Ok(shelf.get(id).await?.filter(|r| r.owner == owner))
}

/// Deletes `owner`'s response `id`; whether there was one.
pub async fn delete(shelf: &dyn Shelf, owner: &str, id: &str) -> Result<bool, StoreError> {
    match get(shelf, owner, id).await? {
        Some(_) => shelf.remove(id).await,
        None => Ok(false),
    }
}

/// `owner`'s items among `ids`.
pub async fn items(shelf: &dyn Shelf, owner: &str, ids: &[String]) -> Result<HashMap<String, Value>, StoreError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let found = shelf.items(ids).await?;
    Ok(found.into_iter().filter(|(_, (o, _))| o == owner).map(|(id, (_, item))| (id, item)).collect())
}

/// The conversation up to and including `owner`'s response `previous`:
/// every earlier response's input and output items, oldest first (a chain
/// cut by retention starts where it was cut). `None` when `previous`
/// itself is not there.
pub async fn history(shelf: &dyn Shelf, owner: &str, previous: &str) -> Result<Option<Vec<Value>>, StoreError> {
    let Some(first) = get(shelf, owner, previous).await? else { return Ok(None) };
    let mut chain = vec![first];
    while chain.len() < MAX_CHAIN {
        let Some(prev) = chain.last().and_then(|r| r.previous.clone()) else { break };
        match get(shelf, owner, &prev).await? {
            Some(r) => chain.push(r),
            None => break,
        }
    }
    let mut out = Vec::new();
    for r in chain.into_iter().rev() {
        out.extend(r.input);
        out.extend(r.output);
    }
    Ok(Some(out))
}

/// The retention job: deletes responses past `responses.retention` or
/// `responses.max_stored` once an hour (and at start), only when the store
/// was opened.
pub struct Retention {
    /// The archive.
    pub archive: Arc<Archive>,
    /// What to keep.
    pub limits: Limits,
}

impl crate::supervisor::BackgroundJob for Retention {
    fn name(&self) -> &'static str {
        "responses-retention"
    }

    async fn run(self, shutdown: tokio_util::sync::CancellationToken) {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = shutdown.cancelled() => return,
            }
            let Some(shelf) = self.archive.opened() else { continue };
            match shelf.purge(self.limits, crate::health::clock::now_ms()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "Expired stored responses deleted."),
                Err(e) => tracing::warn!(error = %e, "Cannot delete expired stored responses; will retry."),
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn record(id: &str, owner: &str, created_ms: u64, previous: Option<&str>) -> Record {
        Record {
            id: id.into(),
            owner: owner.into(),
            created_ms,
            previous: previous.map(str::to_string),
            input: vec![json!({"id": format!("in_{id}"), "type": "message", "role": "user", "content": id})],
            output: vec![json!({"id": format!("out_{id}"), "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": id}]})],
            response: json!({"id": id, "object": "response"}),
        }
    }

    /// The rules every shelf follows (run against each backend).
    pub(crate) async fn conformance(s: &dyn Shelf) {
        let keep = Limits { retention_ms: 1_000, max_stored: 100 };
        let now = crate::health::clock::now_ms();
        s.put(record("resp_a", "k1", now, None), keep).await.unwrap();
        s.put(record("resp_b", "k1", now + 1, Some("resp_a")), keep).await.unwrap();
        assert_eq!(get(s, "k1", "resp_b").await.unwrap().unwrap().previous.as_deref(), Some("resp_a"));
        assert!(get(s, "k2", "resp_b").await.unwrap().is_none(), "another owner sees nothing");
        let h = history(s, "k1", "resp_b").await.unwrap().unwrap();
        let ids: Vec<&str> = h.iter().map(|i| i["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["in_resp_a", "out_resp_a", "in_resp_b", "out_resp_b"]);
        assert!(history(s, "k2", "resp_b").await.unwrap().is_none());
        let want = vec!["out_resp_a".to_string(), "in_resp_b".to_string(), "nope".to_string()];
        let found = items(s, "k1", &want).await.unwrap();
        assert_eq!(found.len(), 2);
        assert!(items(s, "k2", &want).await.unwrap().is_empty());
        assert!(!delete(s, "k2", "resp_a").await.unwrap(), "not the other owner's to delete");
        assert!(delete(s, "k1", "resp_a").await.unwrap());
        assert!(s.get("resp_a").await.unwrap().is_none());
        assert!(items(s, "k1", &want).await.unwrap().keys().all(|k| k == "in_resp_b"), "its items went with it");
        // The chain is cut where retention cut it.
        assert_eq!(history(s, "k1", "resp_b").await.unwrap().unwrap().len(), 2);
        // Past the count, the oldest go.
        let two = Limits { retention_ms: 1_000_000, max_stored: 2 };
        for (i, id) in ["resp_c", "resp_d", "resp_e"].into_iter().enumerate() {
            s.put(record(id, "k1", now + 10 + i as u64, None), two).await.unwrap();
        }
        s.purge(two, now + 20).await.unwrap();
        assert!(s.get("resp_b").await.unwrap().is_none() && s.get("resp_c").await.unwrap().is_none());
        assert!(s.get("resp_e").await.unwrap().is_some());
        // Past the retention, everything goes.
        s.purge(keep, now + 1_000_000).await.unwrap();
        assert!(s.get("resp_e").await.unwrap().is_none());
    }
}
