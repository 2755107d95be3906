//! The gate pass: what an admitted attempt holds while it runs.

use crate::health::ModelHealth;
use crate::providers::InFlight;
use std::sync::Arc;

/// What a target holds while its attempt runs: a bulkhead slot and, for a
/// half-open breaker, the probe. Dropping an unsettled pass releases the
/// probe, so an abandoned attempt (client gone, hedge lost) never wedges a
/// breaker in half-open.
#[derive(Debug)]
pub struct Pass {
    _slot: InFlight,
    probe: Option<Arc<ModelHealth>>,
}

impl Pass {
    /// A pass holding `slot`, and the probe of `probe` when the breaker
    /// admitted this attempt as its half-open probe.
    pub fn new(slot: InFlight, probe: Option<Arc<ModelHealth>>) -> Self {
        Self { _slot: slot, probe }
    }

    /// The attempt reached a verdict the breaker has recorded.
    pub fn settle(&mut self) {
        self.probe = None;
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        if let Some(h) = self.probe.take() {
            h.release_probe();
        }
    }
}
