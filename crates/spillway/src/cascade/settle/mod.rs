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
//!
//! - `judge`: what the quality judge is told and how an answer is judged.
//! - `outcome`: the settlement itself, what a failure does to health.
//! - `finish`: the request's own settlement ([`Finish`]).
//! - this file: the [`Ticket`] and what it carries.

mod finish;
mod judge;
mod outcome;

pub use finish::{Finish, RequestOutcome};
pub use judge::Asked;
use judge::Judging;

use super::pass::Pass;
use super::plan::{CascadePlan, Target};
use crate::config::BreakerConfig;
use crate::health::HealthRegistry;
use crate::journal::{Attempt, AttemptOutcome, Journal};
use crate::outcome::AttemptError;
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

    /// When the attempt started (its ticket was made, just before its call).
    pub fn started(&self) -> Instant {
        self.started
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

    /// Settles the attempt as answered.
    pub fn answered(mut self) {
        self.settle(Settled::Answered);
    }

    /// Settles the attempt as failed.
    pub fn failed(mut self, error: &AttemptError) {
        self.settle(Settled::Failed(error));
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.settle(Settled::Abandoned);
    }
}
