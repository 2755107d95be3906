//! Key usage kept across restarts with the memory backend: a budget must
//! not start over because the gateway did. Every local settlement marks
//! its key (and end user) touched; a background job writes the touched
//! subjects' usage of their budget period to the `usage` table of
//! `keys.sqlite3` in `state.data_dir` every [`FLUSH_EVERY`] and once more
//! at shutdown, and reads the table back once per process at start. A
//! crash loses at most the last [`FLUSH_EVERY`] of spend; the request path
//! never waits on the file. With `state.backend: redis` the counters live in
//! Redis and nothing is kept here.

use super::store::SQLITE_FILE;
use super::tally::Usage;
use super::{subject, Tenancy, MAX_LOCAL_SUBJECTS};
use crate::config::{StateBackend, StateConfig};
use crate::supervisor::BackgroundJob;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often touched usage is written.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// What is kept, and whether keeping is on.
#[derive(Debug, Default)]
pub struct Kept {
    /// The memory backend's job runs: settlements are marked.
    on: AtomicBool,
    /// The file's usage was read back (once per process: a reload starts a
    /// new job, which must not add it twice).
    restored: AtomicBool,
    /// Subjects settled since the last write.
    touched: Mutex<HashSet<String>>,
}

impl Kept {
    /// Marks the subjects of one settlement (key, and its counted user).
    pub fn touched(&self, key_id: &str, user: Option<&str>) {
        if !self.on.load(Ordering::Relaxed) {
            return;
        }
        let mut touched = self.touched.lock().unwrap_or_else(PoisonError::into_inner);
        if touched.len() < MAX_LOCAL_SUBJECTS {
            touched.insert(subject(key_id, None));
            if let Some(u) = user {
                touched.insert(subject(key_id, Some(u)));
            }
        }
    }

    fn take(&self) -> Vec<String> {
        self.touched.lock().unwrap_or_else(PoisonError::into_inner).drain().collect()
    }
}

impl Tenancy {
    /// The usage of every subject touched since the last call.
    fn touched_usage(&self) -> Vec<(String, Usage)> {
        let subjects = self.kept.take();
        if subjects.is_empty() {
            return Vec::new();
        }
        let map = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        subjects.into_iter().filter_map(|s| map.get(&s).map(|t| (s, t.kept()))).collect()
    }

    /// Adds usage kept from before a restart.
    fn restore_usage(&self, rows: Vec<(String, Usage)>) {
        let mut map = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        for (s, usage) in rows {
            map.entry(s).or_default().restore(usage);
        }
    }

    /// Writes the touched usage; on failure it is marked touched again.
    async fn write_usage(&self, state: &StateConfig) {
        let rows = self.touched_usage();
        if rows.is_empty() {
            return;
        }
        let written = match self.registry.store(state).await {
            Ok(store) => store.save_usage(rows.clone()).await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "Cannot keep the keys' usage in the state store; retrying.");
            let mut touched = self.kept.touched.lock().unwrap_or_else(PoisonError::into_inner);
            touched.extend(rows.into_iter().map(|(s, _)| s));
        }
    }
}

/// The job that reads kept usage back at start and writes it as it changes.
pub struct KeepUsage {
    pub tenancy: Arc<Tenancy>,
    pub state: StateConfig,
}

impl BackgroundJob for KeepUsage {
    fn name(&self) -> &'static str {
        "key-usage"
    }

    async fn run(self, shutdown: CancellationToken) {
        let t = &self.tenancy;
        let embedded = self.state.backend != StateBackend::Redis;
        t.kept.on.store(embedded, Ordering::Relaxed);
        if !embedded {
            return;
        }
        let file = self.state.data_dir.join(SQLITE_FILE);
        if !t.kept.restored.swap(true, Ordering::AcqRel) && file.exists() {
            let read = match t.registry.store(&self.state).await {
                Ok(store) => store.load_usage().await,
                Err(e) => Err(e),
            };
            match read {
                Ok(rows) => t.restore_usage(rows),
                Err(e) => tracing::warn!(error = %e, "Cannot read the keys' kept usage; budgets count from now."),
            }
        }
        loop {
            let stop = tokio::select! {
                () = shutdown.cancelled() => true,
                () = tokio::time::sleep(FLUSH_EVERY) => false,
            };
            t.write_usage(&self.state).await;
            if stop {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restored_usage_adds_to_the_same_period_only() {
        let mut t = super::super::tally::Tally::default();
        let kept =
            Usage { period: 7, requests: 3, input_tokens: 30, output_tokens: 20, spent_micro: 500, ..Usage::default() };
        t.restore(kept);
        assert_eq!(t.kept(), kept, "a fresh tally takes it as it was");
        t.restore(kept);
        assert_eq!(t.kept().spent_micro, 1000, "same period: added");
        t.restore(Usage { period: 6, spent_micro: 99, ..Usage::default() });
        assert_eq!(t.kept().spent_micro, 1000, "a past period is dropped");
    }
}
