//! The embedded handoff queue: one SQLite file, `handoff.sqlite3` in
//! `state.data_dir` (and beside it the key of client key ids, see
//! [`super::key_id`]).
//!
//! WAL journal with `synchronous = FULL`: a committed item is on disk before
//! the client hears its id, so a crash (`kill -9`) or power loss at any later
//! moment keeps it. SQLite calls block, so each runs on tokio's blocking
//! pool, never on a runtime worker; one connection behind a mutex is plenty
//! for a queue written only when every model failed.

use super::key_id::KeyIds;
use super::{Answered, HandoffError, Item, Queue, Status};
use crate::state::sqlite_file::SqliteFile;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::PathBuf;
use std::sync::Arc;

/// The SQLite-backed queue.
#[derive(Clone)]
pub struct SqliteQueue {
    /// The file, on the blocking pool.
    db: SqliteFile,
    /// Keyed by `handoff-key-id.key` beside the database.
    key_ids: Arc<KeyIds>,
}

fn store_err(e: impl std::fmt::Display) -> HandoffError {
    HandoffError::Store(e.to_string())
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS handoff (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    item TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS handoff_status_created ON handoff (status, created_ms);
CREATE INDEX IF NOT EXISTS handoff_created ON handoff (created_ms);
";

impl SqliteQueue {
    /// Opens (creating) `dir/handoff.sqlite3`.
    pub async fn open(dir: PathBuf) -> Result<Self, HandoffError> {
        Self::open_file(dir, "handoff.sqlite3").await
    }

    /// Opens (creating) `dir/file`.
    pub async fn open_file(dir: PathBuf, file: &'static str) -> Result<Self, HandoffError> {
        let (db, key_ids) = tokio::task::spawn_blocking(move || -> Result<(SqliteFile, KeyIds), HandoffError> {
            let db = SqliteFile::open_blocking(&dir, file, "FULL", SCHEMA).map_err(store_err)?;
            Ok((db, KeyIds::from_dir(&dir)?))
        })
        .await
        .map_err(store_err)??;
        Ok(Self { db, key_ids: Arc::new(key_ids) })
    }

    /// Runs `f` with the connection on the blocking pool.
    fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, HandoffError> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, HandoffError>> {
        self.db.with(HandoffError::Store, f)
    }
}

impl SqliteQueue {
    /// Deletes one item (the spool, once the item is in the shared store).
    pub fn remove(&self, id: &str) -> BoxFuture<'static, Result<(), HandoffError>> {
        let id = id.to_string();
        self.with(move |c| {
            c.execute("DELETE FROM handoff WHERE id = ?1", params![id]).map_err(store_err)?;
            Ok(())
        })
    }
}

fn decode(text: &str) -> Result<Item, HandoffError> {
    serde_json::from_str(text).map_err(|e| store_err(format!("a stored item is not readable: {e}")))
}

fn encode(item: &Item) -> Result<String, HandoffError> {
    serde_json::to_string(item).map_err(store_err)
}

impl Queue for SqliteQueue {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    fn key_ids(&self) -> BoxFuture<'_, Result<Arc<KeyIds>, HandoffError>> {
        let ids = self.key_ids.clone();
        async move { Ok(ids) }.boxed()
    }

    fn push(&self, item: Item) -> BoxFuture<'_, Result<(), HandoffError>> {
        self.with(move |c| {
            let text = encode(&item)?;
            let created = i64::try_from(item.created_ms).unwrap_or(i64::MAX);
            c.execute(
                "INSERT INTO handoff (id, status, created_ms, item) VALUES (?1, ?2, ?3, ?4)",
                params![item.id, item.status.as_str(), created, text],
            )
            .map_err(store_err)?;
            Ok(())
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Item>, HandoffError>> {
        let id = id.to_string();
        self.with(move |c| {
            let text: Option<String> = c
                .query_row("SELECT item FROM handoff WHERE id = ?1", params![id], |r| r.get(0))
                .optional()
                .map_err(store_err)?;
            text.as_deref().map(decode).transpose()
        })
    }

    fn list(&self, status: Option<Status>) -> BoxFuture<'_, Result<Vec<Item>, HandoffError>> {
        self.with(move |c| {
            let (sql, arg) = match status {
                Some(s) => ("SELECT item FROM handoff WHERE status = ?1 ORDER BY created_ms, id", Some(s.as_str())),
                None => ("SELECT item FROM handoff ORDER BY created_ms, id", None),
            };
            let mut stmt = c.prepare(sql).map_err(store_err)?;
            let rows: Vec<String> = match arg {
                Some(a) => stmt.query_map(params![a], |r| r.get(0)).map_err(store_err)?.collect::<Result<_, _>>(),
                None => stmt.query_map([], |r| r.get(0)).map_err(store_err)?.collect::<Result<_, _>>(),
            }
            .map_err(store_err)?;
            rows.iter().map(|t| decode(t)).collect()
        })
    }

    fn answer<'a>(&'a self, id: &'a str, text: &'a str, now_ms: u64) -> BoxFuture<'a, Result<Answered, HandoffError>> {
        let (id, text) = (id.to_string(), text.to_string());
        self.with(move |c| {
            // One immediate transaction: two operators answering at once
            // cannot both win.
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(store_err)?;
            let stored: Option<String> = tx
                .query_row("SELECT item FROM handoff WHERE id = ?1", params![id], |r| r.get(0))
                .optional()
                .map_err(store_err)?;
            let Some(stored) = stored else { return Ok(Answered::Missing) };
            let mut item = decode(&stored)?;
            if item.status == Status::Answered {
                return Ok(Answered::AlreadyAnswered(item));
            }
            item.status = Status::Answered;
            item.closed = text == super::CLOSE;
            item.answer = (!item.closed).then_some(text);
            item.answered_ms = Some(now_ms);
            tx.execute(
                "UPDATE handoff SET status = ?2, item = ?3 WHERE id = ?1",
                params![id, item.status.as_str(), encode(&item)?],
            )
            .map_err(store_err)?;
            tx.commit().map_err(store_err)?;
            Ok(Answered::Done(item))
        })
    }

    fn purge(&self, before_ms: u64) -> BoxFuture<'_, Result<u64, HandoffError>> {
        self.with(move |c| {
            let before = i64::try_from(before_ms).unwrap_or(i64::MAX);
            let n = c.execute("DELETE FROM handoff WHERE created_ms < ?1", params![before]).map_err(store_err)?;
            Ok(n as u64)
        })
    }

    fn open_count(&self) -> BoxFuture<'_, Result<u64, HandoffError>> {
        self.with(|c| {
            let n: i64 = c
                .query_row("SELECT COUNT(*) FROM handoff WHERE status = 'open'", [], |r| r.get(0))
                .map_err(store_err)?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn item(id: &str, created_ms: u64) -> Item {
        Item {
            id: id.into(),
            status: Status::Open,
            cascade: "support".into(),
            closed: false,
            client_key_id: Some("k1".into()),
            request_id: None,
            user: None,
            messages: json!([{"role": "user", "content": "help"}]),
            attempts: vec![super::super::StoredAttempt { model: "a/b".into(), reason: "rate_limited".into() }],
            created_ms,
            answer: None,
            answered_ms: None,
        }
    }

    /// The rules every queue backend follows.
    pub(crate) async fn conformance(q: &dyn Queue) {
        q.push(item("ho_1", 1_000)).await.unwrap();
        q.push(item("ho_2", 2_000)).await.unwrap();
        assert_eq!(q.get("ho_1").await.unwrap(), Some(item("ho_1", 1_000)));
        assert_eq!(q.get("ho_missing").await.unwrap(), None);
        assert_eq!(q.open_count().await.unwrap(), 2);
        let Answered::Done(done) = q.answer("ho_1", "Here you go", 5_000).await.unwrap() else { panic!() };
        assert_eq!(
            (done.status, done.answer.as_deref(), done.answered_ms),
            (Status::Answered, Some("Here you go"), Some(5_000))
        );
        assert!(matches!(q.answer("ho_1", "again", 6_000).await.unwrap(), Answered::AlreadyAnswered(_)));
        assert_eq!(q.answer("ho_missing", "x", 6_000).await.unwrap(), Answered::Missing);
        let ids = |v: Vec<Item>| v.into_iter().map(|i| i.id).collect::<Vec<_>>();
        assert_eq!(ids(q.list(Some(Status::Open)).await.unwrap()), ["ho_2"]);
        assert_eq!(ids(q.list(Some(Status::Answered)).await.unwrap()), ["ho_1"]);
        assert_eq!(ids(q.list(None).await.unwrap()), ["ho_1", "ho_2"]);
        assert_eq!(q.open_count().await.unwrap(), 1);
        // Retention deletes strictly older items only.
        assert_eq!(q.purge(2_000).await.unwrap(), 1);
        assert_eq!(ids(q.list(None).await.unwrap()), ["ho_2"]);
    }

    #[tokio::test]
    async fn sqlite_follows_the_rules_and_survives_reopening() {
        let dir = std::env::temp_dir().join(format!("spillway-handoff-{}", super::super::new_id()));
        let q = SqliteQueue::open(dir.clone()).await.unwrap();
        conformance(&q).await;
        drop(q);
        let again = SqliteQueue::open(dir.clone()).await.unwrap();
        assert_eq!(again.get("ho_2").await.unwrap(), Some(item("ho_2", 2_000)));
        let _ = std::fs::remove_dir_all(dir);
    }
}
