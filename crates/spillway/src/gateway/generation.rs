//! What a config generation owns: its background jobs, under a guard.
//!
//! The guard is held by the generation's gateways (through an `Arc`), the
//! jobs only hold the narrow handles they use — never a gateway — so when
//! a reload swaps in a new generation and the last request on the old one
//! finishes, the old guard drops and every old job stops: load monitors
//! stop polling, old alert sinks stop sending.

use crate::supervisor::Supervisor;
use std::sync::OnceLock;
use tokio_util::sync::DropGuard;

/// One generation's jobs; see the module docs.
#[derive(Debug, Default)]
pub struct Generation {
    jobs: OnceLock<(Supervisor, DropGuard)>,
}

impl Generation {
    /// The supervisor to start this generation's jobs on — a child of
    /// `parent`, stopped when this generation drops — the first time;
    /// `None` once started.
    pub fn start(&self, parent: &Supervisor) -> Option<&Supervisor> {
        let child = parent.child();
        let guard = child.token().clone().drop_guard();
        self.jobs.set((child, guard)).ok()?;
        self.jobs.get().map(|(s, _)| s)
    }

    /// Whether this generation's jobs run (started and not stopped).
    pub fn running(&self) -> bool {
        self.jobs.get().is_some_and(|(s, _)| !s.token().is_cancelled())
    }
}
