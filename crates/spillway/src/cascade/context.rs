//! The narrow handle the runner works with: exactly what a request's walk
//! reads (health, its rules, load, prompt variants, compiled schemas,
//! metrics) and nothing of the gateway around it, so the runner cannot
//! reach up into handoff, usage, alerts or the server.

use crate::config::{Config, HealthConfig};
use crate::health::HealthRegistry;
use crate::load::LoadRegistry;
use crate::metrics::Metrics;
use crate::normalize::SchemaCache;
use crate::prompts::Prompts;
use std::sync::Arc;

/// What one request's walk reads; the gateway lends it (`Gateway::runner`).
#[derive(Clone, Copy)]
pub struct Context<'a> {
    /// Dead marks, breakers, TTFT: read before each attempt, written by
    /// each attempt's settlement (an `Arc` because a stream's settlement
    /// outlives the walk).
    pub health: &'a Arc<HealthRegistry>,
    /// `health:` — deadlines, retries, breaker rules, dead-mark length.
    pub rules: &'a HealthConfig,
    pub load: &'a LoadRegistry,
    pub prompts: &'a Prompts,
    pub schemas: &'a SchemaCache,
    pub metrics: &'a Metrics,
}

/// The same handle, owned: what a stream keeps to continue on the next
/// model after its request's handler has returned.
#[derive(Clone)]
pub struct Owned {
    pub health: Arc<HealthRegistry>,
    /// The config the request started under (its `health:` rules).
    pub config: Arc<Config>,
    pub load: Arc<LoadRegistry>,
    pub prompts: Arc<Prompts>,
    pub schemas: Arc<SchemaCache>,
    pub metrics: Arc<Metrics>,
}

impl Owned {
    /// Borrowed, for a walk.
    pub fn context(&self) -> Context<'_> {
        Context {
            health: &self.health,
            rules: &self.config.health,
            load: &self.load,
            prompts: &self.prompts,
            schemas: &self.schemas,
            metrics: &self.metrics,
        }
    }
}
