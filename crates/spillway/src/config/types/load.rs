//! `load:` as compiled: monitors and degradation profiles.

use std::time::Duration;

/// Load source of a provider.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadSource {
    /// vLLM's Prometheus endpoint.
    VllmMetrics {
        /// Its URL.
        url: String,
    },
    /// NVIDIA GPUs through NVML.
    Nvml {
        /// Device indices.
        devices: Vec<u32>,
    },
    /// The gateway's own in-flight attempts.
    Inflight {
        /// Full load.
        capacity: f64,
    },
    /// Tokens per second measured by the gateway.
    TokenVelocity {
        /// Full load.
        capacity: f64,
    },
    /// Set through the admin API.
    Emulated,
}

/// A load profile.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadProfile {
    /// Name.
    pub name: String,
    /// Upper bound (none for the last).
    pub below: Option<f64>,
    /// Extra system prompt.
    pub system_prompt: Option<String>,
    /// `max_tokens` factor.
    pub max_tokens_factor: Option<f64>,
}

/// `providers.*.load`
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Source.
    pub source: LoadSource,
    /// Poll interval.
    pub interval: Duration,
    /// Profiles, lightest first.
    pub profiles: Vec<LoadProfile>,
    /// Anti-flap margin.
    pub hysteresis: f64,
}
