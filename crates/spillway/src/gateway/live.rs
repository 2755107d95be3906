//! The live gateway: the slot the server reads a gateway from, replaced
//! atomically by a reload (a new generation) or a discovery refresh (the
//! same generation with fresh plans). Requests in flight keep the `Arc`
//! they started with.

use super::build::Gateway;
use crate::supervisor::Supervisor;
use arc_swap::{ArcSwap, Guard};
use std::sync::Arc;

/// The current gateway and where its generations' jobs run.
#[derive(Debug)]
pub struct Live {
    current: ArcSwap<Gateway>,
    /// The process's supervisor: each generation's jobs run on a child of it.
    supervisor: Supervisor,
}

impl Live {
    /// Makes `gateway` live and starts its generation's jobs.
    pub fn new(gateway: Gateway, supervisor: Supervisor) -> Self {
        gateway.start_jobs(&supervisor);
        Self { current: ArcSwap::from_pointee(gateway), supervisor }
    }

    /// The current gateway, for a short look.
    pub fn load(&self) -> Guard<Arc<Gateway>> {
        self.current.load()
    }

    /// The current gateway, to hold.
    pub fn load_full(&self) -> Arc<Gateway> {
        self.current.load_full()
    }

    /// Makes `gateway` live, starting its generation's jobs unless they run
    /// already (a refresh's copy shares its generation's). The replaced
    /// generation's jobs stop once its last request finishes.
    pub fn store(&self, gateway: Arc<Gateway>) {
        gateway.start_jobs(&self.supervisor);
        self.current.store(gateway);
    }

    /// The process's supervisor (process-wide jobs start on it).
    pub fn supervisor(&self) -> &Supervisor {
        &self.supervisor
    }
}
