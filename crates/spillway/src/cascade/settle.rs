//! Where an attempt's outcome is settled: exactly once, whether its answer
//! was whole or streamed.
//!
//! Every attempt that passes the gates gets a [`Ticket`], which holds its
//! gate pass (bulkhead slot, half-open probe) for as long as the attempt
//! lives — through the stream it may become. The ticket is settled once:
//! a whole answer when it has been checked, a stream when it ends cleanly
//! (finish reason and `[DONE]`), a failure wherever it happens (before the
//! first token or after it: cut, stalled past `timeouts.idle`, in-band
//! error). A ticket dropped unsettled — the client went away, a hedge lost
//! — is abandoned: neither a success nor a failure of the model.
//!
//! That one settlement is the only thing that reports an attempt's outcome:
//! the breaker and its probe, dead marks, TTFT samples (and through the
//! health registry's observer the shared state store), and the attempt and
//! served metrics. [`Finish`] does the same for the request as a whole
//! (`spillway_requests_total`, its duration).

use super::pass::Pass;
use super::plan::{CascadePlan, Target};
use crate::config::BreakerConfig;
use crate::health::clock::now_ms;
use crate::health::{DeadReason, HealthRegistry};
use crate::journal::{Attempt, AttemptOutcome, Journal};
use crate::metrics::CascadeMetrics;
use crate::outcome::{AttemptError, Failure};
use crate::quality::text::PromptFacts;
use crate::quality::Signals;
use std::sync::Arc;
use tokio::time::{Duration, Instant};

/// How an attempt ended.
#[derive(Debug)]
pub enum Settled<'e> {
    /// A whole answer passed its checks, or a stream ended cleanly.
    Answered,
    /// It failed, before or after its first token.
    Failed(&'e AttemptError),
    /// Dropped unsettled: the client disconnected or a hedge won.
    Abandoned,
}

/// The health rules a settlement applies, copied from the config the
/// attempt started under (a reload mid-stream does not change them).
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    pub breaker: BreakerConfig,
    pub dead_ttl: Duration,
}

/// One attempt in flight; see the module docs.
pub struct Ticket {
    plan: Arc<CascadePlan>,
    index: usize,
    health: Arc<HealthRegistry>,
    rules: Rules,
    pass: Pass,
    started: Instant,
    first_token: Option<Duration>,
    /// A successful answer's headers said the quota is used up for this long.
    exhausted: Option<Duration>,
    /// Set when the target's cascade judges quality: what the text judge
    /// needs, and the signals noted so far.
    judging: Option<Judging>,
    settled: bool,
    /// The request's journal, and what this attempt adds to it.
    journal: Option<Noted>,
}

/// What a journaled attempt records besides its outcome.
struct Noted {
    journal: Arc<Journal>,
    span_id: [u8; 8],
    continuation: Option<&'static str>,
    load_profile: Option<String>,
    events: Vec<crate::journal::Event>,
}

/// What the quality judge is told of a request (`Ticket::judge_for`).
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// The request's id: its answer can be rated (`POST /v1/feedback`).
    pub request_id: Option<crate::telemetry::RequestId>,
    /// What the judge needs of the prompt.
    pub prompt: PromptFacts,
    /// The content must be JSON (not judged for its script).
    pub json: bool,
    /// The tools' schemas, for a stream whose tool calls are forwarded
    /// unchecked: judged at its end.
    pub tools: Option<Arc<std::collections::HashMap<String, crate::normalize::Expected>>>,
    /// The request's shape: a refusal counts only where the cascade
    /// usually answers it (`health::refusals`).
    pub shape: crate::quality::shape::Shape,
    /// Who made the request: the only caller that may rate its answer.
    pub owner: crate::health::feedback::Owner,
}

/// What a ticket knows for the quality judge (`cascades.*.quality`).
#[derive(Debug, Clone)]
struct Judging {
    asked: Asked,
    signals: Signals,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Ticket {
    /// A ticket for `plan.targets[index]`, holding the pass its gate gave.
    /// The target's own breaker rules (`cascades.*.breakers`,
    /// `providers.*.breaker`) replace `rules.breaker` where it has them.
    pub fn new(
        plan: &Arc<CascadePlan>,
        index: usize,
        health: &Arc<HealthRegistry>,
        rules: Rules,
        pass: Pass,
        journal: Option<&Arc<Journal>>,
    ) -> Self {
        plan.targets[index].metrics.in_flight.inc();
        let mut rules = rules;
        if let Some(b) = plan.targets.get(index).and_then(|t| t.breaker) {
            rules.breaker = b;
        }
        Self {
            plan: plan.clone(),
            index,
            health: health.clone(),
            rules,
            pass,
            started: Instant::now(),
            first_token: None,
            exhausted: None,
            judging: None,
            settled: false,
            journal: journal.map(|j| Noted {
                journal: j.clone(),
                span_id: crate::journal::trace::new_span_id(),
                continuation: None,
                load_profile: None,
                events: Vec::new(),
            }),
        }
    }

    /// The request's journal, when it has one.
    pub fn journal(&self) -> Option<&Arc<Journal>> {
        self.journal.as_ref().map(|n| &n.journal)
    }

    /// The `traceparent` this attempt's upstream call carries, when the
    /// request is part of a trace.
    pub fn traceparent(&self) -> Option<String> {
        let n = self.journal.as_ref()?;
        Some(n.journal.trace()?.upstream(&n.span_id))
    }

    /// This attempt continues a broken stream, in `mode`.
    pub fn continuing(&mut self, mode: &'static str) {
        if let Some(n) = self.journal.as_mut() {
            n.continuation = Some(mode);
        }
    }

    /// The load profile applied to this attempt's request.
    pub fn load_profile(&mut self, profile: Option<&str>) {
        if let Some(n) = self.journal.as_mut() {
            n.load_profile = profile.map(str::to_string);
        }
    }

    /// Something this attempt's settlement did, for its span's events.
    fn event(&mut self, name: &'static str, attributes: Vec<(&'static str, String)>) {
        if let Some(n) = self.journal.as_mut() {
            let at = n.journal.since_start(Instant::now());
            n.events.push(crate::journal::Event { name, at, attributes });
        }
    }

    /// Adds the settled attempt to the request's journal.
    fn journal_attempt(&mut self, outcome: AttemptOutcome, error: Option<&AttemptError>) {
        let Some(n) = self.journal.take() else { return };
        let target = &self.plan.targets[self.index];
        let end = n.journal.since_start(Instant::now());
        n.journal.attempt(Attempt {
            model: target.name.clone(),
            provider: target.model_ref.provider.clone(),
            provider_kind: target.provider.config.kind.as_str(),
            rank: target.rank,
            outcome,
            reason: error.map(|e| e.failure.reason()),
            detail: error.map(ToString::to_string),
            start: n.journal.since_start(self.started),
            end,
            ttft: self.first_token,
            continuation: n.continuation,
            load_profile: n.load_profile,
            span_id: n.span_id,
            events: n.events,
        });
    }

    /// The target this attempt calls.
    pub fn target(&self) -> &Target {
        &self.plan.targets[self.index]
    }

    /// The target's position in its cascade.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The first token (or the whole answer) arrived now; returns the time
    /// it took. Recorded with the outcome when the attempt settles.
    pub fn first_token(&mut self, exhausted: Option<Duration>) -> Duration {
        let ttft = self.started.elapsed();
        self.first_token = Some(ttft);
        self.exhausted = exhausted;
        ttft
    }

    /// Judges this attempt's answer for quality when its cascade asks for
    /// it; `asked` is called only then.
    pub fn judge_for(&mut self, asked: impl FnOnce() -> Asked) {
        if self.target().quality.is_some() {
            self.judging = Some(Judging { asked: asked(), signals: Signals::NONE });
        }
    }

    /// Whether the answer's streamed tool calls are to be judged (the
    /// request offered tools and the stream forwards them unchecked).
    pub fn judges_calls(&self) -> bool {
        self.judging.as_ref().is_some_and(|j| j.asked.tools.is_some())
    }

    /// Judges a stream's tool calls (name, arguments) at its end.
    pub fn judge_calls(&mut self, calls: &[(String, String)]) {
        let Some(j) = self.judging.as_mut() else { return };
        if let Some(tools) = &j.asked.tools {
            j.signals.extend(super::json::judge_streamed_calls(calls, tools));
        }
    }

    /// Whether the answer is being judged for quality.
    pub fn judging(&self) -> bool {
        self.judging.is_some()
    }

    /// Notes quality signals found while the answer was checked.
    pub fn note(&mut self, signals: Signals) {
        if let Some(j) = self.judging.as_mut() {
            j.signals.extend(signals);
        }
    }

    /// Runs the text judge over the answer's final text (once, at its
    /// end); returns every signal noted so far.
    pub fn judge_text(&mut self, content: &str, tool_called: bool, refusal: bool) -> Signals {
        let (Some(rule), Some(shape)) = (self.target().quality, self.judging.as_ref().map(|j| j.asked.shape)) else {
            return Signals::NONE;
        };
        let text = rule.text;
        // Every judged answer adds to its shape's base rate; a refusal is
        // a signal only where the shape was usually answered before it.
        let refusal = self.health.refusals.record(&self.plan.name, shape, refusal, rule.window);
        let Some(j) = self.judging.as_mut() else { return Signals::NONE };
        let answer = crate::quality::text::Answer { content, tool_called, refusal, json: j.asked.json };
        j.signals.extend(crate::quality::text::judge(&answer, j.asked.prompt, text));
        j.signals
    }

    /// Judges a whole answer; returns its signals (see [`Self::judge_text`]).
    pub fn judge_completion(&mut self, c: &crate::api::completion::Completion) -> Signals {
        if self.judging.is_none() {
            return Signals::NONE;
        }
        let first = c.first_choice();
        self.judge_text(&first.content, first.tool_called, first.refusal)
    }

    /// Settles the attempt as answered.
    pub fn answered(mut self) {
        self.settle(Settled::Answered);
    }

    /// Settles the attempt as failed.
    pub fn failed(mut self, error: &AttemptError) {
        self.settle(Settled::Failed(error));
    }

    /// The one place an attempt's outcome is reported.
    fn settle(&mut self, how: Settled<'_>) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        let target = &self.plan.targets[self.index];
        target.metrics.in_flight.dec();
        let health = &target.health;
        let now = now_ms();
        if let Some(ttft) = self.first_token {
            health.record_ttft(ttft.as_secs_f64() * 1000.0);
            target.metrics.ttft.observe(ttft.as_secs_f64());
        }
        if let Some(reset) = self.exhausted {
            tracing::info!(model = %target.name, reset_ms = ms(reset), "Quota used up: skipping the model until it resets.");
            health.mark_dead(now + ms(reset), DeadReason::QuotaUsedUp);
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

    /// Counts the answer's signals and feeds the model's quality window.
    fn record_quality(&self) {
        let target = &self.plan.targets[self.index];
        let (Some(j), Some(rule)) = (self.judging.as_ref(), target.quality.as_ref()) else { return };
        target.metrics.quality(j.signals);
        target.health.record_quality(j.signals, rule, &self.health.events);
        if let Some(id) = &j.asked.request_id {
            let judged = crate::health::registry::Judged {
                model: target.health.clone(),
                rule: *rule,
                metrics: target.metrics.clone(),
                owner: j.asked.owner.clone(),
            };
            self.health.recent.keep(id.shared(), judged);
        }
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

impl Drop for Ticket {
    fn drop(&mut self) {
        self.settle(Settled::Abandoned);
    }
}

/// How a request ended, for `spillway_requests_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestOutcome {
    /// A model's answer reached its end.
    Ok,
    /// Queued for a person.
    Handoff,
    /// An error status, or a stream that failed after its first byte.
    Error,
}

/// A request's own settlement: its outcome and duration, recorded once —
/// when the answer is whole, when the stream ends, or (dropped unsettled)
/// as a client disconnect.
pub struct Finish {
    metrics: Arc<CascadeMetrics>,
    started: Instant,
    settled: bool,
    journal: Option<Arc<Journal>>,
}

impl Finish {
    /// Starts the request's clock.
    pub fn new(metrics: Arc<CascadeMetrics>, started: Instant, journal: Option<&Arc<Journal>>) -> Self {
        Self { metrics, started, settled: false, journal: journal.cloned() }
    }

    /// When the request started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Records the outcome and the duration (once).
    pub fn settle(mut self, outcome: RequestOutcome) {
        self.record(Some(outcome));
    }

    fn record(&mut self, outcome: Option<RequestOutcome>) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        let counter = match outcome {
            Some(RequestOutcome::Ok) => &self.metrics.ok,
            Some(RequestOutcome::Handoff) => &self.metrics.handoff,
            Some(RequestOutcome::Error) => &self.metrics.error,
            None => &self.metrics.disconnected,
        };
        counter.inc();
        self.metrics.duration.observe(self.started.elapsed().as_secs_f64());
        if let (Some(j), Some(o)) = (self.journal.take(), outcome) {
            j.outcome(match o {
                RequestOutcome::Ok => "ok",
                RequestOutcome::Handoff => "handoff",
                RequestOutcome::Error => "error",
            });
        }
    }
}

impl Drop for Finish {
    fn drop(&mut self) {
        self.record(None);
    }
}
