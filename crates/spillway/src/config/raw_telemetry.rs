//! `telemetry:` as written: the request log and OpenTelemetry traces.

use super::raw_size::RawSize;
use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Deserialize;

/// `telemetry:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTelemetry {
    /// Record prompts and answers in the request log and on spans
    /// (default false: neither ever holds content).
    pub capture_content: Option<bool>,
    /// One JSON line per request (off when absent).
    pub request_log: Option<RawRequestLog>,
    /// OpenTelemetry traces over OTLP/HTTP (off when absent).
    pub otlp: Option<RawOtlp>,
}

/// `telemetry.request_log:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRequestLog {
    /// `stdout` (the default) or a file path; a relative path is read from
    /// the config file's folder.
    pub path: Option<String>,
    /// A file is rotated when it would grow past this size (default `100MiB`).
    pub max_size: Option<RawSize>,
    /// Rotated files kept: `path.1` (newest) … `path.N` (default 5).
    pub keep: Option<u64>,
    /// Lines waiting for the writer; past it lines are dropped and counted
    /// (default 10000).
    pub queue: Option<u64>,
}

/// `telemetry.otlp:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawOtlp {
    /// The collector's OTLP/HTTP base URL (`http://collector:4318`);
    /// `/v1/traces` is added unless the URL has a path of its own.
    pub endpoint: String,
    /// Headers sent with every export (an `authorization` of a hosted
    /// collector: use `${VAR}`).
    pub headers: Option<IndexMap<String, String>>,
    /// Share of requests traced when the client sent no `traceparent`
    /// (default 1.0); a client's sampled flag is followed.
    pub sample_ratio: Option<f64>,
    /// `service.name` of the spans (default `spillway`).
    pub service_name: Option<String>,
    /// Spans waiting for export; past it spans are dropped and counted
    /// (default 8192).
    pub queue: Option<u64>,
    /// Spans per export request at most (default 512).
    pub batch: Option<u64>,
    /// How long spans wait for a fuller batch (default `1s`).
    pub interval: Option<String>,
    /// How long one export may take (default `10s`).
    pub timeout: Option<String>,
}
