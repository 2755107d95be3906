//! `telemetry:` as compiled.

use crate::secret::Secret;
use std::path::PathBuf;
use std::time::Duration;

/// `telemetry:`: the request log and traces.
#[derive(Debug, Clone, Default)]
pub struct TelemetryConfig {
    /// Prompts and answers are recorded.
    pub capture_content: bool,
    pub request_log: Option<RequestLogConfig>,
    pub otlp: Option<OtlpConfig>,
}

/// Where the request log's lines go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    Stdout,
    File(PathBuf),
}

/// `telemetry.request_log:`
#[derive(Debug, Clone)]
pub struct RequestLogConfig {
    pub target: LogTarget,
    /// Rotate past this many bytes.
    pub max_size: u64,
    /// Rotated files kept.
    pub keep: u32,
    /// Lines queued at most.
    pub queue: usize,
}

/// `telemetry.otlp:`
#[derive(Debug, Clone)]
pub struct OtlpConfig {
    /// The full URL spans are posted to (`…/v1/traces`).
    pub url: String,
    /// Extra headers (values may hold secrets).
    pub headers: Vec<(String, Secret)>,
    pub sample_ratio: f64,
    pub service_name: String,
    pub queue: usize,
    pub batch: usize,
    pub interval: Duration,
    pub timeout: Duration,
}
