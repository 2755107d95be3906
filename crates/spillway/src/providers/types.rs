//! The interface between the runner and an adapter: one attempt's request
//! as the runner prepared it ([`AttemptRequest`]), what the upstream
//! answered ([`Reply`]: a whole completion or a [`ChunkStream`]), and what
//! its headers said about its limits ([`UpstreamHints`]).
//!
//! The bottom of `providers/` with [`super::translate`]: every adapter and
//! the runner name these types; they import only the wire types below.

use super::translate::StreamItem;
use crate::api::completion::Completion;
use crate::api::request::Outgoing;
use crate::outcome::AttemptError;
use futures_util::stream::BoxStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Chunks of a streamed answer, as OpenAI `chat.completion.chunk` values.
pub type ChunkStream = BoxStream<'static, Result<StreamItem, AttemptError>>;

/// What an upstream answered.
pub enum Reply {
    /// A whole `chat.completion` (not yet stamped).
    Complete(Completion),
    /// A stream of chunks.
    Stream(ChunkStream),
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Complete(v) => f.debug_tuple("Complete").field(v).finish(),
            Self::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// One attempt's request, as the runner prepared it.
#[derive(Debug)]
pub struct AttemptRequest<'a> {
    /// The model id at the provider.
    pub model_id: &'a str,
    /// The OpenAI request body for this attempt (its `model` is replaced by
    /// the adapter); borrowed from the client's request when not rewritten.
    pub body: Outgoing<'a>,
    /// Stream the answer.
    pub stream: bool,
    /// The client asked for a usage chunk.
    pub include_usage: bool,
    /// The stream is asked for only to read a whole answer: an upstream
    /// that answers with a whole body instead is fine.
    pub accept_whole: bool,
    /// Where the adapter reports what the upstream's headers said about its
    /// limits (read by the runner after the call).
    pub hints: &'a UpstreamHints,
    /// The client request's id, sent upstream as `x-request-id`.
    pub request_id: Option<&'a str>,
    /// The attempt's `traceparent`, when the request is part of a trace.
    pub traceparent: Option<&'a str>,
    /// The client's `tracestate`, passed on with it.
    pub tracestate: Option<&'a str>,
}

impl<'a> AttemptRequest<'a> {
    /// The ids the call carries upstream.
    pub fn ids(&self) -> CallIds<'a> {
        CallIds { request_id: self.request_id, traceparent: self.traceparent, tracestate: self.tracestate }
    }
}

/// What an upstream's answer said about its limits, beyond the answer.
#[derive(Debug, Default)]
pub struct UpstreamHints {
    /// Milliseconds until the quota resets, when an answer said it is used
    /// up (`x-ratelimit-remaining-*: 0`); 0 when not.
    exhausted_ms: AtomicU64,
    /// The id the upstream gave this call (its `x-request-id`).
    upstream_id: std::sync::OnceLock<String>,
    /// The share of its quota the answer said is left, in thousandths plus
    /// one; 0 when it said nothing.
    quota_left: std::sync::atomic::AtomicU32,
}

impl UpstreamHints {
    /// Records the quota reset an answer announced (`reset_hint`).
    pub fn set_exhausted_for(&self, d: Duration) {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1);
        self.exhausted_ms.store(ms, Ordering::Release);
    }

    /// Records the share of its quota an answer said is left (0..1).
    pub fn set_quota_left(&self, share: Option<f64>) {
        if let Some(q) = share.filter(|q| q.is_finite()) {
            let permille = (q.clamp(0.0, 1.0) * 1000.0).round() as u32;
            self.quota_left.store(permille + 1, Ordering::Release);
        }
    }

    /// The share of its quota the answer said is left, if it said.
    pub fn quota_left(&self) -> Option<f64> {
        match self.quota_left.load(Ordering::Acquire) {
            0 => None,
            n => Some(f64::from(n - 1) / 1000.0),
        }
    }

    /// Records the id the upstream gave its answer, if it sent one.
    pub fn set_upstream_id(&self, id: Option<String>) {
        if let Some(id) = id {
            let _ = self.upstream_id.set(id);
        }
    }

    /// The id the upstream gave its answer.
    pub fn upstream_id(&self) -> Option<&str> {
        self.upstream_id.get().map(String::as_str)
    }

    /// The quota reset recorded for this attempt, if any.
    pub fn exhausted_for(&self) -> Option<Duration> {
        let ms = self.exhausted_ms.load(Ordering::Acquire);
        (ms > 0).then(|| Duration::from_millis(ms))
    }
}

/// Errors building a provider (bad CA file, TLS setup).
#[derive(Debug, thiserror::Error)]
#[error("provider `{provider}`: {message}")]
pub struct BuildError {
    pub provider: String,
    pub message: String,
}

/// What names an upstream call besides its body: the client request's id
/// (`x-request-id`) and, when the request is part of a trace, its
/// `traceparent` and the client's `tracestate`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallIds<'a> {
    pub request_id: Option<&'a str>,
    pub traceparent: Option<&'a str>,
    pub tracestate: Option<&'a str>,
}
