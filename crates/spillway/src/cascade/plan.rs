//! What a cascade is when a request runs it: its targets in order, each
//! with the health entries and metric handles it was built with.
//!
//! Plans are built by the gateway (start-up, reload, discovery refresh) and
//! shared by every request through an `Arc`; the runner only reads them.

use crate::config::{CascadeKind, ModelRef};
use crate::health::{HealthRegistry, ModelHealth, ProviderHealth};
use crate::metrics::{CascadeMetrics, Metrics, TargetMetrics};
use crate::outcome::Tier;
use crate::providers::Provider;
use std::sync::Arc;

/// One model of a cascade, ready to call.
#[derive(Debug, Clone)]
pub struct Target {
    pub model_ref: ModelRef,
    /// `provider/model`, rendered once for headers, bodies and logs.
    pub name: String,
    pub tier: Tier,
    pub provider: Arc<Provider>,
    /// Its context window, when the config or the listing knows it.
    pub context: Option<u64>,
    /// Resolved when the plan is built, so the request path never looks
    /// health up by name.
    pub health: Arc<ModelHealth>,
    pub provider_health: Arc<ProviderHealth>,
    /// Built once per plan: an attempt only increments atomics.
    pub metrics: Arc<TargetMetrics>,
    /// 1-based position in its cascade (`x-spillway-rank`; anything but 1
    /// is fallback traffic).
    pub rank: usize,
    /// Breaker rules of this entry when they differ from `health.breaker`
    /// (`cascades.*.breakers`, `providers.*.breaker`).
    pub breaker: Option<crate::config::BreakerConfig>,
    /// Its cascade's quality rule (`cascades.*.quality`), when it has one:
    /// its answers are judged and a bad window demotes it.
    pub quality: Option<crate::config::QualityConfig>,
}

impl CascadePlan {
    /// How long until the soonest of its models is let back by its dead
    /// marks (the model's, its provider's) and its breaker: a client's
    /// `Retry-After` after every model failed. Zero when one is usable now
    /// (it failed for another reason: try again soon).
    pub fn back_in(&self, now: u64) -> std::time::Duration {
        let soonest = self
            .targets
            .iter()
            .map(|t| {
                let provider = t.provider_health.dead.get(now).map_or(now, |m| m.until_ms);
                t.health.back_at(now).max(provider)
            })
            .min()
            .unwrap_or(now);
        std::time::Duration::from_millis(soonest.saturating_sub(now))
    }
}

impl Target {
    /// Builds the target at 1-based position `rank` of `cascade` with its
    /// health entries and metric handles.
    pub fn new(
        model_ref: ModelRef,
        tier: Tier,
        provider: Arc<Provider>,
        metrics: &Metrics,
        health: &HealthRegistry,
        cascade: &str,
        rank: usize,
    ) -> Self {
        let m = metrics.target_at(cascade, &model_ref.provider, &model_ref.model, rank);
        let breaker = provider.config.breaker;
        let name = model_ref.to_string();
        let context = provider.config.models.iter().find(|s| s.id == model_ref.model).and_then(|s| s.context);
        Self {
            health: health.model(&name),
            provider_health: health.provider(&model_ref.provider),
            name,
            model_ref,
            tier,
            provider,
            context,
            metrics: m,
            rank,
            breaker,
            quality: None,
        }
    }
}

/// A cascade ready to run.
#[derive(Debug, Clone)]
pub struct CascadePlan {
    /// The cascade's name (`direct` for a model ref sent as `model`).
    pub name: String,
    /// Chat or embeddings: a request resolves only cascades of its own kind.
    pub kind: CascadeKind,
    /// Models in order, the last resort included.
    pub targets: Vec<Target>,
    /// Queue for a person when everything failed (the handler does it).
    pub handoff: bool,
    /// No first token by then: also start the next model.
    pub hedge_after: Option<std::time::Duration>,
    /// A stream that breaks after its first byte is continued by the next
    /// model that can (`cascades.*.continue_streams`).
    pub continue_streams: bool,
    pub metrics: Arc<CascadeMetrics>,
}
