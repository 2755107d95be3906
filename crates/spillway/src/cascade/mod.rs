//! The cascade runner: the heart of a request's life.
//!
//! For one request it walks the cascade's targets in order. Before each
//! attempt the target must pass the gates ([`gate`]): not dead, breaker
//! admits it, context fits, load allows it, provider bulkhead has room.
//! The attempt itself ([`attempt`]) runs up to the upstream's first token —
//! for streams the response is held until then, so a failure before it
//! falls through to the next model invisibly. Each outcome is judged
//! ([`judge`]): dead marks, breaker counts, metrics, the attempt log. With
//! `hedge_after`, a slow first token also starts the next model and the
//! first token wins. After the first byte reaches the client,
//! [`stream::forward`] passes chunks on as they arrive and fallback is no
//! longer possible. When nothing answered, the client gets a 503 listing
//! every attempt.

pub mod attempt;
pub mod gate;
pub mod json;
pub mod judge;
pub mod prepare;
pub mod stream;

use crate::api::error::AttemptSummary;
use crate::api::sse;
use crate::api::wire::Stamp;
use crate::api::{ApiError, ChatRequest};
use crate::config::ModelRef;
use crate::gateway::{CascadePlan, Gateway};
use crate::health::{HealthRegistry, ModelHealth, ProviderHealth};
use crate::metrics::{Metrics, TargetMetrics};
use crate::outcome::AttemptError;
pub use crate::outcome::{Tier, TIERS};
use crate::providers::Provider;
use attempt::{Answer, Attempted};
use bytes::Bytes;
use futures_util::stream::BoxStream;
use judge::Verdict;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::time::Instant;

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
    /// Its context window, when known.
    pub context: Option<u64>,
    /// Its health entry.
    pub health: Arc<ModelHealth>,
    /// Its provider's health entry.
    pub provider_health: Arc<ProviderHealth>,
    /// Metric handles.
    pub metrics: Arc<TargetMetrics>,
}

impl Target {
    /// Builds a target with its health entries and metric handles.
    pub fn new(
        model_ref: ModelRef,
        tier: Tier,
        provider: Arc<Provider>,
        metrics: &Metrics,
        health: &HealthRegistry,
        cascade: &str,
    ) -> Self {
        let m = metrics.target(cascade, &model_ref.provider, &model_ref.model);
        let name = model_ref.to_string();
        let context = provider.config.models.iter().find(|s| s.id == model_ref.model).and_then(|s| s.context);
        Self {
            health: health.model(&name),
            provider_health: health.provider(&model_ref.provider),
            name,
            model_ref,
            tier,
            provider,
            context,
            metrics: m,
        }
    }
}

/// The body of a served answer.
pub enum ServedBody {
    /// A stamped `chat.completion`.
    Complete(crate::api::completion::Completion),
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
    /// The handoff item's id, when the request was queued for a person.
    pub handoff_id: Option<String>,
    /// Whether an escalation rule switched the cascade.
    pub escalated: bool,
    /// The prompt's estimated size in tokens (for cost when the upstream
    /// reports no usage).
    pub prompt_tokens: u64,
    /// The body.
    pub body: ServedBody,
}

/// What one request's walk through its cascade keeps.
pub struct Walk<'a> {
    /// The gateway it runs on.
    pub gw: &'a Gateway,
    /// The request.
    pub req: &'a ChatRequest,
    /// When it started.
    pub started: Instant,
    /// `timeouts.total` from the start.
    pub deadline: Instant,
    /// Upstream calls made (retries and hedges included).
    pub calls: AtomicU32,
    /// Every attempt and skip, in order. (A lock because a hedged attempt
    /// and the gate of its companion record from one task, interleaved;
    /// never held across an await.)
    pub log: Mutex<Vec<AttemptSummary>>,
    /// The prompt's estimated size in tokens.
    pub prompt_tokens: u64,
    /// After a context-length rejection: only models with a larger known
    /// context are worth trying.
    pub min_context: AtomicU64,
    /// What the answer's JSON must look like, when the request asks for JSON.
    pub json: Option<json::JsonPlan>,
}

impl Walk<'_> {
    /// Adds an entry to the attempt log.
    pub fn note(&self, model: &str, reason: String) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(AttemptSummary { model: model.to_string(), reason });
    }
}

/// Serves one request through its cascade.
pub async fn run(gw: &Gateway, plan: &CascadePlan, req: ChatRequest) -> Result<Served, ApiError> {
    let started = Instant::now();
    let walk = Walk {
        gw,
        req: &req,
        started,
        deadline: started + gw.config.health.timeouts.total,
        calls: AtomicU32::new(0),
        log: Mutex::new(Vec::new()),
        prompt_tokens: req.prompt_tokens,
        min_context: AtomicU64::new(0),
        json: json::JsonPlan::of(&req, &gw.shared.schemas)?,
    };
    let mut next = 0;
    while next < plan.targets.len() {
        if Instant::now() >= walk.deadline {
            break;
        }
        let Some((i, pass)) = gate::next_admitted(&walk, &plan.targets, next) else {
            break;
        };
        next = i + 1;
        let target = &plan.targets[i];
        // The attempt's future is made where it is awaited: bound to a local
        // first, it would take its size twice in this future's state.
        let attempted = match plan.hedge_after {
            None => attempt::run(&walk, target, pass).await,
            Some(after) => {
                let primary = attempt::run(&walk, target, pass);
                // Boxed: two attempts side by side would double the size of
                // every request's future, hedged or not.
                let (attempted, hedged_to) = Box::pin(attempt::hedged(&walk, plan, i, primary, after)).await;
                if let Some(j) = hedged_to {
                    next = next.max(j + 1);
                }
                attempted
            }
        };
        for (target, result) in attempted.failures {
            if let Verdict::ReturnToClient(e) = judge::failure(&walk, target, result) {
                plan.metrics.error.inc();
                plan.metrics.duration.observe(started.elapsed().as_secs_f64());
                return Err(e);
            }
        }
        if let Some(win) = attempted.winner {
            return Ok(serve(&walk, plan, win));
        }
    }
    plan.metrics.duration.observe(started.elapsed().as_secs_f64());
    let calls = walk.calls.load(Ordering::Relaxed);
    let attempts = walk.log.into_inner().unwrap_or_else(PoisonError::into_inner);
    // Past `timeouts.total` the models may only be slow, not dead.
    let timed_out = Instant::now() >= walk.deadline;
    if !timed_out {
        gw.shared.alerts.publish(crate::alerts::Event::CascadeDead { cascade: plan.name.clone() });
    }
    if plan.handoff {
        // The last tier, also after the deadline: a person answers instead
        // (it counts the outcome itself).
        return Box::pin(crate::handoff::queue(gw, plan, &req, attempts, calls)).await;
    }
    plan.metrics.error.inc();
    if timed_out {
        return Err(ApiError::Timeout);
    }
    Err(ApiError::AllModelsFailed { cascade: plan.name.clone(), attempts })
}

/// Turns the winning attempt into the client's response.
fn serve(walk: &Walk<'_>, plan: &CascadePlan, win: Attempted<'_>) -> Served {
    let Attempted { target, answer, mut pass, load_profile, ttft, exhausted } = win;
    judge::answered(walk, target, ttft, exhausted);
    plan.metrics.ok.inc();
    let body = match answer {
        Answer::Complete(v) => {
            judge::breaker_success(walk, target);
            pass.settle();
            // Stamped (our id, `model` = the model ref) and validated in the attempt.
            plan.metrics.duration.observe(walk.started.elapsed().as_secs_f64());
            ServedBody::Complete(v)
        }
        Answer::Stream { head, rest } => {
            let end = stream::StreamEnd {
                started: walk.started,
                metrics: plan.metrics.clone(),
                health: target.health.clone(),
                breaker: walk.gw.config.health.breaker,
                events: walk.gw.health.events.clone(),
                _pass: pass,
                // From the usage chunk when one comes, else estimated at the end.
                meter: Some(crate::usage::Meter::new(walk.gw, &plan.name, &target.name, target.metrics.clone())),
                prompt_tokens: walk.prompt_tokens,
                out_chars: 0,
            };
            let idle = walk.gw.config.health.timeouts.idle;
            let stamp = Stamp::new(target.name.clone());
            ServedBody::Stream(stream::forward(head, rest, stamp, idle, walk.req.include_usage, end))
        }
    };
    Served {
        prompt_tokens: walk.prompt_tokens,
        cascade: plan.name.clone(),
        model: target.name.clone(),
        tier: target.tier,
        attempts: walk.calls.load(Ordering::Relaxed),
        load_profile,
        handoff_id: None,
        escalated: false,
        body,
    }
}

/// Encodes an error event for a stream that failed after its first byte.
pub fn error_event(e: &AttemptError) -> Bytes {
    let body = serde_json::json!({"error": {
        "message": format!("the upstream failed mid-stream: {e}"),
        "type": "upstream_error",
        "code": e.failure.reason(),
        "param": null,
    }});
    sse::encode_json(&body)
}
