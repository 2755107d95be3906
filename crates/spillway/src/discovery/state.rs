//! What discovery keeps between config generations: the latest [`Round`],
//! the events it raises, and the lock that orders its updates with reloads.
//!
//! It lives in [`crate::gateway::Shared`], so it outlives every reload.
//! `Gateway::build` reads [`DiscoveryState::current`] to turn discovered
//! cascades into plans; the request path never touches it.

use std::sync::Arc;

use arc_swap::ArcSwap;
use serde::Serialize;
use tokio::sync::{broadcast, Notify};

use super::diff::CascadeDiff;
use super::round::Round;
use crate::state::memory::MemoryStore;
use crate::state::StateStore;

/// Something an operator should hear about; the alert bus subscribes with
/// [`DiscoveryState::subscribe`]. Each is also logged where it happens.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DiscoveryEvent {
    /// A cascade's models changed; `text` is the SPEC §4 wording
    /// (`extraction: +groq/qwen3-235b, -groq/llama-guard-4 (removed)`).
    CascadeChanged {
        /// The structured diff.
        diff: CascadeDiff,
        /// Its one-line rendering.
        text: String,
    },
    /// Every cascade a refresh changed, once per refresh (after the
    /// per-cascade [`DiscoveryEvent::CascadeChanged`] events): what the
    /// alert sends, as one message.
    RoundChanged {
        /// The diffs, in config order.
        diffs: Vec<CascadeDiff>,
    },
    /// A preferred model was left out for an unknown price or context;
    /// raised once per cascade and model (again only after it was back in).
    PreferredLeftOut {
        /// The cascade.
        cascade: String,
        /// The model ref.
        model: String,
        /// The filter it failed.
        why: super::build::Rejection,
    },
    /// Fewer than 2 models of a discovered cascade are alive; static models
    /// were added behind them so it is never empty.
    TooFewModels {
        /// The cascade.
        cascade: String,
        /// Built models that are alive now.
        alive: usize,
        /// The refs the cascade runs with now.
        models: Vec<String>,
    },
    /// A provider's listing could not be fetched or read; its last good
    /// listing is kept.
    ListingFailed {
        /// The provider.
        provider: String,
        /// Why (secret-free).
        error: String,
    },
    /// A new config is live.
    ConfigReloaded {
        /// The file it came from.
        path: String,
    },
    /// A reloaded config was invalid and the old one stays.
    ConfigRejected {
        /// Every error, each with its YAML path.
        errors: Vec<String>,
    },
}

/// Discovery's state shared by every config generation.
pub struct DiscoveryState {
    current: ArcSwap<Round>,
    events: broadcast::Sender<DiscoveryEvent>,
    /// This instance's cache, used while no shared store is configured
    /// (see [`DiscoveryState::cache_store`]).
    pub(crate) store: Arc<dyn StateStore>,
    /// Held while a round or a reload is applied (a new round stored and the
    /// gateway rebuilt), so a refresh never publishes cascades built for a
    /// config a concurrent reload just replaced. Never held across a fetch.
    pub(crate) apply: tokio::sync::Mutex<()>,
    /// Wakes the refresh job early (a reload added providers).
    pub(crate) wake: Notify,
}

impl std::fmt::Debug for DiscoveryState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let round = self.current.load();
        f.debug_struct("DiscoveryState")
            .field("at_ms", &round.at_ms)
            .field("cascades", &round.cascades.len())
            .field("store", &self.store.backend())
            .finish_non_exhaustive()
    }
}

impl Default for DiscoveryState {
    fn default() -> Self {
        Self::new(Arc::new(MemoryStore::new()))
    }
}

impl DiscoveryState {
    /// Empty, caching in `store`.
    pub fn new(store: Arc<dyn StateStore>) -> Self {
        let (events, _) = broadcast::channel(64);
        Self {
            current: ArcSwap::from_pointee(Round::default()),
            events,
            store,
            apply: tokio::sync::Mutex::new(()),
            wake: Notify::new(),
        }
    }

    /// Where rounds are cached (SPEC §4: "cached in the state store"): the
    /// shared store once `state` holds one (`backend: redis`), so every
    /// instance restores the last good cascades any of them found; else
    /// this state's own memory store. Read at each use: the shared store is
    /// set after the gateway was built.
    pub(crate) fn cache_store(&self, state: &crate::state::StateStatus) -> Arc<dyn StateStore> {
        state.store().unwrap_or_else(|| self.store.clone())
    }

    /// The latest round (an empty one before the first).
    pub fn current(&self) -> Arc<Round> {
        self.current.load_full()
    }

    /// Publishes a round. Callers hold `apply`.
    pub(crate) fn publish(&self, round: Round) {
        self.current.store(Arc::new(round));
    }

    /// Operator events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<DiscoveryEvent> {
        self.events.subscribe()
    }

    /// Sends an event (no subscriber is fine: it was logged already).
    pub(crate) fn emit(&self, event: DiscoveryEvent) {
        let _ = self.events.send(event);
    }

    /// Asks the refresh job to run a round now.
    pub fn request_refresh(&self) {
        self.wake.notify_one();
    }
}
