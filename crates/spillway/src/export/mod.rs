//! Where request journals go once their request is over: the request log
//! (one JSON line per request, [`log`]) and OpenTelemetry traces over
//! OTLP/HTTP ([`otlp`]).
//!
//! [`Telemetry`] is opened once per process from the starting config
//! (`telemetry:`; a reload that changes it says it needs a restart). It
//! makes each request's [`Journal`] — only when the log or traces are on,
//! and for traces only when the request is sampled — and is the journals'
//! [`Outlet`]: a finished entry is put on a bounded queue per signal with
//! `try_send`, and a full queue drops it and counts it in
//! `spillway_telemetry_dropped_total`. The writer and the exporter are
//! background jobs; a slow disk or a collector that is down costs a
//! request one failed `try_send`, never a wait.

pub mod log;
pub mod otlp;

use crate::config::TelemetryConfig;
use crate::journal::trace::{parse_traceparent, usable_tracestate};
use crate::journal::{Entry, Journal, Outlet, TraceContext};
use crate::metrics::Metrics;
use crate::supervisor::Supervisor;
use prometheus_client::metrics::counter::Counter;
use std::sync::{Arc, OnceLock};
use tokio::sync::mpsc;

/// The process's telemetry; see the module docs.
#[derive(Default)]
pub struct Telemetry {
    outlets: OnceLock<Arc<Outlets>>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Telemetry")
    }
}

/// A queue to one job, and what it dropped.
struct Queue {
    tx: mpsc::Sender<Arc<Entry>>,
    dropped: Counter,
}

impl Queue {
    fn offer(&self, entry: &Arc<Entry>, items: u64) {
        if self.tx.try_send(entry.clone()).is_err() {
            self.dropped.inc_by(items);
        }
    }
}

struct Outlets {
    log: Option<Queue>,
    spans: Option<Queue>,
    sample_ratio: f64,
    capture: bool,
}

impl Outlet for Outlets {
    fn emit(&self, entry: Entry) {
        let traced = entry.trace.as_ref().is_some_and(|t| t.sampled);
        let entry = Arc::new(entry);
        if let Some(q) = &self.log {
            q.offer(&entry, 1);
        }
        if let Some(q) = self.spans.as_ref().filter(|_| traced) {
            // The request's span and one per attempt.
            q.offer(&entry, 1 + entry.attempts.len() as u64);
        }
    }
}

impl Telemetry {
    /// Starts the request log's writer and the trace exporter that
    /// `config` asks for, under `supervisor`; a second call does nothing.
    pub fn open(&self, config: &TelemetryConfig, metrics: &Metrics, supervisor: &Supervisor) {
        if config.request_log.is_none() && config.otlp.is_none() {
            return;
        }
        let mut outlets = Outlets { log: None, spans: None, sample_ratio: 1.0, capture: config.capture_content };
        let mut jobs = Vec::new();
        if let Some(c) = &config.request_log {
            let (tx, rx) = mpsc::channel(c.queue);
            outlets.log = Some(Queue { tx, dropped: metrics.telemetry.dropped("request_log") });
            jobs.push(Job::Log(log::RequestLog::new(c.clone(), rx, metrics.telemetry.failures("request_log"))));
        }
        if let Some(c) = &config.otlp {
            let (tx, rx) = mpsc::channel(c.queue);
            outlets.spans = Some(Queue { tx, dropped: metrics.telemetry.dropped("spans") });
            outlets.sample_ratio = c.sample_ratio;
            jobs.push(Job::Otlp(otlp::Exporter::new(c.clone(), rx, metrics.telemetry.failures("spans"))));
        }
        if self.outlets.set(Arc::new(outlets)).is_err() {
            return;
        }
        for job in jobs {
            match job {
                Job::Log(j) => supervisor.spawn(j),
                Job::Otlp(j) => supervisor.spawn(j),
            }
        }
    }

    /// A journal for the request `id` that came in at `path` with
    /// `headers`, when anything will read it: the request log, or traces
    /// for a sampled request (the client's `traceparent` decides; without
    /// one, `sample_ratio`) or one whose client's trace must go on upstream.
    pub fn begin(&self, id: &str, path: &str, headers: &http::HeaderMap) -> Option<Arc<Journal>> {
        let outlets = self.outlets.get()?;
        let trace = outlets.spans.as_ref().and_then(|_| {
            let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
            let parent = text("traceparent").and_then(parse_traceparent);
            let sampled = parent.map_or_else(|| fastrand::f64() < outlets.sample_ratio, |p| p.sampled);
            (sampled || parent.is_some())
                .then(|| TraceContext::child_of(parent, text("tracestate").and_then(usable_tracestate), sampled))
        });
        if outlets.log.is_none() && trace.is_none() {
            return None;
        }
        let outlet: Arc<dyn Outlet> = outlets.clone();
        Some(Journal::new(outlet, id, path, trace, outlets.capture))
    }
}

/// Sleeps until `at`; forever when there is none (a flush or batch timer
/// that is not armed).
async fn until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

enum Job {
    Log(log::RequestLog),
    Otlp(otlp::Exporter),
}

#[cfg(test)]
mod tests;
