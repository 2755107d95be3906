//! The one settlement of an attempt ([`Ticket::settle`]): the breaker and
//! its probe, dead marks, TTFT, metrics and the journal, all read from how
//! the attempt ended; and what each failure does to health.

use super::{ms, Settled, Ticket};
use crate::health::clock::now_ms;
use crate::health::DeadReason;
use crate::journal::AttemptOutcome;
use crate::outcome::{AttemptError, Failure};
use tokio::time::Duration;

impl Ticket {
    /// The one place an attempt's outcome is reported.
    pub(super) fn settle(&mut self, how: Settled<'_>) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        let target = &self.plan.targets[self.index];
        target.metrics.in_flight.dec();
        let health = &target.health;
        if let Some(ttft) = self.first_token {
            health.record_ttft(ttft.as_secs_f64() * 1000.0);
            target.metrics.ttft.observe(ttft.as_secs_f64());
        }
        if let Some(reset) = self.exhausted {
            tracing::info!(model = %target.name, reset_ms = ms(reset), "Quota used up: skipping the model until it resets.");
            health.mark_dead(now_ms() + ms(reset), DeadReason::QuotaUsedUp);
        }
        let quota_used_up = self.exhausted.is_some();
        let breaker_before = self.journal.as_ref().map(|_| breaker_word(health.breaker_state()));
        let (outcome, error) = match how {
            Settled::Answered => {
                target.metrics.attempt_ok();
                target.metrics.served(target.tier.index());
                health.success(&self.rules.breaker, &self.health.events);
                self.pass.settle();
                self.record_quality();
                (AttemptOutcome::Answered, None)
            }
            Settled::Failed(error) => {
                // (The clock is read only here: an answered attempt needs no time.)
                let now = now_ms();
                target.metrics.attempt_failed(&error.failure);
                health.note_error(now, &error.to_string());
                // An answer that failed its JSON check or broke mid-stream
                // is a bad answer too; other failures are the breaker's.
                if self.judging.as_ref().is_some_and(|j| !j.signals.is_empty()) {
                    self.record_quality();
                }
                if self.judge(error, now) {
                    self.pass.settle();
                }
                if let Some(reason) = self.journal.as_ref().and_then(|_| dead_reason(&error.failure)) {
                    let model = self.plan.targets[self.index].name.clone();
                    self.event("dead_mark", vec![("reason", reason.into()), ("model", model)]);
                }
                (AttemptOutcome::Failed, Some(error))
            }
            Settled::Abandoned => {
                tracing::debug!(model = %target.name, "Attempt abandoned (client gone or hedge lost); not counted.");
                (AttemptOutcome::Abandoned, None)
            }
        };
        if quota_used_up {
            let model = self.plan.targets[self.index].name.clone();
            self.event("dead_mark", vec![("reason", DeadReason::QuotaUsedUp.as_str().into()), ("model", model)]);
        }
        if let Some(before) = breaker_before {
            let after = breaker_word(self.plan.targets[self.index].health.breaker_state());
            if after != before {
                let model = self.plan.targets[self.index].name.clone();
                self.event("breaker_transition", vec![("from", before.into()), ("to", after.into()), ("model", model)]);
            }
        }
        self.journal_attempt(outcome, error);
    }

    /// What a failure does to health (SPEC §6's table); true when the
    /// breaker recorded it (so a half-open probe is spent, not released).
    fn judge(&self, error: &AttemptError, now: u64) -> bool {
        let target = &self.plan.targets[self.index];
        let dead_until = |d: Option<Duration>| now + ms(d.unwrap_or(self.rules.dead_ttl));
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
                    self.health.cap_free_tier(&target.model_ref.provider, until, DeadReason::QuotaExhausted);
                }
            }
            Failure::Forbidden => target.health.mark_dead(dead_until(None), DeadReason::Forbidden),
            Failure::NotFound => target.health.mark_dead(dead_until(None), DeadReason::NotFound),
            Failure::Empty => target.health.mark_dead(dead_until(None), DeadReason::Empty),
            Failure::AuthRejected => self.health.reject_key(&target.model_ref.provider, dead_until(None)),
            f if f.is_breaker_failure() => {
                target.health.failure(&self.rules.breaker, &self.health.events);
                return true;
            }
            _ => {}
        }
        false
    }
}

/// A breaker state in one word (span events).
fn breaker_word(state: crate::health::breaker::State) -> &'static str {
    use crate::health::breaker::State;
    match state {
        State::Closed => "closed",
        State::Open { .. } => "open",
        State::HalfOpen { .. } => "half_open",
    }
}

/// The dead mark [`Ticket::judge`] sets for `failure`, if any (its reason).
fn dead_reason(failure: &Failure) -> Option<&'static str> {
    let reason = match failure {
        Failure::RateLimited { .. } => DeadReason::RateLimited,
        Failure::QuotaExhausted => DeadReason::QuotaExhausted,
        Failure::Forbidden => DeadReason::Forbidden,
        Failure::NotFound => DeadReason::NotFound,
        Failure::Empty => DeadReason::Empty,
        Failure::AuthRejected => return Some("auth_rejected"),
        _ => return None,
    };
    Some(reason.as_str())
}
