//! Judging attempts: what each outcome does to health, metrics and the
//! attempt log (SPEC §6's table), and whether the walk goes on.

use super::attempt::Failed;
use super::{Target, Walk};
use crate::api::ApiError;
use crate::health::clock::now_ms;
use crate::health::DeadReason;
use crate::outcome::Failure;
use std::sync::atomic::Ordering;
use tokio::time::Duration;

/// What the runner does after a failed attempt.
pub enum Verdict {
    /// Try the next model.
    Next,
    /// The client's request is wrong: answer with this, call nothing else.
    ReturnToClient(ApiError),
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Records an answer's first token (or whole answer): TTFT, metrics, and
/// a dead mark when the answer itself said the quota is used up (so the
/// next request does not spend a call to discover the 429). The breaker
/// hears of it from [`breaker_success`] once the answer is complete.
pub fn answered(walk: &Walk<'_>, target: &Target, ttft: Duration, exhausted: Option<Duration>) {
    target.health.record_ttft(ttft.as_secs_f64() * 1000.0);
    target.metrics.ttft.observe(ttft.as_secs_f64());
    target.metrics.attempt_ok();
    target.metrics.served(target.tier.index());
    if let Some(reset) = exhausted {
        tracing::info!(model = %target.name, reset_ms = ms(reset), "Quota used up: skipping the model until it resets.");
        target.health.mark_dead(now_ms() + ms(reset), DeadReason::QuotaUsedUp);
    }
    let _ = walk;
}

/// Records a complete answer with the breaker.
pub fn breaker_success(walk: &Walk<'_>, target: &Target) {
    target.health.success(&walk.gw.config.health.breaker, &walk.gw.health.events);
}

/// Records a failed attempt and decides what happens next.
pub fn failure(walk: &Walk<'_>, target: &Target, failed: Failed) -> Verdict {
    let Failed { error, mut pass } = failed;
    // An unsettled probe pass is released when `pass` drops at the end.
    let gw = walk.gw;
    let h = &gw.config.health;
    let now = now_ms();
    target.metrics.attempt_failed(&error.failure);
    walk.note(&target.name, error.to_string());
    tracing::debug!(model = %target.name, reason = %error, "Attempt failed.");
    let dead_until = |d: Option<Duration>| now + ms(d.unwrap_or(h.dead_ttl));
    match &error.failure {
        Failure::RateLimited { retry_after } => {
            target.health.mark_dead(dead_until(*retry_after), DeadReason::RateLimited);
        }
        Failure::QuotaExhausted => {
            let until = dead_until(None);
            target.health.mark_dead(until, DeadReason::QuotaExhausted);
            // A free-tier cap is per account (OpenRouter): every `:free`
            // model of the provider is capped with it.
            if target.model_ref.model.ends_with(":free") {
                gw.health.cap_free_tier(&target.model_ref.provider, until, DeadReason::QuotaExhausted);
            }
        }
        Failure::Forbidden => {
            target.health.mark_dead(dead_until(None), DeadReason::Forbidden);
        }
        Failure::NotFound => {
            target.health.mark_dead(dead_until(None), DeadReason::NotFound);
        }
        Failure::Empty => {
            target.health.mark_dead(dead_until(None), DeadReason::Empty);
        }
        Failure::AuthRejected => gw.health.reject_key(&target.model_ref.provider, dead_until(None)),
        Failure::ContextLength => {
            // Only models with a larger context are worth trying now.
            let floor = target.context.map(|c| c + 1).unwrap_or(walk.prompt_tokens);
            walk.min_context.fetch_max(floor, Ordering::Relaxed);
        }
        Failure::InvalidRequest { status, body } => {
            return Verdict::ReturnToClient(ApiError::UpstreamRejected {
                status: *status,
                body: body.clone(),
                message: format!("{}: {}", target.name, error.detail),
            });
        }
        f if f.is_breaker_failure() => {
            target.health.failure(&h.breaker, &gw.health.events);
            pass.settle();
        }
        _ => {}
    }
    Verdict::Next
}
