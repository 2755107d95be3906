//! What the runner hands back to the handler: an answer ([`Served`]) or
//! the record of a walk that found none ([`Unanswered`]), which the handler
//! turns into a handoff or an error.

use super::settle::Finish;
use super::stream::Forward;
use crate::api::error::AttemptSummary;
use crate::api::ApiError;
use crate::outcome::Tier;
use bytes::Bytes;
use futures_util::stream::BoxStream;

/// The body of a served answer.
pub enum ServedBody {
    /// A stamped `chat.completion`.
    Complete(crate::api::completion::Completion),
    /// An upstream stream, forwarded as it arrives (it settles itself).
    Forward(Forward),
    /// SSE bytes the gateway wrote itself (the handoff reply).
    Canned(BoxStream<'static, Result<Bytes, std::convert::Infallible>>),
}

/// A served answer with what the response headers report.
pub struct Served {
    pub cascade: String,
    /// The model ref that answered.
    pub model: String,
    pub tier: Tier,
    /// 1-based position in the cascade of the model that answered
    /// (`x-spillway-rank`); `None` for the handoff reply.
    pub rank: Option<usize>,
    /// Upstream calls made (retries and hedges included).
    pub attempts: u32,
    /// The load profile applied to the answering model, if monitored.
    pub load_profile: Option<String>,
    /// The id the answering upstream gave its call, when it sent one.
    pub upstream_request_id: Option<String>,
    /// The handoff item's id, when the request was queued for a person.
    pub handoff_id: Option<String>,
    /// Whether an escalation rule switched the cascade.
    pub escalated: bool,
    /// The prompt's estimated size in tokens (for cost when the upstream
    /// reports no usage).
    pub prompt_tokens: u64,
    /// A whole answer's quality signals, when its cascade judges quality
    /// (`x-spillway-quality`; a stream's are logged at its end).
    pub quality: crate::quality::Signals,
    pub body: ServedBody,
}

/// Why no model answered.
#[derive(Debug)]
pub enum NoAnswer {
    /// An upstream said the client's request is wrong (other 400/422):
    /// returned as is, nothing else was called.
    Rejected(ApiError),
    /// The request itself is unusable for the runner (a malformed schema).
    Invalid(ApiError),
    /// `timeouts.total` ran out: the models may only be slow.
    TimedOut,
    /// Every target failed or was skipped.
    AllFailed,
}

/// A walk that found no answer: the handler decides what the client gets
/// (the handoff, or the error) and settles the request's [`Finish`].
pub struct Unanswered {
    pub why: NoAnswer,
    /// Every attempt and skip, in order.
    pub attempts: Vec<AttemptSummary>,
    /// Upstream calls made.
    pub calls: u32,
    pub finish: Finish,
}
