//! Where discovery rounds are kept between refreshes and restarts.
//!
//! Two copies (SPEC §4, issue 5): the state store's cache (`cache_ttl`;
//! shared between instances with Redis) and a JSON file in `state.data_dir`
//! (`discovery-cache.json`), so a gateway restarted without network still
//! serves the last good cascades. The file is written to a temporary name
//! and renamed, so a crash mid-write never leaves half a cache. A cache that
//! cannot be read is ignored with a warning: discovery then starts from the
//! static models, never fails the gateway.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::round::Round;
use crate::state::StateStore;

/// The state store key.
pub const STORE_KEY: &str = "discovery:round";
/// The file name under `state.data_dir`.
pub const FILE_NAME: &str = "discovery-cache.json";
/// Bumped when [`Round`] changes incompatibly; other versions are ignored.
const VERSION: u32 = 1;

#[derive(Deserialize)]
struct Cached {
    version: u32,
    round: Round,
}

/// The cache file of a data dir.
pub fn file_path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// [`Cached`] by reference, so saving does not clone the round.
#[derive(Serialize)]
struct CachedRef<'a> {
    version: u32,
    round: &'a Round,
}

fn encode(round: &Round) -> Result<String, String> {
    serde_json::to_string(&CachedRef { version: VERSION, round }).map_err(|e| e.to_string())
}

fn decode(text: &str) -> Result<Round, String> {
    let cached: Cached = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if cached.version != VERSION {
        return Err(format!("cache version {} is not {VERSION}", cached.version));
    }
    Ok(cached.round)
}

/// Stores `round` in both places; failures are logged, not returned (the
/// round is live either way).
pub async fn save(store: &dyn StateStore, data_dir: &Path, round: &Round, ttl: Duration) {
    let text = match encode(round) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(error = %e, "Cannot encode the discovery cache.");
            return;
        }
    };
    if let Err(e) = store.cache_put(STORE_KEY, text.clone(), ttl).await {
        tracing::warn!(error = %e, "Cannot cache discovery results in the state store.");
    }
    let path = file_path(data_dir);
    let written = tokio::task::spawn_blocking(move || write_atomically(&path, text.as_bytes()).map(|()| path)).await;
    match written {
        Ok(Ok(path)) => tracing::debug!(path = %path.display(), "Discovery cache written."),
        Ok(Err(e)) => tracing::warn!(error = %e, "Cannot write the discovery cache file."),
        Err(e) => tracing::warn!(error = %e, "The discovery cache writer stopped."),
    }
}

/// The cached round: the state store's when it has one (another instance
/// may have refreshed more recently), else the file's.
pub async fn load(store: &dyn StateStore, data_dir: &Path) -> Option<Round> {
    match store.cache_get(STORE_KEY).await {
        Ok(Some(text)) => match decode(&text) {
            Ok(round) => return Some(round),
            Err(e) => tracing::warn!(error = %e, "Ignoring an unreadable discovery cache in the state store."),
        },
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "Cannot read the discovery cache from the state store."),
    }
    let path = file_path(data_dir);
    match tokio::task::spawn_blocking(move || read_file(&path)).await {
        Ok(Ok(round)) => round,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "Ignoring an unreadable discovery cache file.");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "The discovery cache reader stopped.");
            None
        }
    }
}

/// Reads the cache file; `Ok(None)` when there is none.
pub fn read_file(path: &Path) -> Result<Option<Round>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => decode(&text).map(Some).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Writes `bytes` to a temporary file next to `path`, then renames it over
/// `path` (atomic on POSIX file systems).
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("json.tmp.{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::round::ProviderListing;
    use crate::discovery::ModelMeta;
    use crate::state::memory::MemoryStore;

    fn round() -> Round {
        let mut r = Round { at_ms: 42, ..Default::default() };
        r.listings.insert(
            "groq".into(),
            ProviderListing { models: vec![ModelMeta::new("groq", "qwen3-32b")], fetched_at_ms: 41, last_error: None },
        );
        r
    }

    fn temp_dir(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("spillway-cache-{tag}-{}-{}", std::process::id(), fastrand::u64(..)))
    }

    #[tokio::test]
    async fn round_trips_through_the_file_when_the_store_is_empty() {
        let dir = temp_dir("file");
        save(&MemoryStore::new(), &dir, &round(), Duration::from_secs(60)).await;
        // A fresh store (a restart with the memory backend) has nothing.
        let back = load(&MemoryStore::new(), &dir).await;
        assert_eq!(back, Some(round()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn garbage_and_missing_files_are_ignored() {
        let dir = temp_dir("bad");
        assert_eq!(load(&MemoryStore::new(), &dir).await, None);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(file_path(&dir), "{not json").unwrap();
        assert_eq!(load(&MemoryStore::new(), &dir).await, None);
        std::fs::write(file_path(&dir), r#"{"version": 99, "round": {}}"#).unwrap();
        assert!(read_file(&file_path(&dir)).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
