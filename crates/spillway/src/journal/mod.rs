//! The journal of one request: what the request log's line and the
//! request's trace say about it, gathered while the request lives and
//! handed to an [`Outlet`] once, when the last holder lets go of it.
//!
//! A request gets a journal only when the request log or traces are on
//! (`telemetry:`); otherwise every hook below is a `None` check. The
//! front door's handler makes it (`export::Telemetry::begin`), the notes
//! and the chat request carry it, every attempt's settlement adds its
//! attempt (`cascade::settle`), the request's settlement its outcome, the
//! cost meter its tokens, the front door the status. Nothing here waits
//! or does I/O: a short lock around a few fields, and at the end one
//! `try_send` (the outlet's). Everything that formats or writes happens in
//! the export jobs, off the request's path.
//!
//! At the bottom of the layering (it imports nothing of the crate), so
//! that the API's request types, the runner and the server can all hold it.

mod entry;
pub mod trace;

pub use entry::{Attempt, AttemptOutcome, Entry, Event, Line, Usage};
pub use trace::TraceContext;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// Where finished journals go (the request log and the trace exporter).
pub trait Outlet: Send + Sync + 'static {
    /// Takes a finished entry; must not block.
    fn emit(&self, entry: Entry);
}

/// One request's journal; shared (`Arc`) by everything that adds to it.
pub struct Journal {
    outlet: Arc<dyn Outlet>,
    started: Instant,
    entry: Mutex<Entry>,
    /// Prompt and answer content is recorded (`telemetry.capture_content`).
    capture: bool,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Journal")
    }
}

fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl Journal {
    /// A journal of the request `id` that came in at `entry_point` (its
    /// path), traced under `trace` when it is sampled.
    pub fn new(
        outlet: Arc<dyn Outlet>,
        id: &str,
        entry_point: &str,
        trace: Option<TraceContext>,
        capture: bool,
    ) -> Arc<Self> {
        let entry = Entry {
            id: id.to_string(),
            entry_point: entry_point.to_string(),
            start_unix_ns: unix_ns(SystemTime::now()),
            trace,
            ..Entry::default()
        };
        Arc::new(Self { outlet, started: Instant::now(), entry: Mutex::new(entry), capture })
    }

    fn with(&self, f: impl FnOnce(&mut Entry)) {
        f(&mut self.entry.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// How long after the request's start `at` was.
    pub fn since_start(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.started)
    }

    /// Whether prompts and answers are recorded.
    pub fn captures_content(&self) -> bool {
        self.capture
    }

    /// The request's trace, when it is sampled (for the upstream calls'
    /// `traceparent`).
    pub fn trace(&self) -> Option<TraceContext> {
        self.entry.lock().unwrap_or_else(PoisonError::into_inner).trace.clone()
    }

    /// Who sent it: the client key's id (when one is known) and the end
    /// user the client named (`user`).
    pub fn caller(&self, key: Option<String>, user: Option<String>) {
        self.with(|e| {
            e.key = key;
            e.user = user;
        });
    }

    /// What the request asked for: the cascade it resolved to, the model
    /// it named, whether it streams.
    pub fn request(&self, cascade: &str, model: &str, stream: bool, operation: &'static str) {
        self.with(|e| {
            e.cascade = Some(cascade.to_string());
            e.requested_model = Some(model.to_string());
            e.stream = stream;
            e.operation = operation;
        });
    }

    /// The prompt, when content is recorded.
    pub fn prompt(&self, messages: impl FnOnce() -> Option<String>) {
        if self.capture {
            let m = messages();
            self.with(|e| e.prompt = m);
        }
    }

    /// The answer's text so far, when content is recorded (a continued
    /// stream's parts are appended).
    pub fn answer(&self, text: &str) {
        if self.capture && !text.is_empty() {
            self.with(|e| e.answer.get_or_insert_with(String::new).push_str(text));
        }
    }

    /// An attempt settled.
    pub fn attempt(&self, mut a: Attempt) {
        self.with(|e| {
            if let (AttemptOutcome::Answered, Some(ttft)) = (a.outcome, a.ttft) {
                e.ttft.get_or_insert(a.start + ttft);
            }
            if a.continuation.is_some() {
                e.continued = true;
            }
            a.events.shrink_to_fit();
            e.attempts.push(a);
        });
    }

    /// The request settled: `ok`, `handoff` or `error`.
    pub fn outcome(&self, outcome: &'static str) {
        self.with(|e| e.outcome = Some(outcome));
    }

    /// What answered, as the response headers say it.
    pub fn served(&self, s: Served<'_>) {
        self.with(|e| {
            e.answered_by = Some(s.model.to_string());
            e.tier = Some(s.tier);
            e.rank = s.rank;
            e.load_profile = s.load_profile.map(str::to_string);
            e.handoff_id = s.handoff_id.map(str::to_string);
            e.escalated = s.escalated;
        });
    }

    /// Tokens an answer used and what they cost (`None`: unpriced).
    pub fn usage(&self, input: u64, output: u64, cost_usd: Option<f64>) {
        self.with(|e| {
            let u = e.usage.get_or_insert_with(Usage::default);
            u.input += input;
            u.output += output;
            if let Some(c) = cost_usd {
                *u.cost_usd.get_or_insert(0.0) += c;
            }
        });
    }

    /// A finish reason of the answer (`stop`, `length`, `tool_calls`, …).
    pub fn finish_reason(&self, reason: &str) {
        self.with(|e| {
            if !e.finish_reasons.iter().any(|r| r == reason) && e.finish_reasons.len() < 8 {
                e.finish_reasons.push(reason.to_string());
            }
        });
    }

    /// The status of the response and, for an error, its message.
    pub fn status(&self, status: u16, error: Option<String>) {
        self.with(|e| {
            e.status = Some(status);
            if error.is_some() {
                e.error = error;
            }
        });
    }
}

/// What answered a request ([`Journal::served`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Served<'a> {
    pub model: &'a str,
    pub tier: &'static str,
    pub rank: Option<usize>,
    pub load_profile: Option<&'a str>,
    pub handoff_id: Option<&'a str>,
    pub escalated: bool,
}

impl Drop for Journal {
    fn drop(&mut self) {
        let mut entry = std::mem::take(self.entry.get_mut().unwrap_or_else(PoisonError::into_inner));
        entry.latency = self.started.elapsed();
        self.outlet.emit(entry);
    }
}

#[cfg(test)]
mod tests;
