//! Reload when the config file changes (`server.watch_config`): a
//! background job reads the file every interval and reloads
//! ([`super::reload::reload`], the same step as SIGHUP) when its content
//! differs from what was last seen.
//!
//! Content, not metadata: a Kubernetes ConfigMap update swaps a symlink
//! (`..data`) to a new directory, an editor may write a new file and rename
//! it over the old one, and `kubectl cp` keeps the mtime; the bytes differ
//! in every case, and reading a config file every few seconds costs
//! nothing. No file-notification crate: inotify does not see a symlink
//! swapped two levels up, which is the ConfigMap case.
//!
//! A rejected file is not retried until it changes again (the rejection is
//! logged and alerted once, by the reload itself).

use super::live::Live;
use crate::supervisor::BackgroundJob;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long to wait before looking at the setting again while it is off.
const OFF_RECHECK: Duration = Duration::from_secs(5);

/// The job; does nothing for a gateway not started from a file.
pub struct ReloadOnChange {
    state: Arc<Live>,
    /// The hash of the content last seen (loaded at start, or reloaded).
    seen: Option<u64>,
}

impl ReloadOnChange {
    /// Takes the file's content now as the one the running config came from.
    pub fn new(state: Arc<Live>) -> Self {
        let source = state.load().config.source.clone();
        let seen = source.filter(|p| regular(p)).and_then(|p| std::fs::read(p).ok()).map(|b| digest(&b));
        Self { state, seen }
    }
}

/// Only a regular file (behind any symlinks) is watched: reading a FIFO
/// or a device would block, and their content is read once, at start.
fn regular(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

fn digest(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// The file's content hash; `None` while it cannot be read (mid-swap, or
/// removed): nothing to do until it is back.
async fn read(path: &PathBuf) -> Option<u64> {
    if !tokio::fs::metadata(path).await.is_ok_and(|m| m.is_file()) {
        return None;
    }
    match tokio::fs::read(path).await {
        Ok(bytes) => Some(digest(&bytes)),
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "Cannot read the config file to watch it.");
            None
        }
    }
}

impl BackgroundJob for ReloadOnChange {
    fn name(&self) -> &'static str {
        "reload_on_change"
    }

    async fn run(mut self, shutdown: CancellationToken) {
        loop {
            let (path, every) = {
                let gw = self.state.load();
                (gw.config.source.clone(), gw.config.server.watch_config)
            };
            let Some(path) = path else { return };
            let wait = if every.is_zero() { OFF_RECHECK } else { every };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = shutdown.cancelled() => return,
            }
            if every.is_zero() {
                continue;
            }
            let Some(now) = read(&path).await else { continue };
            if self.seen == Some(now) {
                continue;
            }
            self.seen = Some(now);
            tracing::info!(path = %path.display(), "The config file changed: reloading.");
            // The outcome is logged and sent as an event inside.
            let _ = super::reload::reload(&self.state).await;
        }
    }
}
