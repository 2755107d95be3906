//! The cascade runner: the heart of a request's life.
//!
//! For one request it walks the cascade's targets in order, making one
//! attempt per model (plus connect-error retries), recording every attempt
//! and its classified outcome. Non-stream answers are returned whole;
//! streams are held until the upstream's first real token ([`peek`]) so a
//! failure before it falls through to the next model invisibly — after
//! that, [`stream::forward`] passes chunks on as they arrive and fallback is
//! no longer possible. When nothing answered, the client gets a 503 listing
//! every attempt.

pub mod outcome;
pub mod prepare;
pub mod stream;

use crate::api::error::AttemptSummary;
use crate::api::sse;
use crate::api::wire::{self, Stamp};
use crate::api::{ApiError, ChatRequest};
use crate::config::ModelRef;
use crate::metrics::{Metrics, TargetMetrics};
use crate::providers::{AttemptRequest, ChunkStream, Provider, Reply, StreamItem};
use crate::runtime::{CascadePlan, Gateway};
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use outcome::{AttemptError, Failure, OK_INDEX};
use serde_json::Value;
use std::sync::Arc;
use tokio::time::{timeout_at, Duration, Instant};

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

/// One model of a cascade, ready to call.
#[derive(Debug, Clone)]
pub struct Target {
    /// Its ref.
    pub model_ref: ModelRef,
    /// `provider/model`, pre-rendered for headers and bodies.
    pub name: String,
    /// Its tier.
    pub tier: Tier,
    /// Its provider.
    pub provider: Arc<Provider>,
    /// Metric handles.
    pub metrics: Arc<TargetMetrics>,
}

impl Target {
    /// Builds a target with its metric handles.
    pub fn new(
        model_ref: ModelRef,
        tier: Tier,
        provider: Arc<Provider>,
        metrics: &Metrics,
        cascade: &str,
    ) -> Self {
        let m = metrics.target(cascade, &model_ref.provider, &model_ref.model);
        Self {
            name: model_ref.to_string(),
            model_ref,
            tier,
            provider,
            metrics: m,
        }
    }
}

/// The body of a served answer.
pub enum ServedBody {
    /// A stamped `chat.completion`.
    Complete(Value),
    /// SSE bytes, forwarded as they arrive.
    Stream(BoxStream<'static, Result<Bytes, std::convert::Infallible>>),
}

/// A served answer with what the response headers report.
pub struct Served {
    /// Cascade name.
    pub cascade: String,
    /// Model ref that answered.
    pub model: String,
    /// Its tier.
    pub tier: Tier,
    /// Upstream calls made.
    pub attempts: u32,
    /// The load profile applied to the answering model, if monitored.
    pub load_profile: Option<String>,
    /// The body.
    pub body: ServedBody,
}

/// What a successful attempt produced before it is turned into a response.
enum Answer {
    Complete(Value),
    Stream { head: Vec<Value>, rest: ChunkStream },
}

/// Serves one request through its cascade.
pub async fn run(gw: &Gateway, plan: &CascadePlan, req: ChatRequest) -> Result<Served, ApiError> {
    let started = Instant::now();
    let timeouts = gw.config.health.timeouts;
    let retries = gw.config.health.retries;
    let deadline = started + timeouts.total;
    let mut log: Vec<AttemptSummary> = Vec::new();
    let mut calls = 0u32;

    for target in &plan.targets {
        if prepare::skip_for_load(gw, target) {
            let e = AttemptError::new(Failure::SkippedLazy, "provider overloaded (skip_when_lazy)");
            record(target, &mut log, &e);
            continue;
        }
        let Some(slot) = target.provider.try_acquire() else {
            record(
                target,
                &mut log,
                &AttemptError::new(Failure::Saturated, "provider at max_in_flight"),
            );
            continue;
        };
        let mut tries = 0;
        let result = loop {
            if Instant::now() >= deadline {
                break Err(AttemptError::new(Failure::Timeout, "total deadline"));
            }
            calls += 1;
            tries += 1;
            let r = attempt(gw, target, &req, deadline, timeouts.first_token).await;
            match r {
                Err(e) if e.failure.is_retryable() && tries <= retries.max => {
                    tokio::time::sleep(backoff(retries.backoff, retries.jitter, tries)).await;
                }
                other => break other,
            }
        };
        match result {
            Ok((answer, load_profile)) => {
                target.metrics.attempt(OK_INDEX);
                target.metrics.served(target.tier.index());
                let stamp = Stamp::new(target.name.clone());
                let body = match answer {
                    Answer::Complete(mut v) => {
                        // Already validated by `attempt`.
                        let _ = wire::completion(&mut v, &stamp);
                        plan.metrics.ok.inc();
                        plan.metrics
                            .duration
                            .observe(started.elapsed().as_secs_f64());
                        ServedBody::Complete(v)
                    }
                    Answer::Stream { head, rest } => {
                        plan.metrics.ok.inc();
                        let end = stream::StreamEnd {
                            started,
                            duration: plan.metrics.clone(),
                            _slot: Some(slot),
                        };
                        ServedBody::Stream(stream::forward(
                            head,
                            rest,
                            stamp,
                            timeouts.idle,
                            req.include_usage,
                            end,
                        ))
                    }
                };
                return Ok(Served {
                    cascade: plan.name.clone(),
                    model: target.name.clone(),
                    tier: target.tier,
                    attempts: calls,
                    load_profile,
                    body,
                });
            }
            Err(e) => {
                drop(slot);
                record(target, &mut log, &e);
                if let Failure::InvalidRequest { status, body } = e.failure {
                    plan.metrics.error.inc();
                    return Err(ApiError::UpstreamRejected {
                        status,
                        body,
                        message: format!("{}: {}", target.name, e.detail),
                    });
                }
                if Instant::now() >= deadline {
                    plan.metrics.error.inc();
                    return Err(ApiError::Timeout);
                }
            }
        }
    }
    plan.metrics.error.inc();
    plan.metrics
        .duration
        .observe(started.elapsed().as_secs_f64());
    Err(ApiError::AllModelsFailed {
        cascade: plan.name.clone(),
        attempts: log,
    })
}

fn record(target: &Target, log: &mut Vec<AttemptSummary>, e: &AttemptError) {
    target.metrics.attempt(e.failure.metric_index());
    tracing::debug!(model = %target.name, reason = %e, "Attempt failed.");
    log.push(AttemptSummary {
        model: target.name.clone(),
        reason: e.to_string(),
    });
}

/// Exponential backoff with jitter; jitter 0 makes it exact (tests).
fn backoff(base: Duration, jitter: f64, attempt: u32) -> Duration {
    let exp = base.saturating_mul(1 << attempt.saturating_sub(1).min(6));
    exp + exp.mul_f64(jitter * fastrand::f64())
}

/// One attempt against one target, up to its first token.
async fn attempt(
    gw: &Gateway,
    target: &Target,
    req: &ChatRequest,
    deadline: Instant,
    first_token: Duration,
) -> Result<(Answer, Option<String>), AttemptError> {
    let started = Instant::now();
    let token_deadline = deadline.min(started + first_token);
    let prepared = prepare::prepare(gw, target, req);
    let attempt_req = AttemptRequest {
        model_id: &target.model_ref.model,
        body: prepared.body,
        stream: req.stream,
        include_usage: req.include_usage,
    };
    let reply = match timeout_at(token_deadline, target.provider.call(attempt_req)).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(AttemptError::new(
                Failure::Timeout,
                "no response before the first-token deadline",
            ))
        }
    };
    match reply {
        Reply::Complete(mut v) => {
            if let Err(why) = wire::completion(&mut v, &Stamp::new(target.name.clone())) {
                return Err(AttemptError::new(Failure::BrokenBody, why));
            }
            if !wire::completion_has_answer(&v) {
                return Err(AttemptError::new(
                    Failure::Empty,
                    "no content and no tool calls",
                ));
            }
            target.metrics.ttft.observe(started.elapsed().as_secs_f64());
            Ok((Answer::Complete(v), prepared.load_profile))
        }
        Reply::Stream(s) => {
            let (head, rest) = peek(s, token_deadline).await?;
            target.metrics.ttft.observe(started.elapsed().as_secs_f64());
            Ok((Answer::Stream { head, rest }, prepared.load_profile))
        }
    }
}

/// Reads a stream until its first real token; everything before it (role
/// chunks, keep-alives) is kept to be sent first.
pub async fn peek(
    mut s: ChunkStream,
    deadline: Instant,
) -> Result<(Vec<Value>, ChunkStream), AttemptError> {
    let mut head = Vec::new();
    let mut finished = false;
    loop {
        match timeout_at(deadline, s.next()).await {
            Err(_) => {
                return Err(AttemptError::new(
                    Failure::Timeout,
                    "no first token before the deadline",
                ))
            }
            Ok(None) if finished => {
                return Err(AttemptError::new(
                    Failure::Empty,
                    "the stream finished without content",
                ))
            }
            Ok(None) => {
                return Err(AttemptError::new(
                    Failure::BrokenBody,
                    "the stream ended before its first token",
                ))
            }
            Ok(Some(Err(e))) => return Err(e),
            Ok(Some(Ok(StreamItem::Done))) => {
                return Err(AttemptError::new(
                    Failure::Empty,
                    "the stream finished without content",
                ))
            }
            Ok(Some(Ok(StreamItem::Chunk(v)))) => {
                if wire::chunk_has_token(&v) {
                    head.push(v);
                    return Ok((head, s));
                }
                finished |= wire::chunk_finishes(&v);
                head.push(v);
            }
        }
    }
}

/// Encodes an error event for a stream that failed after its first byte.
pub fn error_event(e: &AttemptError) -> Bytes {
    let body = serde_json::json!({"error": {
        "message": format!("the upstream failed mid-stream: {e}"),
        "type": "upstream_error",
        "code": e.failure.metric_label(),
        "param": null,
    }});
    sse::encode_json(&body)
}
