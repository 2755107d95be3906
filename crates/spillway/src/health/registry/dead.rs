//! Dead marks: why a model or provider is skipped ([`DeadReason`]), the
//! mark itself ([`DeadMark`]) and the slot that holds it, an atomic deadline
//! the request path checks with one load ([`DeadSlot`]).

use super::lock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Why a model or provider is dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadReason {
    /// 429.
    RateLimited,
    /// A successful answer said the quota is used up (remaining 0).
    QuotaUsedUp,
    /// Billing / quota exhausted.
    QuotaExhausted,
    /// 403.
    Forbidden,
    /// 404 or decommissioned.
    NotFound,
    /// 2xx without content.
    Empty,
    /// 401: the provider's key was rejected.
    KeyRejected,
}

impl DeadReason {
    /// A short label for `/admin/state` and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::QuotaUsedUp => "quota_used_up",
            Self::QuotaExhausted => "quota_exhausted",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::Empty => "empty",
            Self::KeyRejected => "key_rejected",
        }
    }

    /// Reads a label back (from the shared state store).
    pub fn parse(label: &str) -> Option<Self> {
        [
            Self::RateLimited,
            Self::QuotaUsedUp,
            Self::QuotaExhausted,
            Self::Forbidden,
            Self::NotFound,
            Self::Empty,
            Self::KeyRejected,
        ]
        .into_iter()
        .find(|r| r.as_str() == label)
    }
}

/// A dead mark: until when and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadMark {
    /// Unix milliseconds.
    pub until_ms: u64,
    /// Why.
    pub reason: DeadReason,
}

/// A dead-mark slot: the deadline as an atomic for the fast check, the
/// reason beside it.
#[derive(Debug, Default)]
pub struct DeadSlot {
    until_ms: AtomicU64,
    reason: Mutex<Option<DeadReason>>,
}

impl DeadSlot {
    /// The live mark, if any.
    pub fn get(&self, now: u64) -> Option<DeadMark> {
        let until_ms = self.until_ms.load(Ordering::Acquire);
        if until_ms <= now {
            return None;
        }
        let reason = (*lock(&self.reason))?;
        Some(DeadMark { until_ms, reason })
    }

    /// Dead right now (one atomic load).
    pub fn is_dead(&self, now: u64) -> bool {
        self.until_ms.load(Ordering::Acquire) > now
    }

    /// Marks dead until `until_ms`; a later deadline extends an earlier one,
    /// an earlier one never shortens it. Returns the effective deadline.
    pub fn mark(&self, until_ms: u64, reason: DeadReason) -> u64 {
        let mut r = lock(&self.reason);
        let prev = self.until_ms.fetch_max(until_ms, Ordering::AcqRel);
        if until_ms >= prev {
            *r = Some(reason);
        }
        prev.max(until_ms)
    }

    /// Clears the mark.
    pub fn clear(&self) {
        let mut r = lock(&self.reason);
        self.until_ms.store(0, Ordering::Release);
        *r = None;
    }
}
