//! The embedding runner: one embeddings request walked through an
//! embedding cascade, model by model, on the same health rules as chat.
//!
//! Each target passes the same gates ([`gate::admit`]: dead marks,
//! `skip_when_lazy`, bulkhead, breaker with its one half-open probe) and
//! its attempt gets a [`Ticket`] that is settled once — answered when the
//! vectors passed their checks, failed otherwise — so dead marks, the
//! breaker, TTFT and the attempt metrics see embeddings exactly as they
//! see whole chat answers. Connect errors are retried as chat's are; each
//! attempt has the first-token deadline (for a whole answer: the answer),
//! the request `timeouts.total`. An upstream's other 400/422 is the
//! client's own error, returned as is with nothing else called.
//!
//! Not shared with the chat loop ([`super::run`]): that one is built
//! around prompts, load profiles, JSON checks, streams and hedging, none
//! of which an embedding has; what they share — gates and settlement — is
//! the part that decides health.

use super::context::Context;
use super::gate;
use super::plan::{CascadePlan, Target};
use super::served::{NoAnswer, Unanswered};
use super::settle::{Finish, RequestOutcome, Rules, Ticket};
use crate::api::embeddings::{fit, EmbeddingRequest, Unfit, Vectors};
use crate::api::error::AttemptSummary;
use crate::api::ApiError;
use crate::outcome::{AttemptError, Failure};
use std::sync::Arc;
use tokio::time::{timeout_at, Duration, Instant};

/// The vectors one model returned, checked and shortened to the request.
#[derive(Debug)]
pub struct Embedded {
    pub vectors: Vectors,
    /// The target that answered.
    pub index: usize,
    /// Upstream calls made (retries included).
    pub calls: u32,
}

/// Walks `plan` until a model's vectors pass their checks.
pub async fn run(ctx: Context<'_>, plan: &Arc<CascadePlan>, req: &EmbeddingRequest) -> Result<Embedded, Unanswered> {
    let started = Instant::now();
    let finish = Finish::new(plan.metrics.clone(), started, req.journal.as_ref());
    let deadline = started + ctx.rules.timeouts.total;
    let rules = Rules { breaker: ctx.rules.breaker, dead_ttl: ctx.rules.dead_ttl };
    let mut log: Vec<AttemptSummary> = Vec::new();
    let mut calls = 0u32;
    let mut next = 0;
    let note = |log: &mut Vec<AttemptSummary>, t: &Target, e: &AttemptError| {
        log.push(AttemptSummary { model: t.name.clone(), reason: e.to_string() });
    };
    while next < plan.targets.len() && Instant::now() < deadline {
        let admitted = gate::admit(&ctx, &plan.targets, next, 0, |t, e| {
            t.metrics.attempt_failed(&e.failure);
            note(&mut log, t, e);
        });
        let Some((i, pass)) = admitted else { break };
        next = i + 1;
        let target = &plan.targets[i];
        let mut pass = Some(pass);
        let mut tries = 0u32;
        // Every call is an attempt, settled before a retry, and a retry
        // passes the gates again (see `attempt::run`).
        while let Some(admitted) = pass.take() {
            let ticket = Ticket::new(plan, i, ctx.health, rules, admitted, req.journal.as_ref());
            tries += 1;
            calls += 1;
            let e = match once(&ctx, target, req, deadline).await {
                Ok(vectors) => {
                    let mut ticket = ticket;
                    ticket.first_token(None);
                    ticket.answered();
                    finish.settle(RequestOutcome::Ok);
                    return Ok(Embedded { vectors, index: i, calls });
                }
                Err(e) => e,
            };
            tracing::debug!(model = %target.name, reason = %e, "Embedding attempt failed.");
            ticket.failed(&e);
            note(&mut log, target, &e);
            if let Failure::InvalidRequest { status, body } = e.failure {
                let rejected =
                    ApiError::UpstreamRejected { status, body, message: format!("{}: {}", target.name, e.detail) };
                return Err(Unanswered { why: NoAnswer::Rejected(rejected), attempts: log, calls, finish });
            }
            if e.failure.is_retryable() && tries <= ctx.rules.retries.max && Instant::now() < deadline {
                let r = ctx.rules.retries;
                tokio::time::sleep(backoff(r.backoff, r.jitter, tries)).await;
                pass = gate::readmit(&ctx, target);
            }
        }
    }
    let why = if Instant::now() >= deadline { NoAnswer::TimedOut } else { NoAnswer::AllFailed };
    Err(Unanswered { why, attempts: log, calls, finish })
}

/// One upstream call and the checks of its vectors.
async fn once(
    ctx: &Context<'_>,
    target: &Target,
    req: &EmbeddingRequest,
    deadline: Instant,
) -> Result<Vectors, AttemptError> {
    let first_token = target.provider.config.first_token.unwrap_or(ctx.rules.timeouts.first_token);
    let until = deadline.min(Instant::now() + first_token);
    let call = target.provider.embed(&target.model_ref.model, req);
    tokio::pin!(call);
    let mut vectors = match timeout_at(until, call).await {
        Ok(r) => r?,
        Err(_) => return Err(AttemptError::new(Failure::Timeout, "no embeddings before the first-token deadline")),
    };
    let expected = dimensions(target);
    fit(&mut vectors, req.input.len(), expected, req.dimensions).map_err(|e| match e {
        Unfit::Malformed(why) => AttemptError::new(Failure::BrokenBody, why),
        // Not the model's fault as a service: the next model may fit.
        Unfit::WrongDimension(why) => AttemptError::new(Failure::InvalidOutput, why),
    })?;
    Ok(vectors)
}

/// A target's vector length, when its provider's config names it.
pub fn dimensions(target: &Target) -> Option<u32> {
    target.provider.config.models.iter().find(|m| m.id == target.model_ref.model).and_then(|m| m.dimensions)
}

/// The longest vectors `plan` can return when the config names every
/// model's dimension (a `dimensions` above it is the client's mistake).
pub fn known_dimension(plan: &CascadePlan) -> Option<u32> {
    plan.targets.iter().map(dimensions).collect::<Option<Vec<u32>>>()?.into_iter().max()
}

/// Exponential backoff with jitter, as chat's retries have (jitter 0 in tests).
fn backoff(base: Duration, jitter: f64, tries: u32) -> Duration {
    let exp = base.saturating_mul(1 << tries.saturating_sub(1).min(6));
    exp + exp.mul_f64(jitter * fastrand::f64())
}
