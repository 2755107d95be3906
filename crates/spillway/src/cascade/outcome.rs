//! What one upstream attempt came to: SPEC §6's outcome table as a type.
//!
//! Adapters classify by status, error code and body fields — never by
//! matching whole messages — into a [`Failure`]; the runner decides from it
//! alone what happens next (next model, dead mark, breaker failure, or the
//! client's own error returned as is).

use bytes::Bytes;
use std::time::Duration;

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

/// Every value of the `result` label of `spillway_attempts_total`, in the
/// order [`Failure::metric_index`] and [`OK_INDEX`] use.
pub const RESULT_LABELS: [&str; 21] = [
    "ok",
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

/// Index of `ok` in [`RESULT_LABELS`].
pub const OK_INDEX: usize = 0;

impl Failure {
    /// Position of this failure's label in [`RESULT_LABELS`].
    pub fn metric_index(&self) -> usize {
        match self {
            Self::RateLimited { .. } => 1,
            Self::QuotaExhausted => 2,
            Self::Forbidden => 3,
            Self::NotFound => 4,
            Self::AuthRejected => 5,
            Self::Empty => 6,
            Self::ContextLength => 7,
            Self::CapabilityMismatch => 8,
            Self::ContentFilter => 9,
            Self::InvalidRequest { .. } => 10,
            Self::Upstream { .. } => 11,
            Self::Timeout => 12,
            Self::ConnectError => 13,
            Self::BrokenBody => 14,
            Self::InvalidOutput => 15,
            Self::SkippedDead => 16,
            Self::SkippedOpen => 17,
            Self::Saturated => 18,
            Self::SkippedLazy => 19,
            Self::SkippedContext => 20,
        }
    }

    /// The bounded `result` label.
    pub fn metric_label(&self) -> &'static str {
        RESULT_LABELS[self.metric_index()]
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
            f.write_str(self.failure.metric_label())
        } else {
            write!(f, "{} ({})", self.failure.metric_label(), self.detail)
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
        let mut seen: Vec<&str> = all.iter().map(Failure::metric_label).collect();
        seen.push(RESULT_LABELS[OK_INDEX]);
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), RESULT_LABELS.len());
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
