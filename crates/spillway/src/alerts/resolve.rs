//! Resolved messages: an alert that opens a state — a breaker open, the
//! fallback share above its threshold, a cascade with nothing left, the
//! shared store unreachable — is followed by one message when that state
//! ends (breaker closed, share back under the threshold, the cascade
//! answers again, the store is back).
//!
//! An event opens a state ([`Event::opens`]), resolves one
//! ([`Event::resolves`]: the key of the alert it ends), or neither. The
//! dispatcher remembers the opening alerts that went out ([`Open`]). A
//! resolution of one of them first sends what that alert's digest held, so
//! the digest covers only the time the state lasted and never arrives
//! stale after it ended; then the resolved message, which is never held or
//! deduplicated (a state ends once). The digest's window goes on: a state
//! that opens again within it (one that flaps) is held and reported in the
//! window's digest, which says when it ended if it did; one still on when
//! the digest goes out is open from then, and its end is a resolved
//! message. A resolution whose opening alert went out nowhere here (another
//! instance sent it) is quiet.
//!
//! Adding a kind: an opening kind is listed in [`Event::opens`]; its
//! resolving kind names the opener's key in [`Event::resolves`], and both
//! have their words in `text.rs`.

use super::Event;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

impl Event {
    /// This alert opens a state that a later event resolves.
    pub fn opens(&self) -> bool {
        matches!(
            self,
            Self::BreakerOpened { .. }
                | Self::QualityDemoted { .. }
                | Self::FallbackShare { .. }
                | Self::CascadeDead { .. }
                | Self::RedisDegraded { .. }
        )
    }

    /// The key of the opening alert this event resolves, if it resolves one.
    pub fn resolves(&self) -> Option<String> {
        match self {
            Self::BreakerClosed { model } => {
                Some(Self::BreakerOpened { model: model.clone(), reason: String::new() }.key())
            }
            Self::QualityRestored { model } => Some(format!("quality_demoted:{model}")),
            Self::FallbackShareBack { cascade, .. } => Some(format!("fallback_share:{cascade}")),
            Self::CascadeAlive { cascade } => Some(Self::CascadeDead { cascade: cascade.clone() }.key()),
            _ => None,
        }
    }
}

/// Opening alerts that went out and are not resolved yet: key → Unix ms of
/// the first message. Lives on the bus, so a reload keeps it.
#[derive(Debug, Default)]
pub struct Open {
    keys: Mutex<HashMap<String, u64>>,
}

impl Open {
    /// Records that the opening alert `key` went out at `at_ms` (a repeat
    /// keeps the first time).
    pub fn opened(&self, key: String, at_ms: u64) {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner).entry(key).or_insert(at_ms);
    }

    /// Ends the state of `key`; when its alert had gone out, when that was.
    pub fn close(&self, key: &str) -> Option<u64> {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner).remove(key)
    }

    /// Whether the alert `key` is open.
    pub fn is_open(&self, key: &str) -> bool {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner).contains_key(key)
    }
}

/// Cascades that had nothing left to answer with, so the next answer of
/// one resolves its alert. Every answered request asks; while no cascade
/// is dead that costs one atomic load.
#[derive(Debug, Default)]
pub struct DeadCascades {
    names: Mutex<HashSet<String>>,
    count: AtomicUsize,
}

impl DeadCascades {
    /// `cascade` had nothing left; true when it was alive until now.
    pub fn died(&self, cascade: &str) -> bool {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        let new = names.insert(cascade.to_owned());
        self.count.store(names.len(), Ordering::Release);
        new
    }

    /// `cascade` answered; true when it had been dead.
    pub fn answered(&self, cascade: &str) -> bool {
        if self.count.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        let was_dead = names.remove(cascade);
        self.count.store(names.len(), Ordering::Release);
        was_dead
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_resolution_names_its_opening_alert() {
        let pairs = [
            (
                Event::BreakerOpened { model: "p/m".into(), reason: "x".into() },
                Event::BreakerClosed { model: "p/m".into() },
            ),
            (
                Event::FallbackShare { cascade: "c".into(), share: 0.5, since_ms: 0, at_ms: 1, models: Vec::new() },
                Event::FallbackShareBack { cascade: "c".into(), share: 0.1, above: 0.2, since_ms: 0 },
            ),
            (Event::CascadeDead { cascade: "c".into() }, Event::CascadeAlive { cascade: "c".into() }),
        ];
        for (opener, resolution) in pairs {
            assert!(opener.opens() && !resolution.opens(), "{opener:?}");
            assert_eq!(resolution.resolves(), Some(opener.key()), "{resolution:?}");
        }
        assert_eq!(Event::KeyRejected { provider: "p".into() }.resolves(), None);
    }

    #[test]
    fn a_dead_cascade_is_answered_once() {
        let dead = DeadCascades::default();
        assert!(!dead.answered("chat"), "alive: nothing to resolve");
        assert!(dead.died("chat") && !dead.died("chat"));
        assert!(dead.answered("chat"));
        assert!(!dead.answered("chat"));
        let open = Open::default();
        open.opened("k".into(), 5);
        open.opened("k".into(), 9);
        assert!(open.is_open("k"));
        assert_eq!((open.close("k"), open.close("k")), (Some(5), None));
    }
}
