//! The answers `POST /v1/feedback` can rate: the most recent judged
//! answers by request id, each with the model that gave it and its
//! cascade's quality rule, bounded ([`RECENT`]). A rating feeds the model's
//! quality window like an answer (`bad` with the `feedback` signal, `good`
//! with none); each answer takes one rating, and only from the caller that
//! made the request ([`Owner`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

/// Who made a judged request: only they may rate its answer.
#[derive(Debug, Clone, Default)]
pub enum Owner {
    /// Nobody in particular: clients need no key.
    #[default]
    Anyone,
    /// A key of `server.api_keys`.
    Plain(crate::secret::Secret),
    /// A virtual key (`keys:`), by id.
    Key(String),
}

/// Judged answers kept for feedback (the oldest go first).
pub const RECENT: usize = 10_000;

/// Ids in the order they came, and what each names.
type Ring<T> = (HashMap<Arc<str>, T>, VecDeque<Arc<str>>);

/// The recent judged answers (`T`: what a rating needs of one,
/// `registry::Judged`).
#[derive(Debug)]
pub struct Recent<T> {
    inner: Mutex<Ring<T>>,
}

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Self { inner: Mutex::new((HashMap::new(), VecDeque::new())) }
    }
}

impl<T> Recent<T> {
    /// Keeps `id`'s answer (a repeated id keeps the latest).
    pub fn keep(&self, id: Arc<str>, judged: T) {
        let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let (map, order) = &mut *g;
        if map.insert(id.clone(), judged).is_none() {
            order.push_back(id);
        }
        while order.len() > RECENT {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
    }

    /// Takes `id`'s answer to rate it (once), when `may` says the caller
    /// may: an answer someone else made stays for its own caller.
    pub fn take(&self, id: &str, may: impl FnOnce(&T) -> bool) -> Option<T> {
        let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let (map, order) = &mut *g;
        if !map.get(id).is_some_and(may) {
            return None;
        }
        let judged = map.remove(id)?;
        if let Some(at) = order.iter().position(|k| &**k == id) {
            order.remove(at);
        }
        Some(judged)
    }
}
