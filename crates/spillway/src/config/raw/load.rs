//! `providers.*.load`: where a provider's load is read and its degradation profiles.

use schemars::JsonSchema;
use serde::Deserialize;

/// `providers.*.load`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLoad {
    /// `vllm_metrics`, `nvml`, `inflight`, `token_velocity` or `emulated`.
    pub source: String,
    /// vllm_metrics: the Prometheus endpoint.
    pub url: Option<String>,
    /// nvml: GPU indices (the load is their maximum).
    pub devices: Option<Vec<u32>>,
    /// inflight / token_velocity: the value that means full load.
    pub capacity: Option<f64>,
    /// Poll interval (default `1s`).
    pub interval: Option<String>,
    /// Profiles from lightest to heaviest; the last has no `below`.
    pub profiles: Vec<RawProfile>,
    /// Margin that keeps the profile from flapping (default 0.03).
    pub hysteresis: Option<f64>,
}

/// A load profile.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawProfile {
    /// Profile name (`normal`, `tired`, `lazy`, …).
    pub name: String,
    /// Applies while the load is below this (0..1); the last profile has none.
    pub below: Option<f64>,
    /// Added as a system message while this profile applies.
    pub system_prompt: Option<String>,
    /// `max_tokens` becomes `ceil(factor × (client max_tokens or default_max_tokens))`.
    pub max_tokens_factor: Option<f64>,
}
