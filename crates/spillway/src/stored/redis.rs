//! Stored responses in Redis (`state.backend: redis`): every instance
//! reads what any instance stored.
//!
//! Layout under `key_prefix`, everything with the retention as its TTL:
//!
//! - `responses:r:{id}`: the record as JSON;
//! - `responses:i:{item id}`: `{owner, response_id, item}`, for
//!   `item_reference` lookups;
//! - `responses:index`: a sorted set of response ids scored by creation
//!   time, for trimming to `responses.max_stored` (checked on every write:
//!   `ZCARD` is O(1)) and for deleting what is past the retention before
//!   the TTLs do.

use super::{Limits, Owned, Record, Shelf, StoreError};
use crate::state::lazy_redis::LazyRedis;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// The Redis-backed store; connects on first use ([`LazyRedis`]).
#[derive(Clone)]
pub struct RedisShelf {
    redis: LazyRedis,
    prefix: String,
}

/// An item as kept under its own key.
#[derive(Debug, Serialize, Deserialize)]
struct StoredItem {
    owner: String,
    response_id: String,
    item: Value,
}

fn decode<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Store(format!("a stored response is unreadable: {e}")))
}

impl RedisShelf {
    /// A store for `url` under `prefix`; no I/O until the first call.
    pub fn new(url: &str, prefix: &str) -> Result<Self, StoreError> {
        let redis = LazyRedis::new(url).map_err(StoreError::Store)?;
        // On a cluster the prefix is one hash tag: the pipelines and MGETs below stay on one slot.
        Ok(Self { prefix: format!("{}responses:", redis.key_prefix(prefix)), redis })
    }

    fn key(&self, part: &str, id: &str) -> String {
        format!("{}{part}{id}", self.prefix)
    }

    async fn call<'f, T>(
        &self,
        f: impl FnOnce(crate::state::redis::target::Conn) -> BoxFuture<'f, redis::RedisResult<T>>,
    ) -> Result<T, StoreError> {
        self.redis.call(f).await.map_err(StoreError::Store)
    }

    /// Deletes these responses, their items and their index entries.
    async fn drop_ids(&self, ids: &[String]) -> Result<u64, StoreError> {
        if ids.is_empty() {
            return Ok(0);
        }
        let keys: Vec<String> = ids.iter().map(|id| self.key("r:", id)).collect();
        let texts: Vec<Option<String>> =
            self.call(|mut c| async move { redis::cmd("MGET").arg(&keys).query_async(&mut c).await }.boxed()).await?;
        let mut pipe = redis::pipe();
        for (id, text) in ids.iter().zip(&texts) {
            pipe.cmd("DEL").arg(self.key("r:", id)).ignore();
            if let Some(record) = text.as_deref().and_then(|t| decode::<Record>(t).ok()) {
                for (item, _) in record.items() {
                    pipe.cmd("DEL").arg(self.key("i:", item)).ignore();
                }
            }
        }
        pipe.cmd("ZREM").arg(self.key("index", "")).arg(ids).ignore();
        self.call(|mut c| async move { pipe.query_async::<()>(&mut c).await }.boxed()).await?;
        Ok(texts.iter().filter(|t| t.is_some()).count() as u64)
    }

    /// Deletes what is older than `before_ms`, then the oldest past `max`.
    async fn trim(&self, before_ms: u64, max: u64) -> Result<u64, StoreError> {
        let index = self.key("index", "");
        let old: Vec<String> = {
            let index = index.clone();
            self.call(|mut c| {
                async move {
                    redis::cmd("ZRANGEBYSCORE")
                        .arg(index)
                        .arg("-inf")
                        .arg(format!("({before_ms}"))
                        .query_async(&mut c)
                        .await
                }
                .boxed()
            })
            .await?
        };
        let mut n = self.drop_ids(&old).await?;
        let count: u64 = {
            let index = index.clone();
            self.call(|mut c| async move { redis::cmd("ZCARD").arg(index).query_async(&mut c).await }.boxed()).await?
        };
        if count > max {
            let extra = i64::try_from(count - max).unwrap_or(i64::MAX);
            let oldest: Vec<String> = self
                .call(|mut c| {
                    async move { redis::cmd("ZRANGE").arg(index).arg(0).arg(extra - 1).query_async(&mut c).await }
                        .boxed()
                })
                .await?;
            n += self.drop_ids(&oldest).await?;
        }
        Ok(n)
    }
}

impl Shelf for RedisShelf {
    fn backend(&self) -> &'static str {
        "redis"
    }

    fn put(&self, record: Record, limits: Limits) -> BoxFuture<'_, Result<(), StoreError>> {
        async move {
            let ttl = limits.retention_ms.max(1);
            let text = serde_json::to_string(&record).map_err(|e| StoreError::Store(e.to_string()))?;
            let mut pipe = redis::pipe();
            pipe.atomic().cmd("SET").arg(self.key("r:", &record.id)).arg(text).arg("PX").arg(ttl).ignore();
            for (id, item) in record.items() {
                let stored =
                    StoredItem { owner: record.owner.clone(), response_id: record.id.clone(), item: item.clone() };
                let text = serde_json::to_string(&stored).map_err(|e| StoreError::Store(e.to_string()))?;
                pipe.cmd("SET").arg(self.key("i:", id)).arg(text).arg("PX").arg(ttl).ignore();
            }
            pipe.cmd("ZADD").arg(self.key("index", "")).arg(record.created_ms).arg(&record.id).ignore();
            pipe.cmd("ZCARD").arg(self.key("index", ""));
            let (count,): (u64,) = self.call(|mut c| async move { pipe.query_async(&mut c).await }.boxed()).await?;
            if count > limits.max_stored {
                self.trim(0, limits.max_stored).await?;
            }
            Ok(())
        }
        .boxed()
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        async move {
            let key = self.key("r:", id);
            let text: Option<String> =
                self.call(|mut c| async move { redis::cmd("GET").arg(key).query_async(&mut c).await }.boxed()).await?;
            text.as_deref().map(decode).transpose()
        }
        .boxed()
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move { Ok(self.drop_ids(&[id.to_string()]).await? > 0) }.boxed()
    }

    fn items<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<Owned, StoreError>> {
        async move {
            let keys: Vec<String> = ids.iter().map(|id| self.key("i:", id)).collect();
            let texts: Vec<Option<String>> = self
                .call(|mut c| async move { redis::cmd("MGET").arg(&keys).query_async(&mut c).await }.boxed())
                .await?;
            let mut out = HashMap::new();
            for (id, text) in ids.iter().zip(texts) {
                if let Some(s) = text.as_deref().map(decode::<StoredItem>).transpose()? {
                    out.insert(id.clone(), (s.owner, s.item));
                }
            }
            Ok(out)
        }
        .boxed()
    }

    fn purge(&self, limits: Limits, now_ms: u64) -> BoxFuture<'_, Result<u64, StoreError>> {
        async move { self.trim(now_ms.saturating_sub(limits.retention_ms), limits.max_stored).await }.boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn redis_follows_the_rules() {
        let url = std::env::var("SPILLWAY_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into());
        let prefix = format!("spillway-test:{}:", super::super::new_id());
        let shelf = RedisShelf::new(&url, &prefix).unwrap();
        if let Err(e) = shelf.redis.conn().await {
            assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "Redis unreachable under CI: {e}");
            eprintln!("skipping: no Redis ({e})");
            return;
        }
        super::super::tests::conformance(&shelf).await;
        shelf.purge(Limits { retention_ms: 0, max_stored: 0 }, u64::MAX).await.unwrap();
    }
}
