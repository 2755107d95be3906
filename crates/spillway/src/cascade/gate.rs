//! The gates a target passes before an attempt: provider and model alive,
//! context large enough, load allows it, breaker admits it, provider
//! bulkhead has room. A target that fails a gate is skipped — recorded in
//! the attempt log and metrics, but no upstream request is spent.

use super::context::Context;
use super::pass::Pass;
use super::plan::Target;
use super::prepare;
use super::walk::Walk;
use crate::health::breaker::{Admission, State};
use crate::health::clock::now_ms;
use crate::outcome::{AttemptError, Failure};
use std::sync::atomic::Ordering;

/// Why a target cannot be tried now, if it cannot; `needed` is the
/// context the request needs (0: no context gate).
fn closed_gate(ctx: &Context<'_>, target: &Target, needed: u64, now: u64) -> Option<AttemptError> {
    if let Some(mark) = target.provider_health.dead.get(now) {
        return Some(AttemptError::new(Failure::SkippedDead, format!("provider dead: {}", mark.reason.as_str())));
    }
    if target.model_ref.model.ends_with(":free") {
        if let Some(mark) = target.provider_health.free_dead.get(now) {
            return Some(AttemptError::new(
                Failure::SkippedDead,
                format!("free tier capped: {}", mark.reason.as_str()),
            ));
        }
    }
    if let Some(mark) = target.health.dead.get(now) {
        let left = mark.until_ms.saturating_sub(now) / 1000;
        return Some(AttemptError::new(Failure::SkippedDead, format!("{} for {left}s more", mark.reason.as_str())));
    }
    if let Some(context) = target.context {
        if context < needed {
            return Some(AttemptError::new(
                Failure::SkippedContext,
                format!("context {context} < {needed} tokens needed"),
            ));
        }
    }
    if prepare::skip_for_load(ctx.load, target) {
        return Some(AttemptError::new(Failure::SkippedLazy, "provider overloaded (skip_when_lazy)"));
    }
    None
}

/// Finds the first target from `start` that passes every gate, recording
/// the skipped ones.
pub fn next_admitted(walk: &Walk<'_>, targets: &[Target], start: usize) -> Option<(usize, Pass)> {
    let needed = walk.req.prompt_tokens.max(walk.min_context.load(Ordering::Relaxed));
    admit(&walk.ctx, targets, start, needed, |target, e| skipped(walk, target, e))
}

/// Whether `targets[i]` passes every gate now (recording it as skipped
/// when it does not): the demotion-aware walk tries targets out of order.
pub fn admit_at(walk: &Walk<'_>, targets: &[Target], i: usize) -> Option<Pass> {
    let needed = walk.req.prompt_tokens.max(walk.min_context.load(Ordering::Relaxed));
    match pass_gates(&walk.ctx, targets.get(i)?, needed) {
        Ok(pass) => Some(pass),
        Err(e) => {
            skipped(walk, &targets[i], &e);
            None
        }
    }
}

/// [`next_admitted`] for any walk (the embedding runner's too): the first
/// target from `start` that passes every gate, each skipped one told to
/// `skip` (which records it).
pub fn admit(
    ctx: &Context<'_>,
    targets: &[Target],
    start: usize,
    needed: u64,
    mut skip: impl FnMut(&Target, &AttemptError),
) -> Option<(usize, Pass)> {
    for (i, target) in targets.iter().enumerate().skip(start) {
        match pass_gates(ctx, target, needed) {
            Ok(pass) => return Some((i, pass)),
            Err(e) => skip(target, &e),
        }
    }
    None
}

/// Whether a target after `target` could still be tried now: alive, large
/// enough, not routed around for load, its breaker closed or due for a
/// probe. Only looks: admits nothing, records nothing. A target that is
/// not one of the walk's own (a continuation's) counts as having some.
pub fn any_after(walk: &Walk<'_>, target: &Target) -> bool {
    let targets = &walk.plan.targets;
    let Some(at) = targets.iter().position(|t| std::ptr::eq(t, target)) else { return true };
    let needed = walk.req.prompt_tokens.max(walk.min_context.load(Ordering::Relaxed));
    let now = now_ms();
    targets[at + 1..].iter().any(|t| {
        closed_gate(&walk.ctx, t, needed, now).is_none()
            && match t.health.breaker_state() {
                State::Closed | State::HalfOpen { probing: false, .. } => true,
                State::Open { until_ms, .. } => now >= until_ms,
                State::HalfOpen { probing: true, .. } => false,
            }
    })
}

/// A retry of `target` (the same model again, after a failed call): a new
/// attempt that must pass the gates again, so a half-open probe that failed
/// (the breaker open again) or a model marked dead by the failure is not
/// called a second time. Not recorded as a skip: the failure that led here
/// is.
pub fn readmit(ctx: &Context<'_>, target: &Target) -> Option<Pass> {
    pass_gates(ctx, target, 0).ok()
}

/// Every gate for one target: its pass, or why it is closed.
fn pass_gates(ctx: &Context<'_>, target: &Target, needed: u64) -> Result<Pass, AttemptError> {
    // One reading of the clock for every gate.
    let now = now_ms();
    if let Some(e) = closed_gate(ctx, target, needed, now) {
        return Err(e);
    }
    // The bulkhead before the breaker: a saturated provider must not
    // consume the one half-open probe.
    let Some(slot) = target.provider.try_acquire() else {
        return Err(AttemptError::new(Failure::Saturated, "provider at max_in_flight"));
    };
    match target.health.admit_at(now, &ctx.health.events) {
        Admission::Reject => {
            let state = target.health.breaker_state();
            Err(AttemptError::new(Failure::SkippedOpen, format!("breaker {}", state.label())))
        }
        Admission::Pass => Ok(Pass::new(slot, None)),
        Admission::Probe => Ok(Pass::new(slot, Some(target.health.clone()))),
    }
}

fn skipped(walk: &Walk<'_>, target: &Target, e: &AttemptError) {
    target.metrics.attempt_failed(&e.failure);
    walk.note(&target.name, e.to_string());
}
