//! `canaries:` as compiled.

use crate::config::ModelRef;
use std::time::Duration;

/// Where a canary goes.
#[derive(Debug, Clone, PartialEq)]
pub enum CanaryTarget {
    /// Every model of a cascade.
    Cascade(String),
    /// One model ref.
    Model(ModelRef),
}

/// What a canary's answer must satisfy (each given check).
#[derive(Debug, Clone, Default)]
pub struct CanaryCheck {
    /// A JSON Schema the answer (as JSON) must be valid against.
    pub json_schema: Option<serde_json::Value>,
    /// A regular expression the answer must match.
    pub regex: Option<regex::Regex>,
    /// Texts it must contain.
    pub contains: Vec<String>,
    /// Texts it must not contain.
    pub not_contains: Vec<String>,
    /// The script most of its letters must be in.
    pub script: Option<crate::quality::text::Script>,
    /// The longest it may take.
    pub max_latency: Option<Duration>,
}

/// One canary.
#[derive(Debug, Clone)]
pub struct CanaryConfig {
    /// Its name.
    pub name: String,
    /// Where it goes.
    pub target: CanaryTarget,
    /// The user message.
    pub prompt: String,
    /// The checks.
    pub check: CanaryCheck,
    /// How often it runs.
    pub interval: Duration,
}
