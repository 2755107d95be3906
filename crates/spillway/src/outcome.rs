//! The shared vocabulary of a request's life, at the bottom of the
//! layering: why an attempt failed (SPEC §6's outcome table as a type),
//! where in a cascade an answer came from, and their bounded labels. Wire
//! types, adapters, health, metrics and the runner all speak it; it imports
//! nothing of the crate.
//!
//! Adapters classify by status, error code and body fields — never by
//! matching whole messages — into a [`Failure`]; the runner decides from it
//! alone what happens next (next model, dead mark, breaker failure, or the
//! client's own error returned as is).

use bytes::Bytes;
use std::time::Duration;

/// Where in the cascade an answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// A fixed-chain model or a preferred one.
    Preferred,
    /// A model discovery added.
    Discovered,
    /// The cascade's `last_resort`.
    LastResort,
    /// Queued for a person.
    Handoff,
}

/// Every tier label, indexed by [`Tier::index`].
pub const TIERS: [&str; 4] = ["preferred", "discovered", "last_resort", "handoff"];

impl Tier {
    /// Position in [`TIERS`].
    pub fn index(self) -> usize {
        match self {
            Self::Preferred => 0,
            Self::Discovered => 1,
            Self::LastResort => 2,
            Self::Handoff => 3,
        }
    }

    /// The label (`x-spillway-tier`, metrics).
    pub fn as_str(self) -> &'static str {
        TIERS[self.index()]
    }
}

/// Why an attempt did not produce an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// 429: dead until the reset the upstream named, else `dead_ttl`.
    RateLimited {
        /// From `Retry-After` or the rate-limit reset headers.
        retry_after: Option<Duration>,
    },
    /// Billing or quota exhausted: dead for long.
    QuotaExhausted,
    /// 403: dead mark.
    Forbidden,
    /// 404 or decommissioned: dead mark.
    NotFound,
    /// 401: the provider's key is wrong; the whole provider is dead.
    AuthRejected,
    /// 2xx without content or tool calls: dead mark.
    Empty,
    /// The prompt does not fit: the next model with a larger context.
    ContextLength,
    /// The model cannot serve this request (tools, a parameter): next model.
    CapabilityMismatch,
    /// The upstream filtered the content: next model.
    ContentFilter,
    /// Any other 400/422: the client's request is wrong; returned as is.
    InvalidRequest {
        /// Upstream status.
        status: u16,
        /// Upstream body when it is an OpenAI-shaped error.
        body: Option<Bytes>,
    },
    /// 5xx or an upstream error event: breaker failure.
    Upstream {
        /// The status, when there was one.
        status: Option<u16>,
    },
    /// A deadline ran out: breaker failure.
    Timeout,
    /// Connecting failed or was reset: retried, then a breaker failure.
    ConnectError,
    /// Not JSON, truncated, a stream without a proper end: breaker failure.
    BrokenBody,
    /// The answer failed normalization or validation (SPEC §7): next model,
    /// not a breaker failure.
    InvalidOutput,
    /// Skipped: the model has a dead mark.
    SkippedDead,
    /// Skipped: its breaker is open.
    SkippedOpen,
    /// Skipped: its provider is at `max_in_flight`.
    Saturated,
    /// Skipped: its provider is in its last load profile with `skip_when_lazy`.
    SkippedLazy,
    /// Skipped: its known context cannot hold the prompt.
    SkippedContext,
}

/// Every value of the `result` label of `spillway_attempts_total` (SPEC
/// §10's list), in the order [`Failure::result_index`] and [`OK_RESULT`] use.
pub const RESULT_LABELS: [&str; 12] = [
    "ok",
    "rate_limited",
    "forbidden",
    "not_found",
    "empty",
    "invalid_output",
    "timeout",
    "upstream_error",
    "connect_error",
    "skipped_dead",
    "skipped_open",
    "saturated",
];

/// Index of `ok` in [`RESULT_LABELS`].
pub const OK_RESULT: usize = 0;

/// Every failure reason, finer than [`RESULT_LABELS`]: the `reason` label of
/// `spillway_attempt_failures_total`, the attempt log and error texts, in
/// the order [`Failure::reason_index`] uses.
pub const REASONS: [&str; 20] = [
    "rate_limited",
    "quota_exhausted",
    "forbidden",
    "not_found",
    "unauthorized",
    "empty",
    "context_length",
    "unsupported",
    "content_filter",
    "client_error",
    "upstream_error",
    "timeout",
    "connect_error",
    "broken_body",
    "invalid_output",
    "skipped_dead",
    "skipped_open",
    "saturated",
    "skipped_lazy",
    "skipped_context",
];

impl Failure {
    /// Position of this failure's reason in [`REASONS`].
    pub fn reason_index(&self) -> usize {
        match self {
            Self::RateLimited { .. } => 0,
            Self::QuotaExhausted => 1,
            Self::Forbidden => 2,
            Self::NotFound => 3,
            Self::AuthRejected => 4,
            Self::Empty => 5,
            Self::ContextLength => 6,
            Self::CapabilityMismatch => 7,
            Self::ContentFilter => 8,
            Self::InvalidRequest { .. } => 9,
            Self::Upstream { .. } => 10,
            Self::Timeout => 11,
            Self::ConnectError => 12,
            Self::BrokenBody => 13,
            Self::InvalidOutput => 14,
            Self::SkippedDead => 15,
            Self::SkippedOpen => 16,
            Self::Saturated => 17,
            Self::SkippedLazy => 18,
            Self::SkippedContext => 19,
        }
    }

    /// The bounded reason label (`quota_exhausted`, `broken_body`, …).
    pub fn reason(&self) -> &'static str {
        REASONS[self.reason_index()]
    }

    /// Position of this failure's `result` in [`RESULT_LABELS`]: SPEC §10's
    /// coarser set, where a quota used up counts as `rate_limited`, a
    /// rejected key as `forbidden`, a filtered answer as `invalid_output`, a
    /// broken body and the upstream's other refusals as `upstream_error`,
    /// and a lazy provider as `saturated`. `None` for a model skipped for its
    /// context: SPEC names no result for it, and no attempt was made.
    pub fn result_index(&self) -> Option<usize> {
        Some(match self {
            Self::RateLimited { .. } | Self::QuotaExhausted => 1,
            Self::Forbidden | Self::AuthRejected => 2,
            Self::NotFound => 3,
            Self::Empty => 4,
            Self::InvalidOutput | Self::ContentFilter => 5,
            Self::Timeout => 6,
            Self::Upstream { .. }
            | Self::BrokenBody
            | Self::ContextLength
            | Self::CapabilityMismatch
            | Self::InvalidRequest { .. } => 7,
            Self::ConnectError => 8,
            Self::SkippedDead => 9,
            Self::SkippedOpen => 10,
            Self::Saturated | Self::SkippedLazy => 11,
            Self::SkippedContext => return None,
        })
    }

    /// Counts against the circuit breaker (upstream failures only — not the
    /// client's errors, not invalid output, not rate limits).
    pub fn is_breaker_failure(&self) -> bool {
        matches!(self, Self::Upstream { .. } | Self::Timeout | Self::ConnectError | Self::BrokenBody)
    }

    /// Puts a dead mark on the model.
    pub fn marks_dead(&self) -> bool {
        matches!(self, Self::RateLimited { .. } | Self::QuotaExhausted | Self::Forbidden | Self::NotFound | Self::Empty)
    }

    /// Worth retrying on the same model (connect errors and resets only).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::ConnectError)
    }

    /// A skip, not a call: it spent no upstream request.
    pub fn is_skip(&self) -> bool {
        matches!(
            self,
            Self::SkippedDead | Self::SkippedOpen | Self::Saturated | Self::SkippedLazy | Self::SkippedContext
        )
    }
}

/// A failed attempt: the classification plus a short, secret-free detail.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptError {
    /// Classification.
    pub failure: Failure,
    /// For logs and the `all_models_failed` message.
    pub detail: String,
}

impl AttemptError {
    /// Builds an attempt error.
    pub fn new(failure: Failure, detail: impl Into<String>) -> Self {
        Self { failure, detail: detail.into() }
    }
}

impl std::fmt::Display for AttemptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.detail.is_empty() {
            f.write_str(self.failure.reason())
        } else {
            write!(f, "{} ({})", self.failure.reason(), self.detail)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_distinct_and_indexed() {
        let all = [
            Failure::RateLimited { retry_after: None },
            Failure::QuotaExhausted,
            Failure::Forbidden,
            Failure::NotFound,
            Failure::AuthRejected,
            Failure::Empty,
            Failure::ContextLength,
            Failure::CapabilityMismatch,
            Failure::ContentFilter,
            Failure::InvalidRequest { status: 400, body: None },
            Failure::Upstream { status: Some(502) },
            Failure::Timeout,
            Failure::ConnectError,
            Failure::BrokenBody,
            Failure::InvalidOutput,
            Failure::SkippedDead,
            Failure::SkippedOpen,
            Failure::Saturated,
            Failure::SkippedLazy,
            Failure::SkippedContext,
        ];
        let mut seen: Vec<&str> = all.iter().map(Failure::reason).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), REASONS.len(), "every reason is some failure's");
        // Every SPEC result but `ok` is some failure's, and only the context skip has none.
        let mut results: Vec<&str> = all.iter().filter_map(|f| f.result_index()).map(|i| RESULT_LABELS[i]).collect();
        results.push(RESULT_LABELS[OK_RESULT]);
        results.sort_unstable();
        results.dedup();
        assert_eq!(results.len(), RESULT_LABELS.len());
        assert_eq!(all.iter().filter(|f| f.result_index().is_none()).count(), 1);
        assert_eq!(Failure::BrokenBody.result_index().map(|i| RESULT_LABELS[i]), Some("upstream_error"));
        assert_eq!(Failure::QuotaExhausted.result_index().map(|i| RESULT_LABELS[i]), Some("rate_limited"));
    }

    #[test]
    fn breaker_counts_only_upstream_failures() {
        assert!(Failure::Upstream { status: Some(500) }.is_breaker_failure());
        assert!(Failure::Timeout.is_breaker_failure());
        assert!(!Failure::InvalidOutput.is_breaker_failure());
        assert!(!Failure::InvalidRequest { status: 400, body: None }.is_breaker_failure());
        assert!(!Failure::RateLimited { retry_after: None }.is_breaker_failure());
    }
}
