//! What the registry tells others: [`LocalChange`]s for the state store to
//! share with other instances (through the [`Observer`]) and
//! [`HealthEvent`]s an operator should hear about.

use super::DeadReason;
use crate::health::breaker::TripReason;

/// A change this instance observed, for the state store to share with the
/// other instances (see `state::sync`). Keys: a model ref, `provider:NAME`
/// (the whole provider) or `provider:NAME:free` (its free tier).
#[derive(Debug, Clone, PartialEq)]
pub enum LocalChange {
    /// A dead mark was set.
    Dead {
        /// Key.
        key: String,
        /// Unix ms.
        until_ms: u64,
        /// Why.
        reason: DeadReason,
    },
    /// An upstream outcome for the shared breaker window.
    Outcome {
        /// Model ref.
        key: String,
        /// An upstream failure (else an answer).
        failed: bool,
    },
    /// A TTFT sample.
    Ttft {
        /// Model ref.
        key: String,
        /// Milliseconds.
        ms: f64,
    },
    /// An operator revived a model.
    Revived {
        /// Model ref.
        key: String,
    },
    /// A half-open probe succeeded: the breaker closed (other instances
    /// close the trip they share instead of waiting out `open_for`).
    BreakerClosed {
        /// Model ref.
        key: String,
    },
    /// The model was demoted for its answers' quality (or demoted again).
    Demoted {
        /// Model ref.
        key: String,
        /// Unix ms.
        until_ms: u64,
        /// The signal seen most.
        reason: crate::quality::Signal,
    },
    /// The model's probes passed: its demotion ended.
    Restored {
        /// Model ref.
        key: String,
    },
}

/// Where local changes go when a shared state store is configured; unset
/// with `backend: memory` (then nothing is sent and nothing is allocated).
#[derive(Debug, Default)]
pub struct Observer(pub(super) std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<LocalChange>>);

impl Observer {
    pub(super) fn emit(&self, change: impl FnOnce() -> LocalChange) {
        if let Some(tx) = self.0.get() {
            let _ = tx.send(change());
        }
    }
}

/// Something an operator should hear about.
#[derive(Debug, Clone, PartialEq)]
pub enum HealthEvent {
    /// A breaker opened.
    BreakerOpened {
        /// Model ref.
        model: String,
        /// Which rule.
        reason: TripReason,
    },
    /// A breaker closed again.
    BreakerClosed {
        /// Model ref.
        model: String,
    },
    /// A model was demoted for the quality of its answers (again, after
    /// failed probes).
    QualityDemoted {
        /// Model ref.
        model: String,
        /// The signal seen most.
        reason: crate::quality::Signal,
        /// Unix ms.
        until_ms: u64,
    },
    /// A demoted model's probes passed.
    QualityRestored {
        /// Model ref.
        model: String,
    },
    /// A provider's key was rejected (401).
    KeyRejected {
        /// Provider name.
        provider: String,
    },
}
