//! The trace exporter: finished requests' spans posted to a collector
//! over OTLP/HTTP (protobuf), in batches (`telemetry.otlp`).
//!
//! A background job reads sampled entries from the bounded queue that
//! [`super::Telemetry`] fills and collects their spans until `batch`
//! spans are waiting or `interval` has passed since the first, then posts
//! one `ExportTraceServiceRequest` to `…/v1/traces`. A collector that
//! answers 429, 502, 503 or 504, or cannot be reached, gets the batch once
//! more after a second; then it is dropped and counted in
//! `spillway_telemetry_export_failures_total{signal="spans"}`. While a
//! post waits (at most `timeout`), new entries wait in the queue, and
//! past its size they are dropped — a collector that is down or slow
//! costs the requests nothing.

pub mod proto;
pub mod spans;

use crate::config::OtlpConfig;
use crate::journal::Entry;
use prometheus_client::metrics::counter::Counter;
use proto::{Attribute, Span};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The exporter job.
pub struct Exporter {
    config: OtlpConfig,
    rx: mpsc::Receiver<Arc<Entry>>,
    failures: Counter,
}

impl Exporter {
    /// An exporter of the entries that arrive on `rx`; spans it could not
    /// deliver count in `failures`.
    pub fn new(config: OtlpConfig, rx: mpsc::Receiver<Arc<Entry>>, failures: Counter) -> Self {
        Self { config, rx, failures }
    }

    fn resource(&self) -> Vec<Attribute> {
        vec![
            ("service.name", self.config.service_name.as_str().into()),
            ("service.version", env!("CARGO_PKG_VERSION").into()),
            ("telemetry.sdk.name", "spillway".into()),
            ("telemetry.sdk.language", "rust".into()),
        ]
    }

    fn client(&self) -> reqwest::Client {
        let mut headers = reqwest::header::HeaderMap::new();
        headers
            .insert(reqwest::header::CONTENT_TYPE, reqwest::header::HeaderValue::from_static("application/x-protobuf"));
        for (k, v) in &self.config.headers {
            if let (Ok(name), Ok(mut value)) = (
                reqwest::header::HeaderName::from_bytes(k.as_bytes()),
                reqwest::header::HeaderValue::from_str(v.expose()),
            ) {
                value.set_sensitive(true);
                headers.insert(name, value);
            }
        }
        reqwest::Client::builder()
            .default_headers(headers)
            .timeout(self.config.timeout)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    }

    /// Posts `spans`; once more after a second when the collector is busy
    /// or unreachable.
    async fn send(&self, client: &reqwest::Client, resource: &[Attribute], spans: &[Span]) {
        if spans.is_empty() {
            return;
        }
        let body = bytes::Bytes::from(proto::export_request(resource, ("spillway", env!("CARGO_PKG_VERSION")), spans));
        for tried in 0..2 {
            let sent = client.post(&self.config.url).body(body.clone()).send().await;
            let retry = match &sent {
                Ok(r) if r.status().is_success() => return,
                Ok(r) => matches!(r.status().as_u16(), 429 | 502 | 503 | 504),
                Err(e) => !e.is_builder(),
            };
            if !retry || tried == 1 {
                let why = match sent {
                    Ok(r) => format!("HTTP {}", r.status()),
                    Err(e) => e.without_url().to_string(),
                };
                self.failures.inc_by(spans.len() as u64);
                tracing::warn!(spans = spans.len(), error = %why, "Cannot export spans; dropped.");
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

impl crate::supervisor::BackgroundJob for Exporter {
    fn name(&self) -> &'static str {
        "otlp-exporter"
    }

    async fn run(mut self, shutdown: CancellationToken) {
        let (client, resource) = (self.client(), self.resource());
        let mut batch: Vec<Span> = Vec::new();
        let mut first_at: Option<Instant> = None;
        loop {
            let flush_at = first_at.map(|t| t + self.config.interval);
            let next = tokio::select! {
                entry = self.rx.recv() => match entry {
                    Some(e) => Some(e),
                    None => break,
                },
                () = super::until(flush_at) => None,
                () = shutdown.cancelled() => break,
            };
            if let Some(entry) = next {
                batch.extend(spans::of(&entry));
                first_at.get_or_insert_with(Instant::now);
                if batch.len() < self.config.batch {
                    continue;
                }
            }
            for chunk in batch.chunks(self.config.batch) {
                self.send(&client, &resource, chunk).await;
            }
            batch.clear();
            first_at = None;
        }
        // What was queued before the stop is still sent.
        while let Ok(entry) = self.rx.try_recv() {
            batch.extend(spans::of(&entry));
        }
        for chunk in batch.chunks(self.config.batch) {
            self.send(&client, &resource, chunk).await;
        }
    }
}
