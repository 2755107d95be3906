//! Load monitors: one background job per measured provider (SPEC §9).
//!
//! A [`Monitor`] ticks every `interval`, asks its [`Probe`] for a reading
//! (bounded by the interval, so a slow source is a failed interval, never a
//! pile-up), runs it through [`Staleness`] ("three failed intervals make the
//! load unknown") and publishes it on the provider's
//! [`ProviderLoad`]. Requests never wait on any of it:
//! they read what was last published.
//!
//! Probes: vLLM's `/metrics` over HTTP, NVML (see [`super::gpu`]), the
//! provider's own in-flight attempts, and the tokens/s the request path
//! counted. `emulated` has no monitor: the admin API publishes directly.

use super::error::LoadError;
use super::gpu::NvmlProbe;
use super::probe::Probe;
use super::profile::Staleness;
use super::state::{source_name, ProviderLoad};
use super::vllm::vllm_load;
use crate::config::LoadSource;
use crate::providers::Provider;
use crate::supervisor::{BackgroundJob, Supervisor};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::time::{Duration, Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

/// Polls one probe and publishes what it reads.
pub struct Monitor<P> {
    load: Arc<ProviderLoad>,
    interval: Duration,
    probe: P,
}

impl<P: Probe> Monitor<P> {
    /// A monitor of `load` reading `probe` every `interval`.
    pub fn new(load: Arc<ProviderLoad>, interval: Duration, probe: P) -> Self {
        Monitor {
            load,
            // A zero interval would spin; the compiler forbids it, this is
            // for direct callers.
            interval: interval.max(Duration::from_millis(1)),
            probe,
        }
    }

    fn observe(&self, staleness: &mut Staleness, reading: Result<f64, LoadError>) {
        let was_stale = staleness.failures() >= Staleness::DEFAULT_LIMIT;
        let error = reading.as_ref().err().cloned();
        let load = staleness.observe(reading);
        let stale = staleness.failures() >= Staleness::DEFAULT_LIMIT;
        let source = source_name(self.load.source());
        match (&error, was_stale, stale) {
            (Some(e), false, true) => tracing::warn!(
                provider = %self.load.name(),
                source,
                error = %e,
                "Load source failed three intervals in a row; load unknown, profile back to the first."
            ),
            (Some(e), _, _) => tracing::debug!(
                provider = %self.load.name(),
                source,
                reason = e.metric_label(),
                error = %e,
                "Load reading failed."
            ),
            (None, true, false) => {
                tracing::info!(provider = %self.load.name(), source, "Load source answers again.");
            }
            _ => {}
        }
        self.load.publish(load, stale);
    }
}

impl<P: Probe> BackgroundJob for Monitor<P> {
    fn name(&self) -> &'static str {
        "load monitor"
    }

    async fn run(mut self, shutdown: CancellationToken) {
        let mut ticks = tokio::time::interval(self.interval);
        // After a slow reading, wait a full interval rather than firing the
        // missed ticks back to back at a source that is already struggling.
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut staleness = Staleness::default();
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let reading = tokio::select! {
                () = shutdown.cancelled() => return,
                r = tokio::time::timeout(self.interval, self.probe.read()) => {
                    r.unwrap_or(Err(LoadError::Timeout))
                }
            };
            self.observe(&mut staleness, reading);
        }
    }
}

/// What [`LoadRegistry::start`](super::LoadRegistry::start) needs to start one monitor.
#[derive(Debug)]
pub struct Plan {
    load: Arc<ProviderLoad>,
    interval: Duration,
    /// For `inflight`, which reads the provider's bulkhead counter.
    provider: Option<Arc<Provider>>,
}

impl Plan {
    /// `None` for `emulated`, which has nothing to poll.
    pub fn new(load: Arc<ProviderLoad>, interval: Duration, provider: Option<&Arc<Provider>>) -> Option<Self> {
        (*load.source() != LoadSource::Emulated).then(|| Plan { load, interval, provider: provider.cloned() })
    }

    /// Starts the monitor on `supervisor`.
    pub fn spawn(&self, supervisor: &Supervisor) {
        let load = self.load.clone();
        let interval = self.interval;
        match load.source().clone() {
            LoadSource::VllmMetrics { url } => {
                supervisor.spawn(Monitor::new(load, interval, VllmProbe::new(url, interval)));
            }
            LoadSource::Nvml { devices } => {
                supervisor.spawn(Monitor::new(load, interval, NvmlProbe::new(devices)));
            }
            LoadSource::Inflight { capacity } => match &self.provider {
                Some(provider) => supervisor.spawn(Monitor::new(
                    load,
                    interval,
                    InflightProbe { provider: provider.clone(), capacity },
                )),
                None => tracing::warn!(
                    provider = %load.name(),
                    "No provider to count in-flight requests of; its load stays unknown."
                ),
            },
            LoadSource::TokenVelocity { capacity } => {
                let probe = VelocityProbe::new(load.clone(), capacity);
                supervisor.spawn(Monitor::new(load, interval, probe));
            }
            LoadSource::Emulated => {}
        }
    }
}

/// Scrapes vLLM's Prometheus endpoint.
pub struct VllmProbe {
    client: Result<reqwest::Client, String>,
    url: String,
}

impl VllmProbe {
    /// A probe of `url`; each scrape is bounded by `interval`.
    pub fn new(url: String, interval: Duration) -> Self {
        let client = reqwest::Client::builder()
            .timeout(interval)
            .user_agent(concat!("spillway/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"));
        VllmProbe { client, url }
    }
}

impl Probe for VllmProbe {
    async fn read(&mut self) -> Result<f64, LoadError> {
        let client = self.client.as_ref().map_err(|e| LoadError::Fetch(e.clone()))?;
        let resp = client.get(&self.url).send().await.map_err(|e| LoadError::Fetch(e.to_string()))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(LoadError::Fetch(format!("HTTP {status}")));
        }
        let text = resp.text().await.map_err(|e| LoadError::Fetch(e.to_string()))?;
        vllm_load(&text)
    }
}

/// The gateway's own attempts in flight to the provider over `capacity`.
pub struct InflightProbe {
    provider: Arc<Provider>,
    capacity: f64,
}

impl Probe for InflightProbe {
    async fn read(&mut self) -> Result<f64, LoadError> {
        Ok(ratio(self.provider.in_flight() as f64, self.capacity))
    }
}

/// Tokens per second the request path counted, over `capacity`.
///
/// The request path only adds to an atomic counter; this probe keeps the
/// last few `(time, total)` samples and divides the tokens between the
/// oldest and now by the time between them: a sliding window of
/// [`VelocityProbe::WINDOW`] intervals that smooths one burst without
/// lagging far behind a change.
pub struct VelocityProbe {
    load: Arc<ProviderLoad>,
    capacity: f64,
    samples: VecDeque<(Instant, u64)>,
}

impl VelocityProbe {
    pub const WINDOW: usize = 5;

    /// A probe starting now, from the tokens counted so far.
    pub fn new(load: Arc<ProviderLoad>, capacity: f64) -> Self {
        let mut samples = VecDeque::with_capacity(Self::WINDOW + 1);
        samples.push_back((Instant::now(), load.tokens()));
        VelocityProbe { load, capacity, samples }
    }
}

impl Probe for VelocityProbe {
    async fn read(&mut self) -> Result<f64, LoadError> {
        let now = Instant::now();
        let total = self.load.tokens();
        self.samples.push_back((now, total));
        while self.samples.len() > Self::WINDOW + 1 {
            self.samples.pop_front();
        }
        let Some(&(then, before)) = self.samples.front() else {
            return Ok(0.0);
        };
        let secs = now.duration_since(then).as_secs_f64();
        if secs <= 0.0 {
            return Ok(0.0);
        }
        let rate = total.saturating_sub(before) as f64 / secs;
        Ok(ratio(rate, self.capacity))
    }
}

/// `value / capacity` in `0..=1`; 1 for a capacity that is not positive
/// (config validation rejects it; a full reading is the safe side).
fn ratio(value: f64, capacity: f64) -> f64 {
    if capacity > 0.0 {
        (value / capacity).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

#[cfg(test)]
#[path = "monitor_tests.rs"]
mod tests;
