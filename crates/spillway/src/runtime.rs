//! The running gateway: a compiled config turned into providers with live
//! clients and cascades with ready metric handles.
//!
//! A [`Gateway`] is immutable; hot reload builds a new one and swaps it in
//! atomically, so requests in flight finish on the one they started with.

use crate::cascade::{Target, Tier};
use crate::config::{CascadeSource, Config, ModelRef};
use crate::metrics::{CascadeMetrics, Metrics};
use crate::providers::{BuildError, Provider};
use indexmap::IndexMap;
use std::collections::HashMap;
use std::sync::Arc;

/// A cascade ready to run.
#[derive(Debug, Clone)]
pub struct CascadePlan {
    /// Its name (`direct` for a model ref sent as `model`).
    pub name: String,
    /// Models in order, the last resort included.
    pub targets: Vec<Target>,
    /// Queue for a person when everything failed.
    pub handoff: bool,
    /// Metric handles.
    pub metrics: Arc<CascadeMetrics>,
}

/// Everything a request needs, built from one config.
#[derive(Debug)]
pub struct Gateway {
    /// The config it was built from.
    pub config: Arc<Config>,
    /// Providers by name.
    pub providers: HashMap<String, Arc<Provider>>,
    /// Cascades in config order.
    pub cascades: IndexMap<String, Arc<CascadePlan>>,
    /// Shared metrics (they outlive reloads).
    pub metrics: Arc<Metrics>,
}

impl Gateway {
    /// Builds providers and cascade plans. Only client construction can fail
    /// here (a bad CA file); config rules were checked by the compiler.
    pub fn build(config: Config, metrics: Arc<Metrics>) -> Result<Self, BuildError> {
        let mut providers = HashMap::new();
        for (name, p) in &config.providers {
            providers.insert(name.clone(), Provider::build(p.clone(), &config.health)?);
        }
        let mut cascades = IndexMap::new();
        for (name, c) in &config.cascades {
            let mut refs: Vec<(ModelRef, Tier)> = match &c.source {
                CascadeSource::Fixed(models) => models
                    .iter()
                    .map(|m| (m.clone(), Tier::Preferred))
                    .collect(),
                CascadeSource::Discovered(spec) => {
                    // Until discovery has run, a discovered cascade is its
                    // preferred models followed by the static models of its
                    // providers (SPEC §4: static models stand alone for
                    // providers that list nothing).
                    let mut refs: Vec<(ModelRef, Tier)> = spec
                        .preferred
                        .iter()
                        .map(|m| (m.clone(), Tier::Preferred))
                        .collect();
                    for p in &spec.providers {
                        for m in config
                            .providers
                            .get(p)
                            .map(|p| p.models.as_slice())
                            .unwrap_or_default()
                        {
                            let r = ModelRef {
                                provider: p.clone(),
                                model: m.id.clone(),
                            };
                            if !refs.iter().any(|(x, _)| *x == r) {
                                refs.push((r, Tier::Discovered));
                            }
                        }
                    }
                    refs.truncate(spec.size as usize);
                    refs
                }
            };
            if let Some(last) = &c.last_resort {
                refs.push((last.clone(), Tier::LastResort));
            }
            let targets = refs
                .into_iter()
                .filter_map(|(r, tier)| {
                    let provider = providers.get(&r.provider)?.clone();
                    Some(Target::new(r, tier, provider, &metrics, name))
                })
                .collect();
            let plan = CascadePlan {
                name: name.clone(),
                targets,
                handoff: c.handoff,
                metrics: metrics.cascade(name),
            };
            cascades.insert(name.clone(), Arc::new(plan));
        }
        Ok(Self {
            config: Arc::new(config),
            providers,
            cascades,
            metrics,
        })
    }

    /// Resolves a request's `model`: a cascade, `auto` (the first cascade),
    /// or a `provider/model` ref of a configured provider.
    pub fn resolve(&self, model: &str) -> Option<Arc<CascadePlan>> {
        if let Some(plan) = self.cascades.get(model) {
            return Some(plan.clone());
        }
        if model == "auto" {
            return self.cascades.first().map(|(_, p)| p.clone());
        }
        let r = ModelRef::parse(model)?;
        let provider = self.providers.get(&r.provider)?.clone();
        if provider.config.kind == crate::config::ProviderKind::Mock
            && !provider.config.models.iter().any(|m| m.id == r.model)
        {
            return None;
        }
        let target = Target::new(r, Tier::Preferred, provider, &self.metrics, "direct");
        Some(Arc::new(CascadePlan {
            name: "direct".into(),
            targets: vec![target],
            handoff: false,
            metrics: self.metrics.cascade("direct"),
        }))
    }
}
