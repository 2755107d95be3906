//! What a run observed: each request's [`Sample`] and [`Outcome`], and the
//! whole [`Run`] the report is built from. The bottom of the drill: the
//! caller classes and the report read these types, nothing here reads them.

use std::time::Duration;

/// An alert that went out during the run (`at_s` from its start).
pub use crate::drill::marks::AlertRow as AlertSeen;

/// What happened to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A model answered.
    Answered {
        /// Its ref (`x-spillway-model`).
        model: String,
        /// Its tier (`x-spillway-tier`).
        tier: String,
    },
    /// Queued for a person (`x-spillway-tier: handoff`).
    Handoff,
    /// An error status, or a stream that failed after it started.
    Failed {
        /// The HTTP status (200 for a stream that broke mid-way).
        status: u16,
        /// The error's `code` (`all_models_failed`, `timeout`, …).
        code: String,
    },
}

/// One request of the run.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Which traffic stream sent it.
    pub traffic: usize,
    /// When, from the start of the run.
    pub sent: Duration,
    /// Until the last byte of the answer.
    pub latency: Duration,
    /// Until its first byte.
    pub first_byte: Duration,
    /// What came back.
    pub outcome: Outcome,
    /// An answer whose content fits the traffic's [`Output`].
    pub valid: bool,
    /// Upstream calls made (`x-spillway-attempts`).
    pub attempts: u32,
    /// Its usage times the answering model's price, USD.
    pub cost_usd: f64,
    /// 1-based position of the answering model in the cascade as it stood
    /// (`x-spillway-rank` when the gateway sends it, else read from the
    /// live plan); 0 when no model answered.
    pub rank: u32,
    /// The answering model costs nothing (a known zero price or `:free`).
    pub free: bool,
    /// The answering model's price is known (free, or a price the config or
    /// its listing gives); a self-hosted model without one is neither free
    /// nor paid, and its answers cost $0 in the report.
    pub priced: bool,
    /// The load profile the answer was served under (`x-spillway-load-profile`).
    pub profile: Option<String>,
    /// Completion tokens of the answer (its usage).
    pub completion_tokens: u64,
    /// A failure before any upstream call: every model was skipped (open
    /// breakers, dead marks, full bulkheads) or the gateway refused the
    /// request itself.
    pub unattempted: bool,
}

/// Everything a run observed.
#[derive(Debug, Clone)]
pub struct Run {
    /// Every request, in the order they were sent.
    pub samples: Vec<Sample>,
    /// Every alert, in order.
    pub alerts: Vec<AlertSeen>,
    /// Wall-clock time the run took.
    pub wall: std::time::Duration,
    /// Per model that answered JSON: `(model ref, [valid as sent, repaired,
    /// invalid])`, from the gateway's normalization counts.
    pub json: Vec<(String, [u64; 3])>,
    /// Every cascade's models in order as the first request found them
    /// (discovered cascades after the start-up discovery round).
    pub cascades: Vec<(String, Vec<String>)>,
    /// Each discovered cascade as discovery built it before the first
    /// request: its models with their reasons, its notes, what it left out.
    pub discovered: Vec<(String, crate::discovery::BuiltCascade)>,
    /// The load each monitored provider read, sampled through the run:
    /// `(when, provider, load 0..1)`.
    pub load: Vec<(Duration, String, f64)>,
}
