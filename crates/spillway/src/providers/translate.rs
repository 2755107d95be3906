//! The shared vocabulary of the wire-format translators.
//!
//! Spillway speaks OpenAI Chat Completions to its clients and, internally,
//! carries requests, responses and stream chunks as OpenAI-shaped
//! `serde_json::Value`s. Every native adapter (Anthropic, GigaChat, Yandex)
//! translates that shape to its own wire format on the way out and back on
//! the way in; the types here are what those translators hand the cascade
//! runner, so it can classify an attempt without knowing the provider.

/// One item a stream decoder produces from the upstream's events.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamItem {
    /// An OpenAI `chat.completion.chunk` object (without `id`, `created` or
    /// `model`: the gateway stamps those so they stay stable for the stream).
    Chunk(serde_json::Value),
    /// An OpenAI-compatible upstream's chunk that already has every field
    /// the schema requires: forwarded as its bytes behind the stamp.
    Raw(crate::api::completion::RawChunk),
    /// The upstream signalled a proper end of stream (`[DONE]`,
    /// `message_stop`, a final status). A stream that closes without it is a
    /// broken body.
    Done,
    /// An event the decoder could not read (not JSON, a broken shape): the
    /// runner skips it and counts it, and fails the attempt as a broken
    /// body only past `health.streams.max_skipped_events`. Never reaches
    /// the client.
    Skipped,
}

impl StreamItem {
    /// The chunk as a tree (`None` for `Done`), for what must read it whole.
    pub fn into_value(self) -> Option<serde_json::Value> {
        match self {
            Self::Chunk(v) => Some(v),
            Self::Raw(r) => Some(r.into_value()),
            Self::Done | Self::Skipped => None,
        }
    }

    /// A chunk that carries the first token (content, a refusal, a tool call).
    pub fn has_token(&self) -> bool {
        match self {
            Self::Chunk(v) => crate::api::wire::chunk_has_token(v),
            Self::Raw(r) => r.has_token(),
            Self::Done | Self::Skipped => false,
        }
    }

    /// A chunk that ends its choice.
    pub fn finishes(&self) -> bool {
        match self {
            Self::Chunk(v) => crate::api::wire::chunk_finishes(v),
            Self::Raw(r) => r.finishes(),
            Self::Done | Self::Skipped => false,
        }
    }
}

/// How an upstream error (an HTTP status plus body, or an error event inside
/// a stream) is to be treated by the cascade runner. This is the
/// provider-independent form of SPEC §6's outcome table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// 429 or an equivalent: the model is dead until its limit resets.
    RateLimited,
    /// Billing or quota exhausted (OpenAI `insufficient_quota`, OpenRouter
    /// 402, Anthropic `billing_error`): not retryable for hours.
    QuotaExhausted,
    /// 403: this model is not permitted for this account.
    Forbidden,
    /// 404 or a decommissioned model: the model is gone.
    NotFound,
    /// 401: the provider's key is wrong; the whole provider is dead.
    AuthRejected,
    /// The prompt does not fit the model's context window.
    ContextLength,
    /// The model cannot do what the request asks (tools, a parameter): not
    /// the client's fault, try the next model.
    CapabilityMismatch,
    /// The upstream refused the content (GigaChat `blacklist`, Anthropic
    /// `refusal`): try the next model.
    ContentFilter,
    /// Any other 400/422: the client's request is invalid; return it as is.
    InvalidRequest,
    /// 5xx, overload (Anthropic 529), a timeout reported by the upstream:
    /// counts against the circuit breaker.
    Upstream,
}

/// What went wrong while translating.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TranslateError {
    /// The upstream broke its own format: not JSON, a missing field, an
    /// unknown shape. The attempt fails as a broken body.
    #[error("malformed {format} payload: {detail}")]
    Malformed {
        /// Which wire format was being read (`anthropic`, `gigachat`, …).
        format: &'static str,
        /// A short, secret-free description for the attempt log.
        detail: String,
    },
    /// One stream event is not JSON (or not the JSON object it must be):
    /// in a stream it is skipped and counted, and fails the attempt as a
    /// broken body only when too many come (`health.streams.max_skipped_events`);
    /// elsewhere it is [`Self::Malformed`]. Unlike `Malformed`, it leaves
    /// the decoder's state as it was.
    #[error("unreadable {format} stream event: {detail}")]
    Unreadable {
        /// Which wire format was being read.
        format: &'static str,
        /// A short, secret-free description.
        detail: String,
    },
    /// The upstream reported an error (inside a 2xx stream or body).
    #[error("upstream error ({class:?}): {message}")]
    Upstream {
        /// How the runner should treat it.
        class: ErrorClass,
        /// The upstream's message, for the attempt log.
        message: String,
    },
    /// The client's request cannot be expressed in this wire format.
    #[error("request not expressible for this provider: {0}")]
    Unsupported(String),
}

#[cfg(test)]
mod tests {
    use super::StreamItem;
    use crate::outcome::AttemptError;

    /// Every event passes the stream's layers (decoder, skipping, forwarder)
    /// by value: past 128 bytes each move is a call to copy it, which cost
    /// ~150 instructions an event (callgrind, `docs/PERFORMANCE.md`).
    #[test]
    fn a_stream_item_moves_without_a_copy_call() {
        let size = std::mem::size_of::<Option<Result<StreamItem, AttemptError>>>();
        assert!(size <= 80, "a stream item is {size} bytes");
    }
}
