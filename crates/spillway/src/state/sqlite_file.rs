//! One embedded SQLite file for the stores a request may wait on (the
//! handoff queue, stored responses): opened with a WAL journal and a busy
//! timeout, each call run on tokio's blocking pool (SQLite calls block, and
//! must never run on a runtime worker) with the one connection behind a
//! std mutex — locked only inside those blocking closures.

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use rusqlite::Connection;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

/// An open SQLite file. Clones share the connection.
#[derive(Clone)]
pub struct SqliteFile {
    conn: Arc<Mutex<Connection>>,
}

impl SqliteFile {
    /// Opens (creating) `dir/file` with `synchronous` (`FULL`, `NORMAL`)
    /// and runs `schema`. Blocking: call it on the blocking pool.
    pub fn open_blocking(dir: &Path, file: &str, synchronous: &str, schema: &str) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let path = dir.join(file);
        let conn = Connection::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(|e| e.to_string())?;
        conn.pragma_update(None, "synchronous", synchronous).map_err(|e| e.to_string())?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(|e| e.to_string())?;
        conn.execute_batch(schema).map_err(|e| e.to_string())?;
        Ok(Self { conn: Arc::new(Mutex::new(conn)) })
    }

    /// Runs `f` with the connection on the blocking pool; `lost` makes the
    /// caller's error of a blocking task that never finished.
    pub fn with<T: Send + 'static, E: Send + 'static>(
        &self,
        lost: fn(String) -> E,
        f: impl FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, E>> {
        let conn = self.conn.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let mut guard = conn.lock().unwrap_or_else(PoisonError::into_inner);
                f(&mut guard)
            })
            .await
            .map_err(|e| lost(e.to_string()))?
        }
        .boxed()
    }
}
