//! `canaries:`: the requests `spillway canary` sends and what their answers must show.

use schemars::JsonSchema;
use serde::Deserialize;

/// One entry of `canaries:`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCanary {
    /// A name for logs and `spillway canary` (default: `canary-N`).
    pub name: Option<String>,
    /// Send it to every model of this cascade (give this or `model`).
    pub cascade: Option<String>,
    /// Send it to this model ref only.
    pub model: Option<String>,
    /// The user message sent.
    pub prompt: String,
    /// What the answer must satisfy.
    #[serde(default)]
    pub check: RawCanaryCheck,
    /// How often it runs (default `5m`).
    pub interval: Option<String>,
}

/// `canaries[*].check`: every check given must pass.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCanaryCheck {
    /// The answer is JSON valid against this JSON Schema.
    pub json_schema: Option<serde_json::Value>,
    /// The answer matches this regular expression.
    pub regex: Option<String>,
    /// Texts the answer must contain.
    pub contains: Option<Vec<String>>,
    /// Texts the answer must not contain.
    pub not_contains: Option<Vec<String>>,
    /// The script most of the answer's letters are in: `latin`, `cyrillic` or `cjk`.
    pub script: Option<String>,
    /// The answer arrives within this long.
    pub max_latency: Option<String>,
}
