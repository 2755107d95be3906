//! Stored responses in the embedded store: `responses.sqlite3` in
//! `state.data_dir`, one table of responses and one of their items by id.
//!
//! WAL journal with `synchronous = NORMAL`: a response lost to a power cut
//! costs a client one conversation's context, not an answer it was
//! promised, so the per-commit fsync of the handoff queue is not paid
//! here. Calls run on tokio's blocking pool; one connection behind a mutex.

use super::{Limits, Owned, Record, Shelf, StoreError};
use crate::state::sqlite_file::SqliteFile;
use futures_util::future::BoxFuture;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// After this many writes, a write also trims to `max_stored` (the hourly
/// job does the rest), so a burst cannot grow the file far past it.
const TRIM_EVERY: u64 = 256;

/// The SQLite-backed store.
#[derive(Clone)]
pub struct SqliteShelf {
    /// The file, on the blocking pool.
    db: SqliteFile,
    writes: Arc<AtomicU64>,
}

fn store_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Store(e.to_string())
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_created ON responses (created_ms);
CREATE TABLE IF NOT EXISTS response_items (
    id TEXT PRIMARY KEY,
    response_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    item TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS response_items_response ON response_items (response_id);
";

impl SqliteShelf {
    /// Opens (creating) `dir/responses.sqlite3`.
    pub async fn open(dir: PathBuf) -> Result<Self, StoreError> {
        let db =
            tokio::task::spawn_blocking(move || SqliteFile::open_blocking(&dir, "responses.sqlite3", "NORMAL", SCHEMA))
                .await
                .map_err(store_err)?
                .map_err(StoreError::Store)?;
        Ok(Self { db, writes: Arc::default() })
    }

    /// Runs `f` with the connection on the blocking pool.
    fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, StoreError>> {
        self.db.with(StoreError::Store, f)
    }
}

/// Deletes responses older than `before_ms` and past the newest `max`,
/// with their items; how many responses went.
fn trim(c: &mut Connection, before_ms: u64, max: u64) -> Result<u64, StoreError> {
    let tx = c.transaction().map_err(store_err)?;
    let before = i64::try_from(before_ms).unwrap_or(i64::MAX);
    let mut n = tx.execute("DELETE FROM responses WHERE created_ms < ?1", params![before]).map_err(store_err)?;
    n += tx
        .execute(
            "DELETE FROM responses WHERE id IN (SELECT id FROM responses ORDER BY created_ms DESC LIMIT -1 OFFSET ?1)",
            params![i64::try_from(max).unwrap_or(i64::MAX)],
        )
        .map_err(store_err)?;
    if n > 0 {
        tx.execute("DELETE FROM response_items WHERE response_id NOT IN (SELECT id FROM responses)", [])
            .map_err(store_err)?;
    }
    tx.commit().map_err(store_err)?;
    Ok(n as u64)
}

impl Shelf for SqliteShelf {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    fn put(&self, record: Record, limits: Limits) -> BoxFuture<'_, Result<(), StoreError>> {
        let trim_now = self.writes.fetch_add(1, Ordering::Relaxed) % TRIM_EVERY == TRIM_EVERY - 1;
        self.with(move |c| {
            let text = serde_json::to_string(&record).map_err(store_err)?;
            let tx = c.transaction().map_err(store_err)?;
            tx.execute(
                "INSERT OR REPLACE INTO responses (id, owner, created_ms, record) VALUES (?1, ?2, ?3, ?4)",
                params![record.id, record.owner, i64::try_from(record.created_ms).unwrap_or(i64::MAX), text],
            )
            .map_err(store_err)?;
            for (id, item) in record.items() {
                tx.execute(
                    "INSERT OR REPLACE INTO response_items (id, response_id, owner, item) VALUES (?1, ?2, ?3, ?4)",
                    params![id, record.id, record.owner, item.to_string()],
                )
                .map_err(store_err)?;
            }
            tx.commit().map_err(store_err)?;
            if trim_now {
                trim(c, record.created_ms.saturating_sub(limits.retention_ms), limits.max_stored)?;
            }
            Ok(())
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        let id = id.to_string();
        self.with(move |c| {
            let text: Option<String> = c
                .query_row("SELECT record FROM responses WHERE id = ?1", params![id], |r| r.get(0))
                .optional()
                .map_err(store_err)?;
            text.map(|t| {
                serde_json::from_str(&t).map_err(|e| store_err(format!("a stored response is unreadable: {e}")))
            })
            .transpose()
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        let id = id.to_string();
        self.with(move |c| {
            let tx = c.transaction().map_err(store_err)?;
            let n = tx.execute("DELETE FROM responses WHERE id = ?1", params![id]).map_err(store_err)?;
            tx.execute("DELETE FROM response_items WHERE response_id = ?1", params![id]).map_err(store_err)?;
            tx.commit().map_err(store_err)?;
            Ok(n > 0)
        })
    }

    fn items<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<Owned, StoreError>> {
        let ids = ids.to_vec();
        self.with(move |c| {
            let mut stmt =
                c.prepare_cached("SELECT owner, item FROM response_items WHERE id = ?1").map_err(store_err)?;
            let mut out = HashMap::new();
            for id in ids {
                let row: Option<(String, String)> =
                    stmt.query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?))).optional().map_err(store_err)?;
                if let Some((owner, text)) = row {
                    let item = serde_json::from_str(&text).map_err(store_err)?;
                    out.insert(id, (owner, item));
                }
            }
            Ok(out)
        })
    }

    fn purge(&self, limits: Limits, now_ms: u64) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.with(move |c| trim(c, now_ms.saturating_sub(limits.retention_ms), limits.max_stored))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sqlite_follows_the_rules_and_keeps_across_opens() {
        let dir = std::env::temp_dir().join(format!("spillway-stored-{}-{}", std::process::id(), fastrand::u64(..)));
        let shelf = SqliteShelf::open(dir.clone()).await.unwrap();
        super::super::tests::conformance(&shelf).await;
        let keep = Limits { retention_ms: u64::MAX, max_stored: 10 };
        shelf.put(super::super::tests::record("resp_x", "k", 5, None), keep).await.unwrap();
        drop(shelf);
        let again = SqliteShelf::open(dir.clone()).await.unwrap();
        assert_eq!(again.get("resp_x").await.unwrap().map(|r| r.created_ms), Some(5));
        let _ = std::fs::remove_dir_all(dir);
    }
}
