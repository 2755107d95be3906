//! Keys made at run time (`POST /admin/keys`), kept in the state store so
//! they survive restarts: `keys.sqlite3` in `state.data_dir` with the
//! memory backend, the hash `{prefix}tenancy:keys` (field: id, value: the
//! record as JSON) with Redis, where every instance reads them. Only the
//! secret's SHA-256 is stored. With the memory backend the same file keeps
//! each key's (and end user's) usage of its budget period (`usage`, see
//! [`super::kept`]); Redis keeps its counters itself.

use crate::config::{BudgetPeriod, KeyBudget, KeySpec, Limits, StateBackend, StateConfig, StoreDown};
use crate::state::lazy_redis::LazyRedis;
use crate::state::sqlite_file::SqliteFile;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// A budget as stored and as the admin API takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetRecord {
    /// USD per period.
    pub usd: f64,
    /// `day`, `month` (default) or `total`.
    #[serde(default = "month")]
    pub per: String,
}

fn month() -> String {
    "month".to_string()
}

/// Per-user limits as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpm: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetRecord>,
}

/// A runtime key as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub id: String,
    pub name: String,
    pub secret_sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cascades: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpm: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallel: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_user: Option<UserRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    #[serde(default)]
    pub metadata: IndexMap<String, String>,
    #[serde(default)]
    pub on_store_down: Option<String>,
    pub created_ms: u64,
}

fn budget(b: Option<&BudgetRecord>) -> Option<KeyBudget> {
    b.map(|b| KeyBudget { usd: b.usd, per: BudgetPeriod::parse(&b.per).unwrap_or(BudgetPeriod::Month) })
}

impl KeyRecord {
    /// The key the request path uses.
    pub fn spec(&self) -> KeySpec {
        let user = self.per_user.clone().unwrap_or_default();
        KeySpec {
            id: self.id.clone(),
            name: self.name.clone(),
            secret_sha256: self.secret_sha256.clone(),
            cascades: self.cascades.clone(),
            limits: Limits {
                rpm: self.rpm,
                tpm: self.tpm,
                max_parallel: self.max_parallel,
                budget: budget(self.budget.as_ref()),
            },
            per_user: Limits { rpm: user.rpm, tpm: user.tpm, max_parallel: None, budget: budget(user.budget.as_ref()) },
            expires_at_ms: self.expires_at_ms,
            metadata: self.metadata.clone(),
            on_store_down: if self.on_store_down.as_deref() == Some("deny") {
                StoreDown::Deny
            } else {
                StoreDown::Allow
            },
        }
    }
}

/// Where runtime keys are kept.
#[derive(Clone)]
pub enum KeyStore {
    /// `keys.sqlite3` in `data_dir`.
    Sqlite(SqliteFile),
    /// The hash `{prefix}tenancy:keys`.
    Redis { redis: LazyRedis, hash: String },
}

/// The embedded store's file in `data_dir`.
pub const SQLITE_FILE: &str = "keys.sqlite3";

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS keys (id TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS usage (subject TEXT PRIMARY KEY, period INTEGER NOT NULL, requests INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, spent_micro INTEGER NOT NULL);";

/// SQLite integers are signed: counts past `i64::MAX` are kept as that.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl KeyStore {
    /// Opens the store `state` names (SQLite is opened here; Redis on first use).
    pub async fn open(state: &StateConfig) -> Result<Self, String> {
        match (state.backend, &state.redis_url) {
            (StateBackend::Redis, Some(url)) => {
                let redis = LazyRedis::new(url.expose())?;
                let hash = format!("{}tenancy:keys", redis.key_prefix(&state.key_prefix));
                Ok(Self::Redis { redis, hash })
            }
            _ => {
                let dir = state.data_dir.clone();
                tokio::task::spawn_blocking(move || SqliteFile::open_blocking(&dir, SQLITE_FILE, "FULL", SCHEMA))
                    .await
                    .map_err(|e| e.to_string())?
                    .map(Self::Sqlite)
            }
        }
    }

    /// Whether other instances share it (so it must be re-read).
    pub fn shared(&self) -> bool {
        matches!(self, Self::Redis { .. })
    }

    /// Every stored key.
    pub fn list(&self) -> BoxFuture<'static, Result<Vec<KeyRecord>, String>> {
        let decode = |texts: Vec<String>| -> Vec<KeyRecord> {
            texts.iter().filter_map(|t| serde_json::from_str(t).ok()).collect()
        };
        match self.clone() {
            Self::Sqlite(db) => db
                .with(
                    |e| e,
                    move |c| {
                        let mut stmt = c.prepare("SELECT record FROM keys").map_err(|e| e.to_string())?;
                        let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(|e| e.to_string())?;
                        Ok(decode(rows.filter_map(Result::ok).collect()))
                    },
                )
                .boxed(),
            Self::Redis { redis, hash } => async move {
                let texts: Vec<String> = redis
                    .call(|mut c| async move { redis::cmd("HVALS").arg(&hash).query_async(&mut c).await }.boxed())
                    .await?;
                Ok(decode(texts))
            }
            .boxed(),
        }
    }

    /// Writes `key` (a new one, or new limits).
    pub fn put(&self, key: &KeyRecord) -> BoxFuture<'static, Result<(), String>> {
        let (id, text) = (key.id.clone(), serde_json::to_string(key).unwrap_or_default());
        match self.clone() {
            Self::Sqlite(db) => db
                .with(
                    |e| e,
                    move |c| {
                        c.execute(
                            "INSERT OR REPLACE INTO keys (id, record) VALUES (?1, ?2)",
                            rusqlite::params![id, text],
                        )
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                    },
                )
                .boxed(),
            Self::Redis { redis, hash } => async move {
                redis
                    .call(|mut c| {
                        async move { redis::cmd("HSET").arg(&hash).arg(&id).arg(&text).query_async::<()>(&mut c).await }
                            .boxed()
                    })
                    .await
            }
            .boxed(),
        }
    }

    /// Writes the usage of `rows` (subject, usage); nothing with Redis.
    pub fn save_usage(&self, rows: Vec<(String, super::tally::Usage)>) -> BoxFuture<'static, Result<(), String>> {
        let Self::Sqlite(db) = self.clone() else { return async { Ok(()) }.boxed() };
        db.with(
            |e| e,
            move |c| {
                let tx = c.transaction().map_err(|e| e.to_string())?;
                for (subject, u) in &rows {
                    tx.execute(
                        "INSERT OR REPLACE INTO usage (subject, period, requests, input_tokens, output_tokens, spent_micro) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        rusqlite::params![
                            subject,
                            int(u.period),
                            int(u.requests),
                            int(u.input_tokens),
                            int(u.output_tokens),
                            int(u.spent_micro)
                        ],
                    )
                    .map_err(|e| e.to_string())?;
                }
                tx.commit().map_err(|e| e.to_string())
            },
        )
        .boxed()
    }

    /// Every kept usage (subject, usage); none with Redis.
    pub fn load_usage(&self) -> BoxFuture<'static, Result<Vec<(String, super::tally::Usage)>, String>> {
        let Self::Sqlite(db) = self.clone() else { return async { Ok(Vec::new()) }.boxed() };
        db.with(
            |e| e,
            move |c| {
                let mut stmt = c
                    .prepare("SELECT subject, period, requests, input_tokens, output_tokens, spent_micro FROM usage")
                    .map_err(|e| e.to_string())?;
                let n = |r: &rusqlite::Row<'_>, i: usize| r.get::<_, i64>(i).map(|v| u64::try_from(v).unwrap_or(0));
                let rows = stmt
                    .query_map([], |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            super::tally::Usage {
                                period: n(r, 1)?,
                                requests: n(r, 2)?,
                                input_tokens: n(r, 3)?,
                                output_tokens: n(r, 4)?,
                                spent_micro: n(r, 5)?,
                                ..Default::default()
                            },
                        ))
                    })
                    .map_err(|e| e.to_string())?;
                Ok(rows.filter_map(Result::ok).collect())
            },
        )
        .boxed()
    }

    /// Deletes key `id`; whether it was there.
    pub fn remove(&self, id: &str) -> BoxFuture<'static, Result<bool, String>> {
        let id = id.to_string();
        match self.clone() {
            Self::Sqlite(db) => db
                .with(
                    |e| e,
                    move |c| {
                        let found = c
                            .execute("DELETE FROM keys WHERE id = ?1", rusqlite::params![id])
                            .map(|n| n > 0)
                            .map_err(|e| e.to_string())?;
                        // Its kept usage, and its users' (`u:{id}:…`).
                        let users = format!("u:{id}:");
                        c.execute(
                            "DELETE FROM usage WHERE subject = ?1 OR substr(subject, 1, ?2) = ?3",
                            rusqlite::params![format!("k:{id}"), int(users.len() as u64), users],
                        )
                        .map_err(|e| e.to_string())?;
                        Ok(found)
                    },
                )
                .boxed(),
            Self::Redis { redis, hash } => async move {
                let n: i64 = redis
                    .call(|mut c| {
                        async move { redis::cmd("HDEL").arg(&hash).arg(&id).query_async(&mut c).await }.boxed()
                    })
                    .await?;
                Ok(n > 0)
            }
            .boxed(),
        }
    }
}
