//! The config file as written: raw serde types, one struct per section.
//!
//! These mirror SPEC §4 field for field. They only describe *shape*
//! (unknown keys are rejected, types are checked by serde); every semantic
//! rule — durations, sizes, model refs, cascade shape — lives in
//! [`super::compile`], which turns a [`RawConfig`] into a
//! [`super::Config`] or a list of every error with its YAML path. The same
//! types generate `docs/spillway.schema.json` for editors.
//!
//! Durations are strings such as `250ms`, `2s`, `10m`, `12h`, `30d`; byte
//! sizes are strings such as `4MiB` or plain integers.
//!
//! One file per section, as in `compile/` and `types/`: `server`
//! (with `state`), `providers`, `load`, `health` (with `discovery`),
//! `cascades` (with `prompts` and `escalation`), `alerts` (with `handoff`),
//! `canary`; this file holds the whole file's [`RawConfig`].

mod alerts;
mod canary;
mod cascades;
mod health;
mod load;
mod providers;
mod server;

pub use alerts::*;
pub use canary::*;
pub use cascades::*;
pub use health::*;
pub use load::*;
pub use providers::*;
pub use server::*;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Deserialize;

pub use super::raw_keys::*;
pub use super::raw_responses::*;
pub use super::raw_size::RawSize;
pub use super::raw_telemetry::*;

/// A whole `spillway.yaml`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "Spillway configuration")]
pub struct RawConfig {
    /// The HTTP listener and client-facing limits.
    pub server: Option<RawServer>,
    /// Where dead marks, breaker state and statistics live.
    pub state: Option<RawState>,
    /// Upstream API accounts by name; the name is the first part of a model ref.
    #[serde(default)]
    pub providers: IndexMap<String, RawProvider>,
    /// Dead marks, circuit breakers, retries and deadlines.
    pub health: Option<RawHealth>,
    /// How often providers' model listings are re-read.
    pub discovery: Option<RawDiscovery>,
    /// Named cascades; clients select one with the request's `model`. The first is `auto`.
    #[serde(default)]
    pub cascades: IndexMap<String, RawCascade>,
    /// Per-model prompt variants, first match wins.
    #[serde(default)]
    pub prompts: Vec<RawPrompt>,
    /// Rules that switch a request to another cascade.
    #[serde(default)]
    pub escalation: Vec<RawEscalation>,
    /// Where operator alerts go.
    pub alerts: Option<RawAlerts>,
    /// The human-operator queue, the last tier.
    pub handoff: Option<RawHandoff>,
    /// What the gateway keeps of the Responses API (stored responses).
    pub responses: Option<RawResponses>,
    /// Virtual client keys, each with its own limits, budget and cascades.
    #[serde(default)]
    pub keys: Vec<RawKey>,
    /// How a shared free quota is shared between callers (keys and end users).
    pub fairness: Option<RawFairness>,
    /// The request log and OpenTelemetry traces.
    pub telemetry: Option<RawTelemetry>,
    /// Canaries: a known prompt sent to models every `interval`, its answer
    /// checked; results feed quality health (off unless listed).
    #[serde(default)]
    pub canaries: Vec<RawCanary>,
}
