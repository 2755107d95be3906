//! Configuration: read `spillway.yaml`, compile it, report every error.
//!
//! The file is parsed into the raw serde types of [`raw`], `${VAR}`s are
//! substituted ([`env`]), and [`compile::compile`] checks every rule and
//! produces the typed [`Config`] the gateway runs on — or all errors at
//! once, each with its YAML path. `spillway check`, start-up and hot reload
//! share this one path. Nothing here does I/O beyond reading the file.

pub mod compile;
pub mod env;
pub mod raw;
pub mod raw_keys;
pub mod raw_responses;
pub mod raw_size;
pub mod raw_telemetry;
pub mod shape;
pub mod template;
mod types;
pub mod units;

pub use crate::secret::Secret;
use indexmap::IndexMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
pub use types::*;

/// The demo config, embedded so `spillway serve` works with no file at all.
pub const DEMO_YAML: &str = include_str!("../../../../examples/demo.yaml");

/// One config error: where (a YAML path such as
/// `cascades.extraction.filters.max_cost_per_1m`) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted YAML path; empty for the whole file.
    pub path: String,
    /// What is wrong, secret-free.
    pub message: String,
}

impl ConfigError {
    /// Builds an error at `path`.
    pub fn new(path: &str, message: impl Into<String>) -> Self {
        Self { path: path.to_string(), message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Every error found in one config file.
#[derive(Debug, Clone, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// The compiled configuration the gateway runs on.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from (relative paths such as templates resolve against its folder).
    pub source: Option<PathBuf>,
    /// `server:`
    pub server: ServerConfig,
    /// `state:`
    pub state: StateConfig,
    /// `providers:` in file order.
    pub providers: IndexMap<String, ProviderConfig>,
    /// `health:`
    pub health: HealthConfig,
    /// `discovery:`
    pub discovery: DiscoveryConfig,
    /// `cascades:` in file order; the first is `auto`.
    pub cascades: IndexMap<String, CascadeConfig>,
    /// `prompts:`
    pub prompts: Vec<PromptRule>,
    /// `escalation:`
    pub escalation: Vec<EscalationRule>,
    /// `alerts:`
    pub alerts: AlertsConfig,
    /// `handoff:`
    pub handoff: HandoffConfig,
    /// `responses:`
    pub responses: ResponsesConfig,
    /// `keys:` (virtual client keys).
    pub keys: Vec<KeySpec>,
    /// `fairness:`
    pub fairness: FairnessConfig,
    /// `telemetry:`
    pub telemetry: TelemetryConfig,
    /// `canaries:`
    pub canaries: Vec<CanaryConfig>,
}

/// Reads and compiles a config file.
pub fn load_file(path: &Path) -> Result<Config, ConfigErrors> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigErrors(vec![ConfigError::new("", format!("cannot read {}: {e}", path.display()))]))?;
    let lookup = |name: &str| std::env::var(name).ok();
    load_str(&text, Some(path), &lookup)
}

/// Compiles config text; `source` anchors relative paths.
pub fn load_str(text: &str, source: Option<&Path>, lookup: env::Lookup<'_>) -> Result<Config, ConfigErrors> {
    let raw = shape::parse(text, lookup)?;
    compile::compile(raw, source)
}

/// The JSON Schema of the config file (draft 2020-12), for editors; kept in
/// `docs/spillway.schema.json` (a test fails when that copy is stale).
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(raw::RawConfig);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
