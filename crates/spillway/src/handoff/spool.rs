//! The handoff queue with `state.backend: redis`, while Redis may be down:
//! Redis first, the embedded queue in `data_dir` as a spool.
//!
//! A client is told "a person will answer" only once its item is stored
//! durably, so when Redis cannot take an item within its call deadline the
//! item goes to the spool (`data_dir/handoff-spool.sqlite3`, committed
//! before the reply) and the [`Drain`] job moves it to Redis once Redis is
//! back. Until then this instance still finds the item: reads look in the
//! spool first, lists and counts add the spool's items to Redis's (or show
//! the spool's alone while Redis is down), and an operator can answer a
//! spooled item here. Nothing the client was told is lost; other instances
//! see the item once it is drained.

use super::key_id::KeyIds;
use super::redis::RedisQueue;
use super::sqlite::SqliteQueue;
use super::{Answered, HandoffError, Item, Queue, Status};
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use std::sync::Arc;
use std::time::Duration;

/// The spool's file name in `data_dir`.
pub const SPOOL_FILE: &str = "handoff-spool.sqlite3";

/// Redis with an embedded spool; see the module docs.
pub struct Spooled {
    redis: RedisQueue,
    data_dir: std::path::PathBuf,
    /// Opened when first needed: the file exists only once something was
    /// spooled, so a gateway whose Redis never failed writes nothing here.
    spool: tokio::sync::OnceCell<SqliteQueue>,
}

impl Spooled {
    /// Redis at `url` under `prefix`, spooling into `data_dir`. No I/O.
    pub fn new(url: &str, prefix: &str, data_dir: std::path::PathBuf) -> Result<Self, HandoffError> {
        Ok(Self { redis: RedisQueue::new(url, prefix)?, data_dir, spool: tokio::sync::OnceCell::new() })
    }

    /// The spool, created if needed.
    async fn spool(&self) -> Result<&SqliteQueue, HandoffError> {
        self.spool.get_or_try_init(|| SqliteQueue::open_file(self.data_dir.clone(), SPOOL_FILE)).await
    }

    /// The spool, if it was ever created (by this process or an earlier one).
    async fn existing_spool(&self) -> Result<Option<&SqliteQueue>, HandoffError> {
        if self.spool.get().is_none() && !self.data_dir.join(SPOOL_FILE).exists() {
            return Ok(None);
        }
        self.spool().await.map(Some)
    }

    /// The spool's items with `status`, none when there is no spool.
    async fn spooled(&self, status: Option<Status>) -> Result<Vec<Item>, HandoffError> {
        match self.existing_spool().await? {
            Some(spool) => spool.list(status).await,
            None => Ok(Vec::new()),
        }
    }

    /// Moves every spooled item to Redis (with its answer, when an operator
    /// answered it here); returns how many moved. Stops at the first
    /// failure: the rest stay spooled for the next round.
    pub async fn drain(&self) -> Result<usize, HandoffError> {
        let Some(spool) = self.existing_spool().await? else { return Ok(0) };
        let items = spool.list(None).await?;
        let mut moved = 0;
        for item in items {
            let (id, answer) = (item.id.clone(), item.answer.clone().zip(item.answered_ms));
            let mut open = item;
            open.status = Status::Open;
            open.answer = None;
            open.answered_ms = None;
            match self.redis.get(&id).await? {
                Some(_) => {} // pushed before, removal from the spool failed
                None => self.redis.push(open).await?,
            }
            if let Some((text, at)) = answer {
                self.redis.answer(&id, &text, at).await?;
            }
            spool.remove(&id).await?;
            moved += 1;
        }
        if moved > 0 {
            tracing::info!(items = moved, "Spooled handoff items moved to the shared store.");
        }
        Ok(moved)
    }
}

impl Queue for Spooled {
    fn backend(&self) -> &'static str {
        "redis"
    }

    /// Redis's shared key; while Redis cannot be read, the spool's own (in
    /// `data_dir`): an item spooled then is owned under this instance's key,
    /// which only this instance can check (see [`Queue::owns`] below).
    fn key_ids(&self) -> BoxFuture<'_, Result<Arc<KeyIds>, HandoffError>> {
        async move {
            match self.redis.key_ids().await {
                Ok(ids) => Ok(ids),
                Err(e) => {
                    tracing::debug!(error = %e, "Shared key ids unreadable; keying by the spool's own key.");
                    self.spool().await?.key_ids().await
                }
            }
        }
        .boxed()
    }

    fn owns<'a>(&'a self, stored: &'a str, client_key: &'a str) -> BoxFuture<'a, bool> {
        async move {
            if self.redis.owns(stored, client_key).await {
                return true;
            }
            match self.existing_spool().await {
                Ok(Some(spool)) => spool.owns(stored, client_key).await,
                _ => false,
            }
        }
        .boxed()
    }

    fn push(&self, item: Item) -> BoxFuture<'_, Result<(), HandoffError>> {
        async move {
            match self.redis.push(item.clone()).await {
                Ok(()) => Ok(()),
                Err(e) => {
                    tracing::warn!(id = %item.id, error = %e, "The shared store is unreachable; the handoff item is spooled in data_dir.");
                    self.spool().await?.push(item).await
                }
            }
        }
        .boxed()
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Item>, HandoffError>> {
        async move {
            if let Some(spool) = self.existing_spool().await? {
                if let Some(item) = spool.get(id).await? {
                    return Ok(Some(item));
                }
            }
            self.redis.get(id).await
        }
        .boxed()
    }

    fn list(&self, status: Option<Status>) -> BoxFuture<'_, Result<Vec<Item>, HandoffError>> {
        async move {
            let mut items = self.spooled(status).await?;
            match self.redis.list(status).await {
                Ok(shared) => {
                    items.extend(shared.into_iter().filter(|i| !items.iter().any(|s| s.id == i.id)).collect::<Vec<_>>())
                }
                Err(e) if items.is_empty() => return Err(e),
                Err(e) => tracing::warn!(error = %e, "The shared store is unreachable; listing spooled items only."),
            }
            items.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
            Ok(items)
        }
        .boxed()
    }

    fn answer<'a>(&'a self, id: &'a str, text: &'a str, now_ms: u64) -> BoxFuture<'a, Result<Answered, HandoffError>> {
        async move {
            if let Some(spool) = self.existing_spool().await? {
                match spool.answer(id, text, now_ms).await? {
                    Answered::Missing => {}
                    spooled => return Ok(spooled),
                }
            }
            self.redis.answer(id, text, now_ms).await
        }
        .boxed()
    }

    fn purge(&self, before_ms: u64) -> BoxFuture<'_, Result<u64, HandoffError>> {
        async move {
            let spooled = match self.existing_spool().await? {
                Some(spool) => spool.purge(before_ms).await?,
                None => 0,
            };
            Ok(spooled + self.redis.purge(before_ms).await?)
        }
        .boxed()
    }

    fn open_count(&self) -> BoxFuture<'_, Result<u64, HandoffError>> {
        async move {
            let spooled = match self.existing_spool().await? {
                Some(spool) => spool.open_count().await?,
                None => 0,
            };
            match self.redis.open_count().await {
                Ok(n) => Ok(n + spooled),
                Err(_) if spooled > 0 => Ok(spooled),
                Err(e) => Err(e),
            }
        }
        .boxed()
    }
}

/// The drain job: every few seconds, spooled items go to Redis.
pub struct Drain {
    pub desk: Arc<super::Desk>,
}

/// How often the spool is drained.
const DRAIN_EVERY: Duration = Duration::from_secs(2);

impl crate::supervisor::BackgroundJob for Drain {
    fn name(&self) -> &'static str {
        "handoff-spool-drain"
    }

    async fn run(self, shutdown: tokio_util::sync::CancellationToken) {
        let mut tick = tokio::time::interval(DRAIN_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = shutdown.cancelled() => return,
            }
            let Some(spooled) = self.desk.spooled() else { continue };
            if let Err(e) = spooled.drain().await {
                tracing::debug!(error = %e, "Spooled handoff items stay spooled for now.");
            }
        }
    }
}
