//! The request's own settlement: [`Finish`] records how the request as a
//! whole ended (`spillway_requests_total`, its duration) exactly once.

use crate::journal::Journal;
use crate::metrics::CascadeMetrics;
use std::sync::Arc;
use tokio::time::Instant;

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
