//! The handoff queue in Redis (`state.backend: redis`): every instance sees
//! the same queue, and an item survives any gateway crash once written.
//!
//! Layout under `key_prefix` (no TTL on any of it; retention deletes old
//! items explicitly, so nothing expires sooner than configured):
//!
//! - `handoff:item:{id}`: the item as JSON, written once and never changed;
//! - `handoff:answer:{id}`: the answer `{text, answered_ms}`, set with `NX`
//!   so the first operator's answer wins;
//! - `handoff:open`, `handoff:answered`: sorted sets of ids scored by
//!   creation time, for listing in order, counting and trimming;
//! - `handoff:key-id`: the key of client key ids ([`super::key_id`]), set
//!   with `NX` by the first instance.
//!
//! A Stream was the other candidate; it cannot be updated in place or read
//! by id cheaply, and answers and lookups by id are what this queue does.
//! Durability beyond a gateway crash is the Redis server's (`appendonly`).
//! On a cluster the prefix is one hash tag ([`LazyRedis::key_prefix`]), so
//! the MULTI, the MGET and the answer script stay on one slot.

use super::key_id::KeyIds;
use super::{Answered, HandoffError, Item, Queue, Status};
use crate::state::lazy_redis::LazyRedis;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub use crate::state::lazy_redis::CALL_DEADLINE;

/// The Redis-backed queue. It connects on first use, never waits longer
/// than [`CALL_DEADLINE`] for a call, and fails fast while the server is
/// known to be down ([`LazyRedis`]).
#[derive(Clone)]
pub struct RedisQueue {
    redis: LazyRedis,
    prefix: String,
    /// Keyed by `handoff:key-id`, shared by every instance; read (or set,
    /// the first instance winning) on first use.
    key_ids: Arc<tokio::sync::OnceCell<Arc<KeyIds>>>,
}

/// The stored answer.
#[derive(Debug, Serialize, Deserialize)]
struct StoredAnswer {
    text: String,
    answered_ms: u64,
}

/// Records an answer once: returns 0 (no such item), 1 (answered now) or
/// 2 (answered before), atomically.
const ANSWER: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if not redis.call('SET', KEYS[2], ARGV[1], 'NX') then return 2 end
local score = redis.call('ZSCORE', KEYS[3], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('ZADD', KEYS[4], score or ARGV[3], ARGV[2])
return 1
";

impl RedisQueue {
    /// A queue for `url` under `prefix`; no I/O until the first call.
    pub fn new(url: &str, prefix: &str) -> Result<Self, HandoffError> {
        let redis = LazyRedis::new(url).map_err(HandoffError::Store)?;
        Ok(Self { prefix: format!("{}handoff:", redis.key_prefix(prefix)), redis, key_ids: Arc::default() })
    }

    /// A queue that has connected once (tests, and callers that want to know now).
    pub async fn connect(url: &str, prefix: &str) -> Result<Self, HandoffError> {
        let q = Self::new(url, prefix)?;
        q.redis.conn().await.map_err(HandoffError::Store)?;
        Ok(q)
    }

    /// Runs one call with the deadline.
    async fn call<'f, T>(
        &self,
        f: impl FnOnce(crate::state::redis::target::Conn) -> BoxFuture<'f, redis::RedisResult<T>>,
    ) -> Result<T, HandoffError> {
        self.redis.call(f).await.map_err(HandoffError::Store)
    }

    /// The shared key-id key: the first instance's wins (`NX`), every
    /// instance reads it back.
    async fn load_key_ids(&self) -> Result<Arc<KeyIds>, HandoffError> {
        let made = self.key_ids.get_or_try_init(|| async {
            let key = self.key("key-id");
            let mut pipe = redis::pipe();
            pipe.atomic().cmd("SET").arg(&key).arg(super::key_id::new_key_text()).arg("NX").cmd("GET").arg(&key);
            let (_, text): (Option<String>, Option<String>) =
                self.call(|mut c| async move { pipe.query_async(&mut c).await }.boxed()).await?;
            let ids = text.as_deref().and_then(KeyIds::from_hex).ok_or_else(|| {
                HandoffError::Store(format!("redis: `{key}` is not a key-id key (64 hex characters)"))
            })?;
            Ok(Arc::new(ids))
        });
        made.await.cloned()
    }

    fn key(&self, part: &str) -> String {
        format!("{}{part}", self.prefix)
    }

    fn set_key(&self, status: Status) -> String {
        self.key(status.as_str())
    }

    /// Reads items with their answers, in the order of `ids`.
    async fn load(&self, ids: &[String]) -> Result<Vec<Item>, HandoffError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut keys: Vec<String> = ids.iter().map(|id| self.key(&format!("item:{id}"))).collect();
        keys.extend(ids.iter().map(|id| self.key(&format!("answer:{id}"))));
        let values: Vec<Option<String>> =
            self.call(|mut c| async move { redis::cmd("MGET").arg(&keys).query_async(&mut c).await }.boxed()).await?;
        let (items, answers) = values.split_at(ids.len());
        let mut out = Vec::with_capacity(ids.len());
        for (item, answer) in items.iter().zip(answers) {
            let Some(text) = item else { continue };
            let mut item: Item = serde_json::from_str(text)
                .map_err(|e| HandoffError::Store(format!("a stored item is not readable: {e}")))?;
            if let Some(a) = answer.as_deref().and_then(|a| serde_json::from_str::<StoredAnswer>(a).ok()) {
                item.status = Status::Answered;
                item.closed = a.text == super::CLOSE;
                item.answer = (!item.closed).then_some(a.text);
                item.answered_ms = Some(a.answered_ms);
            }
            out.push(item);
        }
        Ok(out)
    }

    async fn ids(&self, status: Status, max_score: Option<u64>) -> Result<Vec<String>, HandoffError> {
        let max = max_score.map_or_else(|| "+inf".to_string(), |m| format!("({m}"));
        let key = self.set_key(status);
        self.call(|mut c| {
            async move { redis::cmd("ZRANGEBYSCORE").arg(key).arg("-inf").arg(max).query_async(&mut c).await }.boxed()
        })
        .await
    }
}

impl Queue for RedisQueue {
    fn backend(&self) -> &'static str {
        "redis"
    }

    fn key_ids(&self) -> BoxFuture<'_, Result<Arc<KeyIds>, HandoffError>> {
        self.load_key_ids().boxed()
    }

    fn push(&self, item: Item) -> BoxFuture<'_, Result<(), HandoffError>> {
        async move {
            let text = serde_json::to_string(&item).map_err(|e| HandoffError::Store(e.to_string()))?;
            // MULTI/EXEC: the item and its index entry appear together.
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("SET")
                .arg(self.key(&format!("item:{}", item.id)))
                .arg(text)
                .ignore()
                .cmd("ZADD")
                .arg(self.set_key(Status::Open))
                .arg(item.created_ms)
                .arg(&item.id)
                .ignore();
            self.call(|mut c| async move { pipe.query_async::<()>(&mut c).await }.boxed()).await
        }
        .boxed()
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Item>, HandoffError>> {
        async move { Ok(self.load(&[id.to_string()]).await?.pop()) }.boxed()
    }

    fn list(&self, status: Option<Status>) -> BoxFuture<'_, Result<Vec<Item>, HandoffError>> {
        async move {
            let statuses = match status {
                Some(s) => vec![s],
                None => vec![Status::Open, Status::Answered],
            };
            let mut ids = Vec::new();
            for s in statuses {
                ids.extend(self.ids(s, None).await?);
            }
            let mut items = self.load(&ids).await?;
            items.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
            Ok(items)
        }
        .boxed()
    }

    fn answer<'a>(&'a self, id: &'a str, text: &'a str, now_ms: u64) -> BoxFuture<'a, Result<Answered, HandoffError>> {
        async move {
            let answer = serde_json::to_string(&StoredAnswer { text: text.to_string(), answered_ms: now_ms })
                .map_err(|e| HandoffError::Store(e.to_string()))?;
            let script = redis::Script::new(ANSWER);
            let mut inv = script.prepare_invoke();
            inv.key(self.key(&format!("item:{id}")))
                .key(self.key(&format!("answer:{id}")))
                .key(self.set_key(Status::Open))
                .key(self.set_key(Status::Answered))
                .arg(answer)
                .arg(id)
                .arg(now_ms);
            let outcome: i64 = self.call(|mut c| async move { inv.invoke_async(&mut c).await }.boxed()).await?;
            let item = self.load(&[id.to_string()]).await?.pop();
            Ok(match (outcome, item) {
                (1, Some(item)) => Answered::Done(item),
                (2, Some(item)) => Answered::AlreadyAnswered(item),
                _ => Answered::Missing,
            })
        }
        .boxed()
    }

    fn purge(&self, before_ms: u64) -> BoxFuture<'_, Result<u64, HandoffError>> {
        async move {
            let mut deleted = 0;
            for status in [Status::Open, Status::Answered] {
                let ids = self.ids(status, Some(before_ms)).await?;
                if ids.is_empty() {
                    continue;
                }
                let mut pipe = redis::pipe();
                pipe.atomic();
                for id in &ids {
                    pipe.cmd("DEL")
                        .arg(self.key(&format!("item:{id}")))
                        .arg(self.key(&format!("answer:{id}")))
                        .ignore();
                }
                pipe.cmd("ZREM").arg(self.set_key(status)).arg(&ids).ignore();
                self.call(|mut c| async move { pipe.query_async::<()>(&mut c).await }.boxed()).await?;
                deleted += ids.len() as u64;
            }
            Ok(deleted)
        }
        .boxed()
    }

    fn open_count(&self) -> BoxFuture<'_, Result<u64, HandoffError>> {
        async move {
            let key = self.set_key(Status::Open);
            self.call(|mut c| async move { redis::cmd("ZCARD").arg(key).query_async(&mut c).await }.boxed()).await
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test Redis, or `None` to skip — except under `CI=true`, where a
    /// missing Redis fails the test.
    pub(crate) async fn test_queue() -> Option<RedisQueue> {
        let url = std::env::var("SPILLWAY_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into());
        let prefix = format!("spillway-test:{}:", crate::handoff::new_id());
        match RedisQueue::connect(&url, &prefix).await {
            Ok(q) => Some(q),
            Err(e) if std::env::var("CI").as_deref() == Ok("true") => panic!("Redis unreachable under CI: {e}"),
            Err(e) => {
                eprintln!("skipping: no Redis ({e})");
                None
            }
        }
    }

    #[tokio::test]
    async fn redis_follows_the_rules() {
        let Some(q) = test_queue().await else { return };
        crate::handoff::sqlite::tests::conformance(&q).await;
        q.purge(u64::MAX).await.unwrap();
    }

    #[tokio::test]
    async fn a_second_connection_sees_the_same_queue() {
        let Some(q) = test_queue().await else { return };
        q.push(crate::handoff::sqlite::tests::item("ho_x", 7)).await.unwrap();
        let url = std::env::var("SPILLWAY_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into());
        let other = RedisQueue::connect(&url, q.prefix.trim_end_matches("handoff:")).await.unwrap();
        assert_eq!(other.get("ho_x").await.unwrap().map(|i| i.created_ms), Some(7));
        q.purge(u64::MAX).await.unwrap();
    }
}
