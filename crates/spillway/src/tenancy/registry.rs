//! Keys made at run time: the snapshot the request path reads (no store
//! call on the request path), the store they are kept in, and the job that
//! re-reads it every half second where instances share it — so a key made
//! or deleted on one instance is known to all within a second. (A deleted
//! key is refused sooner than that: its revocation mark is read by the
//! admission script itself.)

use super::store::{KeyRecord, KeyStore};
use super::Tenancy;
use crate::config::{KeySpec, StateConfig};
use crate::supervisor::BackgroundJob;
use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often a shared store is re-read.
pub const REFRESH: Duration = Duration::from_millis(500);

/// The runtime keys as the request path sees them.
#[derive(Debug, Default)]
struct Snapshot {
    by_hash: HashMap<String, Arc<KeySpec>>,
    records: Vec<KeyRecord>,
}

/// The runtime keys and their store.
#[derive(Default)]
pub struct Registry {
    snapshot: RwLock<Arc<Snapshot>>,
    store: tokio::sync::OnceCell<KeyStore>,
}

impl Registry {
    /// The runtime key whose secret hashes to `sha256`.
    pub fn find(&self, sha256: &str) -> Option<Arc<KeySpec>> {
        self.snapshot.read().unwrap_or_else(PoisonError::into_inner).by_hash.get(sha256).cloned()
    }

    /// Whether any runtime key exists.
    pub fn any(&self) -> bool {
        !self.snapshot.read().unwrap_or_else(PoisonError::into_inner).records.is_empty()
    }

    /// Every runtime key, oldest first.
    pub fn records(&self) -> Vec<KeyRecord> {
        self.snapshot.read().unwrap_or_else(PoisonError::into_inner).records.clone()
    }

    /// The store, opened on first use.
    pub async fn store(&self, state: &StateConfig) -> Result<&KeyStore, String> {
        self.store.get_or_try_init(|| KeyStore::open(state)).await
    }

    fn publish(&self, mut records: Vec<KeyRecord>) {
        records.sort_by(|a, b| a.created_ms.cmp(&b.created_ms).then_with(|| a.id.cmp(&b.id)));
        let by_hash = records.iter().map(|r| (r.secret_sha256.clone(), Arc::new(r.spec()))).collect();
        *self.snapshot.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(Snapshot { by_hash, records });
    }

    /// Re-reads the store.
    pub async fn reload(&self, state: &StateConfig) -> Result<(), String> {
        let records = self.store(state).await?.list().await?;
        self.publish(records);
        Ok(())
    }

    /// Stores `record` (new, or with new limits) and knows it at once here.
    pub async fn put(&self, state: &StateConfig, record: KeyRecord) -> Result<(), String> {
        self.store(state).await?.put(&record).await?;
        let mut records = self.records();
        records.retain(|r| r.id != record.id);
        records.push(record);
        self.publish(records);
        Ok(())
    }

    /// Deletes key `id` from the store and from here; whether it existed.
    pub async fn remove(&self, state: &StateConfig, id: &str) -> Result<bool, String> {
        let found = self.store(state).await?.remove(id).await?;
        let mut records = self.records();
        let before = records.len();
        records.retain(|r| r.id != id);
        let here = records.len() != before;
        self.publish(records);
        Ok(found || here)
    }
}

/// Reads the runtime keys at start, and every [`REFRESH`] where the store
/// is shared.
pub struct KeySync {
    pub tenancy: Arc<Tenancy>,
    pub state: StateConfig,
}

impl BackgroundJob for KeySync {
    fn name(&self) -> &'static str {
        "key-sync"
    }

    async fn run(self, shutdown: CancellationToken) {
        let embedded = self.state.backend != crate::config::StateBackend::Redis;
        if embedded && !self.state.data_dir.join(super::store::SQLITE_FILE).exists() {
            // No key was ever made here: nothing to read, and no file is
            // made until the admin API makes a key.
            return;
        }
        let mut failing = false;
        loop {
            match self.tenancy.registry.reload(&self.state).await {
                Ok(()) => {
                    if failing {
                        tracing::info!("The key store answers again.");
                    }
                    failing = false;
                }
                Err(e) => {
                    if !failing {
                        tracing::warn!(error = %e, "Cannot read the keys made through the admin API; keeping the ones known.");
                    }
                    failing = true;
                }
            }
            let shared = self.tenancy.registry.store.get().is_none_or(KeyStore::shared);
            if !shared && !failing {
                // Only this instance writes the file: nothing more to read.
                shutdown.cancelled().await;
                return;
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(REFRESH) => {}
            }
        }
    }
}
