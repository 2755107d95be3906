//! The runner's loop: for one request, walk the cascade's targets in order
//! until one answers, keeping every attempt's reason.

use super::attempt::{self, Answer, Attempted};
use super::context::Context;
use super::json::JsonPlan;
use super::order::Cursor;
use super::plan::CascadePlan;
use super::served::{NoAnswer, Served, ServedBody, Unanswered};
use super::settle::{Finish, RequestOutcome};
use super::stream::Forward;
use super::walk::Walk;
use crate::api::wire::Stamp;
use crate::api::{ApiError, ChatRequest};
use crate::outcome::{AttemptError, Failure};
use crate::quality::Signals;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::time::Instant;

/// Serves one request through its cascade: the answer, or why there is none.
pub async fn run(ctx: Context<'_>, plan: &Arc<CascadePlan>, req: &ChatRequest) -> Result<Served, Unanswered> {
    let started = Instant::now();
    let finish = Finish::new(plan.metrics.clone(), started, req.journal.as_ref());
    let json = match JsonPlan::of(req, ctx.schemas) {
        Ok(json) => json,
        Err(e) => return Err(Unanswered { why: NoAnswer::Invalid(e), attempts: Vec::new(), calls: 0, finish }),
    };
    let walk = Walk {
        ctx,
        plan,
        req,
        deadline: started + ctx.rules.timeouts.total,
        calls: AtomicU32::new(0),
        log: Mutex::new(Vec::new()),
        min_context: AtomicU64::new(0),
        refused_context: AtomicU32::new(0),
        json,
    };
    let mut cursor = Cursor::new(plan);
    let mut first = true;
    loop {
        // (The first turn starts where the deadline was set.)
        if !std::mem::take(&mut first) && Instant::now() >= walk.deadline {
            break;
        }
        let Some((i, pass)) = cursor.next(&walk) else {
            break;
        };
        // The attempt's future is made where it is awaited: bound to a local
        // first, it would take its size twice in this future's state.
        let attempted = match plan.hedge_after {
            None => attempt::run(&walk, i, pass).await,
            Some(after) => {
                let primary = attempt::run(&walk, i, pass);
                // Boxed: two attempts side by side would double the size of
                // every request's future, hedged or not.
                let (attempted, hedged_to) = Box::pin(attempt::hedged(&walk, i, primary, after)).await;
                if let Some(j) = hedged_to {
                    cursor.tried(j);
                }
                attempted
            }
        };
        for (target, error) in attempted.failures {
            walk.note(&target.name, error.to_string());
            if let Some(rejected) = rejected(&walk, target, error) {
                return Err(unanswered(walk, NoAnswer::Rejected(rejected), finish));
            }
        }
        if let Some(win) = attempted.winner {
            return Ok(serve(&walk, win, finish));
        }
    }
    // Past `timeouts.total` the models may only be slow, not dead.
    let why = if Instant::now() >= walk.deadline {
        NoAnswer::TimedOut
    } else if let Some(too_long) = beyond_every_context(&walk) {
        NoAnswer::Rejected(too_long)
    } else {
        NoAnswer::AllFailed
    };
    Err(unanswered(walk, why, finish))
}

/// The client's error when no model of the cascade can ever take the
/// prompt: every target's known context is below what the prompt needs,
/// or the target refused it as too long. Retrying cannot help, so it is a
/// 400 `context_length_exceeded`, not a 503 with `Retry-After`.
fn beyond_every_context(walk: &Walk<'_>) -> Option<ApiError> {
    let targets = &walk.plan.targets;
    let needed = walk.req.prompt_tokens.max(walk.min_context.load(Ordering::Relaxed));
    let small = targets.iter().filter(|t| t.context.is_some_and(|c| c < needed)).count();
    let refused = walk.refused_context.load(Ordering::Relaxed) as usize;
    if targets.is_empty() || small + refused < targets.len() {
        return None;
    }
    Some(ApiError::ContextLengthExceeded {
        cascade: walk.plan.name.clone(),
        tokens: walk.req.prompt_tokens,
        largest: targets.iter().filter_map(|t| t.context).max(),
    })
}

fn unanswered(walk: Walk<'_>, why: NoAnswer, finish: Finish) -> Unanswered {
    let calls = walk.calls.load(Ordering::Relaxed);
    let attempts = walk.log.into_inner().unwrap_or_else(PoisonError::into_inner);
    Unanswered { why, attempts, calls, finish }
}

/// What a failure means for the walk (its health effects were settled with
/// the attempt): the client's own error to return as is, or go on — with
/// only larger models after a context-length rejection.
fn rejected(walk: &Walk<'_>, target: &super::plan::Target, error: AttemptError) -> Option<ApiError> {
    match error.failure {
        Failure::ContextLength => {
            if target.context.is_none() {
                walk.refused_context.fetch_add(1, Ordering::Relaxed);
            }
            let floor = target.context.map(|c| c + 1).unwrap_or(walk.req.prompt_tokens);
            walk.min_context.fetch_max(floor, Ordering::Relaxed);
            None
        }
        Failure::InvalidRequest { status, body } => {
            Some(ApiError::UpstreamRejected { status, body, message: format!("{}: {}", target.name, error.detail) })
        }
        _ => None,
    }
}

/// Turns the winning attempt into the client's response. A whole answer is
/// settled here; a stream settles where it ends (see [`Forward`]).
fn serve(walk: &Walk<'_>, win: Attempted<'_>, finish: Finish) -> Served {
    let Attempted { target, answer, mut ticket, load_profile, upstream_request_id } = win;
    let mut quality = Signals::NONE;
    let body = match answer {
        Answer::Complete(c) => {
            // Stamped (our id, `model` = the model ref) and validated in the attempt.
            if let Some(j) = ticket.journal() {
                note_answer(j, &c);
            }
            quality = ticket.judge_completion(&c);
            ticket.answered();
            finish.settle(RequestOutcome::Ok);
            ServedBody::Complete(c)
        }
        Answer::Stream { head, rest } => {
            let idle = walk.ctx.rules.timeouts.idle;
            let stamp = Stamp::new(target.name.clone());
            let req = walk.req;
            ServedBody::Forward(Forward::new(
                head,
                rest,
                stamp,
                idle,
                walk.deadline,
                req.include_usage,
                req.prompt_tokens,
                ticket,
                finish,
            ))
        }
    };
    Served {
        prompt_tokens: walk.req.prompt_tokens,
        cascade: walk.plan.name.clone(),
        model: target.name.clone(),
        tier: target.tier,
        rank: Some(target.rank),
        attempts: walk.calls.load(Ordering::Relaxed),
        load_profile,
        upstream_request_id,
        handoff_id: None,
        escalated: false,
        quality,
        body,
    }
}

/// A whole answer's finish reasons and (when content is recorded) its
/// text, for the request's journal: read from the body, only when the
/// request has a journal.
fn note_answer(journal: &crate::journal::Journal, c: &crate::api::completion::Completion) {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&c.to_bytes()) else { return };
    for choice in v.get("choices").and_then(serde_json::Value::as_array).into_iter().flatten() {
        if let Some(reason) = choice.get("finish_reason").and_then(serde_json::Value::as_str) {
            journal.finish_reason(reason);
        }
    }
    if let Some(text) = v.pointer("/choices/0/message/content").and_then(serde_json::Value::as_str) {
        journal.answer(text);
    }
}
