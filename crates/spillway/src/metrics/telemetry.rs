//! The request log's and the trace exporter's own counters: what they
//! dropped rather than make a request wait (`export/`).

use super::names;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// `signal` of the telemetry counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SignalLabels {
    /// `request_log` or `spans`.
    pub signal: &'static str,
}

/// The families of this file.
#[derive(Debug, Clone)]
pub struct TelemetryMetrics {
    /// `spillway_telemetry_dropped_total`
    pub dropped: Family<SignalLabels, Counter>,
    /// `spillway_telemetry_export_failures_total`
    pub export_failures: Family<SignalLabels, Counter>,
}

impl TelemetryMetrics {
    /// Registers the families into `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let dropped = Family::default();
        registry.register(
            names::TELEMETRY_DROPPED,
            "Request log lines (request_log) and spans (spans) dropped because their queue was full: \
             a slow disk or collector never makes a request wait",
            dropped.clone(),
        );
        let export_failures = Family::default();
        registry.register(
            names::TELEMETRY_EXPORT_FAILURES,
            "Writes of the request log and exports of span batches that failed (the lines or spans are lost)",
            export_failures.clone(),
        );
        Self { dropped, export_failures }
    }

    /// The counter of `signal`'s dropped items.
    pub fn dropped(&self, signal: &'static str) -> Counter {
        self.dropped.get_or_create(&SignalLabels { signal }).clone()
    }

    /// The counter of `signal`'s failed writes or exports.
    pub fn failures(&self, signal: &'static str) -> Counter {
        self.export_failures.get_or_create(&SignalLabels { signal }).clone()
    }
}
