//! The running gateway: a compiled config turned into providers with live
//! clients and cascades with ready metric handles.
//!
//! A [`Gateway`] is immutable; hot reload builds a new one and swaps it in
//! atomically, so requests in flight finish on the one they started with.
//! Every gateway built from one config shares that config generation's
//! background jobs ([`Generation`]); they stop when the last gateway of the
//! generation is dropped.

use super::generation::Generation;
use crate::cascade::{CascadePlan, Target};
use crate::config::{CascadeKind, CascadeSource, Config, DiscoverySpec, ModelRef};
use crate::discovery::{DiscoveryState, Reason};
use crate::health::HealthRegistry;
use crate::metrics::Metrics;
use crate::outcome::Tier;
use crate::providers::{BuildError, Provider};
use indexmap::IndexMap;
use std::collections::HashMap;
use std::sync::Arc;

/// What outlives a config generation: metrics, health, discovery.
#[derive(Debug, Default, Clone)]
pub struct Shared {
    /// Every metric.
    pub metrics: Arc<Metrics>,
    /// Dead marks, breakers, TTFT statistics.
    pub health: Arc<HealthRegistry>,
    /// The shared-state backend and whether it is reachable.
    pub state: Arc<crate::state::StateStatus>,
    /// Compiled JSON Schemas of `response_format`s and tools, by content.
    pub schemas: Arc<crate::normalize::SchemaCache>,
    /// The latest discovery round, its events, and the reload lock.
    pub discovery: Arc<DiscoveryState>,
    /// The alert bus: publish operator alerts here (SPEC §8).
    pub alerts: Arc<crate::alerts::AlertBus>,
    /// The handoff queue, opened on first use.
    pub handoff: Arc<crate::handoff::Desk>,
    /// Stored responses of the Responses API, opened on first use.
    pub responses: Arc<crate::stored::Archive>,
    /// Cost and daily spend per cascade.
    pub usage: Arc<crate::usage::Ledger>,
    /// Client-invented model refs seen so far (bounded).
    pub unlisted: Arc<Unlisted>,
    /// Virtual keys' counters and reservations.
    pub tenancy: Arc<crate::tenancy::Tenancy>,
    /// The request log and traces (opened once, by `App::start`).
    pub telemetry: Arc<crate::export::Telemetry>,
}

/// Everything a request needs, built from one config.
///
/// `Clone` shares everything (providers, load monitors); a discovery refresh
/// clones the running gateway and replaces only its cascade plans.
#[derive(Debug, Clone)]
pub struct Gateway {
    /// The config it was built from.
    pub config: Arc<Config>,
    /// Providers by name.
    pub providers: HashMap<String, Arc<Provider>>,
    /// Cascades in config order.
    pub cascades: IndexMap<String, Arc<CascadePlan>>,
    /// Shared metrics (they outlive reloads).
    pub metrics: Arc<Metrics>,
    /// Shared health (it outlives reloads).
    pub health: Arc<HealthRegistry>,
    /// Load and degradation profile of every provider with `load:` (SPEC §9).
    pub load: Arc<crate::load::LoadRegistry>,
    /// Per-model prompt variants (SPEC §7).
    pub prompts: Arc<crate::prompts::Prompts>,
    /// What outlives this generation, to build the next one from.
    pub shared: Shared,
    /// This config generation's background jobs, shared by every gateway
    /// built from it (a discovery refresh's copies too).
    pub jobs: Arc<Generation>,
    /// The config's virtual keys by the SHA-256 of their secret.
    pub keys: Arc<crate::tenancy::admit::KeyIndex>,
}

impl Gateway {
    /// Builds providers and cascade plans. Only client construction can fail
    /// here (a bad CA file); config rules were checked by the compiler.
    pub fn build(config: Config, shared: &Shared) -> Result<Self, BuildError> {
        let metrics = shared.metrics.clone();
        let health = shared.health.clone();
        let mut providers = HashMap::new();
        for (name, p) in &config.providers {
            providers.insert(name.clone(), Provider::build(p.clone(), &config.health)?);
        }
        let cascades = plans(&config, &providers, shared);
        let load = Arc::new(crate::load::LoadRegistry::build(&config, &providers, &metrics));
        let prompts = Arc::new(crate::prompts::Prompts::build(&config.prompts));
        let keys = Arc::new(crate::tenancy::admit::index(&config));
        Ok(Self {
            keys,
            config: Arc::new(config),
            providers,
            cascades,
            metrics,
            health,
            load,
            prompts,
            shared: shared.clone(),
            jobs: Arc::new(Generation::default()),
        })
    }

    /// The same gateway with its cascade plans rebuilt from the latest
    /// discovery round; providers and load monitors are shared, not rebuilt.
    pub fn with_fresh_plans(&self) -> Self {
        Self { cascades: plans(&self.config, &self.providers, &self.shared), ..self.clone() }
    }

    /// Starts this generation's background jobs on a child of
    /// `supervisor`: load monitors, alert dispatch and sinks, the
    /// fallback-share rule, handoff retention, spend sharing. Each takes the
    /// narrow handles it needs, never a gateway, so the jobs stop when the
    /// last gateway of the generation drops (a reload) or with `supervisor`.
    /// A second call does nothing.
    pub fn start_jobs(&self, supervisor: &crate::supervisor::Supervisor) {
        let Some(jobs) = self.jobs.start(supervisor) else { return };
        self.load.start(jobs);
        let cfg = &self.config;
        crate::alerts::dispatch::start(
            crate::alerts::dispatch::Wiring {
                config: &cfg.alerts,
                handoff_webhook: cfg.handoff.webhook.as_ref(),
                cascades: cfg.cascades.keys().cloned().collect(),
                bus: &self.shared.alerts,
                health: &self.health,
                discovery: &self.shared.discovery,
                state: &self.shared.state,
            },
            jobs,
        );
        jobs.spawn(crate::handoff::Retention { desk: self.shared.handoff.clone(), retention: cfg.handoff.retention });
        jobs.spawn(crate::stored::Retention {
            archive: self.shared.responses.clone(),
            limits: (&cfg.responses).into(),
        });
        jobs.spawn(crate::usage::flush::Flush { books: self.books() });
        jobs.spawn(crate::tenancy::registry::KeySync {
            tenancy: self.shared.tenancy.clone(),
            state: cfg.state.clone(),
        });
        jobs.spawn(crate::tenancy::kept::KeepUsage { tenancy: self.shared.tenancy.clone(), state: cfg.state.clone() });
    }

    /// The narrow handle the cascade runner reads.
    pub fn runner(&self) -> crate::cascade::Context<'_> {
        crate::cascade::Context {
            health: &self.health,
            rules: &self.config.health,
            load: &self.load,
            prompts: &self.prompts,
            schemas: &self.shared.schemas,
            metrics: &self.metrics,
        }
    }

    /// The runner's handle, owned (a stream keeps it to continue).
    pub fn runner_owned(&self) -> crate::cascade::context::Owned {
        crate::cascade::context::Owned {
            health: self.health.clone(),
            config: self.config.clone(),
            load: self.load.clone(),
            prompts: self.prompts.clone(),
            schemas: self.shared.schemas.clone(),
            metrics: self.metrics.clone(),
        }
    }

    /// What the handoff tier touches.
    pub fn handoff(&self) -> crate::handoff::Handoff<'_> {
        crate::handoff::Handoff {
            desk: &self.shared.handoff,
            state: &self.config.state,
            config: &self.config.handoff,
            alerts: &self.shared.alerts,
            metrics: &self.metrics,
        }
    }

    /// Open handoff items now (see `handoff::depth`).
    pub async fn handoff_depth(&self) -> Option<u64> {
        crate::handoff::depth(self.handoff(), self.cascades.values().any(|c| c.handoff)).await
    }

    /// What cost accounting touches (owned: jobs and streams keep it).
    pub fn books(&self) -> crate::usage::OwnedBooks {
        crate::usage::OwnedBooks {
            config: self.config.clone(),
            metrics: self.metrics.clone(),
            alerts: self.shared.alerts.clone(),
            discovery: self.shared.discovery.clone(),
            ledger: self.shared.usage.clone(),
            state: self.shared.state.clone(),
        }
    }

    /// Resolves a chat request's `model`: a chat cascade, `auto` (the first
    /// chat cascade), or a `provider/model` ref of a configured provider.
    pub fn resolve(&self, model: &str) -> Option<Arc<CascadePlan>> {
        self.resolve_kind(model, CascadeKind::Chat)
    }

    /// Resolves an embeddings request's `model`: an embedding cascade,
    /// `auto` (the first one), or a `provider/model` ref.
    pub fn resolve_embedding(&self, model: &str) -> Option<Arc<CascadePlan>> {
        self.resolve_kind(model, CascadeKind::Embedding)
    }

    fn resolve_kind(&self, model: &str, kind: CascadeKind) -> Option<Arc<CascadePlan>> {
        if let Some(plan) = self.cascades.get(model) {
            return (plan.kind == kind).then(|| plan.clone());
        }
        if model == "auto" {
            return self.cascades.values().find(|p| p.kind == kind).cloned();
        }
        let r = ModelRef::parse(model)?;
        let provider = self.providers.get(&r.provider)?.clone();
        let target = if self.knows(&r) {
            Target::new(r, Tier::Preferred, provider, &self.metrics, &self.health, "direct", 1)
        } else if provider.config.allow_any_model && provider.config.kind != crate::config::ProviderKind::Mock {
            self.shared.unlisted.target(r, provider, &self.metrics, &self.health)
        } else {
            return None;
        };
        Some(Arc::new(CascadePlan {
            name: "direct".into(),
            kind,
            targets: vec![target],
            handoff: false,
            hedge_after: None,
            continue_streams: false,
            metrics: self.metrics.cascade("direct"),
        }))
    }
}

impl Gateway {
    /// Whether `r` is a model the config or the provider's listing names: a
    /// static model, a model of some cascade, or one the latest listing has.
    fn knows(&self, r: &ModelRef) -> bool {
        let Some(provider) = self.providers.get(&r.provider) else { return false };
        provider.config.models.iter().any(|m| m.id == r.model)
            || self.cascades.values().any(|p| p.targets.iter().any(|t| t.model_ref == *r))
            || self
                .shared
                .discovery
                .current()
                .listings
                .get(&r.provider)
                .is_some_and(|l| l.models.iter().any(|m| m.id == r.model))
    }
}

/// Client-invented model refs of `allow_any_model` providers: the first
/// [`UNLISTED_PER_PROVIDER`] ids of a provider get their own health entry
/// and metric series like any model; past that, every further id shares
/// the `other` series and gets a health entry of its own request only, so
/// random ids cannot grow memory or `/metrics` without bound.
#[derive(Debug, Default)]
pub struct Unlisted {
    seen: std::sync::Mutex<HashMap<String, std::collections::HashSet<String>>>,
}

/// How many client-invented ids per provider keep their own state.
pub const UNLISTED_PER_PROVIDER: usize = 64;

impl Unlisted {
    fn target(&self, r: ModelRef, provider: Arc<Provider>, metrics: &Metrics, health: &HealthRegistry) -> Target {
        let admitted = {
            let mut seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let ids = seen.entry(r.provider.clone()).or_default();
            ids.contains(&r.model) || (ids.len() < UNLISTED_PER_PROVIDER && ids.insert(r.model.clone()))
        };
        if admitted {
            return Target::new(r, Tier::Preferred, provider, metrics, health, "direct", 1);
        }
        let name = r.to_string();
        Target {
            metrics: metrics.target("direct", &r.provider, "other"),
            health: health.detached(&name),
            provider_health: health.provider(&r.provider),
            name,
            model_ref: r,
            tier: Tier::Preferred,
            breaker: provider.config.breaker,
            provider,
            context: None,
            rank: 1,
            quality: None,
        }
    }
}

/// Builds every cascade plan of `config`: fixed chains as written,
/// discovered cascades from the latest discovery round. The single place
/// plans are built (start-up, reload, discovery refresh).
fn plans(
    config: &Config,
    providers: &HashMap<String, Arc<Provider>>,
    shared: &Shared,
) -> IndexMap<String, Arc<CascadePlan>> {
    let (metrics, health) = (&shared.metrics, &shared.health);
    let round = shared.discovery.current();
    let mut cascades = IndexMap::new();
    for (name, c) in &config.cascades {
        let mut refs: Vec<(ModelRef, Tier, Option<u64>)> = match &c.source {
            CascadeSource::Fixed(models) => models.iter().map(|m| (m.clone(), Tier::Preferred, None)).collect(),
            CascadeSource::Discovered(spec) => discovered(config, name, spec, &round),
        };
        if let Some(last) = &c.last_resort {
            refs.push((last.clone(), Tier::LastResort, None));
        }
        let mut targets: Vec<Target> = Vec::with_capacity(refs.len());
        for (r, tier, context) in refs {
            let Some(provider) = providers.get(&r.provider).cloned() else { continue };
            let breaker = c.breaker_for(&r, &config.providers);
            let mut target = Target::new(r, tier, provider, metrics, health, name, targets.len() + 1);
            // The listing knows the context of models the config does not list.
            target.context = context.or(target.context);
            target.breaker = breaker;
            target.quality = c.quality;
            targets.push(target);
        }
        let plan = CascadePlan {
            name: name.clone(),
            kind: c.kind,
            targets,
            handoff: c.handoff,
            hedge_after: c.hedge_after,
            continue_streams: c.continue_streams,
            metrics: metrics.cascade(name),
        };
        cascades.insert(name.clone(), Arc::new(plan));
    }
    cascades
}

/// A discovered cascade's refs: the built ones, then (when fewer than 2
/// were built, or discovery has not run yet) its preferred models and the
/// static models of its providers, so it is never empty (SPEC §4: static
/// models stand alone for providers that list nothing). Those pass the
/// cascade's filters too: a `free_only` cascade never gains a paid model
/// by falling back.
fn discovered(
    config: &Config,
    name: &str,
    spec: &DiscoverySpec,
    round: &crate::discovery::Round,
) -> Vec<(ModelRef, Tier, Option<u64>)> {
    let built = round.cascades.get(name);
    let mut refs: Vec<(ModelRef, Tier, Option<u64>)> = built
        .map(|b| b.entries.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let tier = if matches!(e.reason, Reason::Preferred { .. }) { Tier::Preferred } else { Tier::Discovered };
            let r = ModelRef { provider: e.meta.provider.clone(), model: e.meta.id.clone() };
            (r, tier, e.meta.context.map(u64::from))
        })
        .collect();
    if refs.len() >= 2 {
        return refs;
    }
    let filters = crate::discovery::round::cascade_spec(name, spec).filters;
    let statics =
        spec.preferred.iter().map(|m| (m.clone(), Tier::Preferred)).chain(spec.providers.iter().flat_map(|p| {
            let models = config.providers.get(p).map(|p| p.models.as_slice()).unwrap_or_default();
            models.iter().map(|m| (ModelRef { provider: p.clone(), model: m.id.clone() }, Tier::Discovered))
        }));
    for (r, tier) in statics {
        if refs.len() >= spec.size as usize {
            break;
        }
        if refs.iter().any(|(x, _, _)| *x == r) {
            continue;
        }
        let meta = crate::discovery::round::static_meta(config, &round.listings, &r.provider, &r.model);
        if let Err(why) = crate::discovery::check_filters(&filters, &meta) {
            tracing::debug!(cascade = %name, model = %r, %why, "Static fallback model left out by the filters.");
            continue;
        }
        refs.push((r, tier, meta.context.map(u64::from)));
    }
    refs
}

impl<'a> From<&'a Gateway> for crate::usage::Books<'a> {
    fn from(gw: &'a Gateway) -> Self {
        Self {
            config: &gw.config,
            metrics: &gw.metrics,
            alerts: &gw.shared.alerts,
            discovery: &gw.shared.discovery,
            handles: None,
        }
    }
}
