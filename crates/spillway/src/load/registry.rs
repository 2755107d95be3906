//! The monitored providers of one config generation (SPEC §9).
//!
//! One [`LoadRegistry`] belongs to one `Gateway`. Each provider with
//! `load:` gets a [`ProviderLoad`]; the registry starts a monitor for each
//! measured source when the generation's jobs start, and its drop guard
//! stops them when the generation is dropped after a reload. The request
//! path finds a provider's state here by name.

use super::monitor::Plan;
use super::profile::Profile;
use super::state::{LoadSnapshot, ProviderLoad};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::providers::Provider;
use crate::supervisor::Supervisor;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use tokio_util::sync::DropGuard;

/// The monitored providers of one config generation.
#[derive(Debug, Default)]
pub struct LoadRegistry {
    /// A handful at most: a linear search by name beats hashing on the
    /// request path.
    providers: Vec<Arc<ProviderLoad>>,
    /// What the monitors need besides the [`ProviderLoad`].
    plans: Vec<Plan>,
    /// Cancels this generation's monitors when the registry (with its
    /// gateway) is dropped after a reload.
    jobs: OnceLock<DropGuard>,
}

impl LoadRegistry {
    /// Builds the state of every provider with `load:`; starts nothing.
    pub fn build(config: &Config, providers: &HashMap<String, Arc<Provider>>, metrics: &Metrics) -> Self {
        let mut out = LoadRegistry::default();
        for (name, p) in &config.providers {
            let Some(load) = &p.load else { continue };
            let profiles = load
                .profiles
                .iter()
                .map(|lp| Profile {
                    name: lp.name.clone(),
                    below: lp.below,
                    system_prompt: lp.system_prompt.clone(),
                    max_tokens_factor: lp.max_tokens_factor,
                })
                .collect();
            let state = Arc::new(ProviderLoad::new(
                name,
                load.source.clone(),
                profiles,
                load.hysteresis,
                p.default_max_tokens,
                p.kind,
                metrics,
            ));
            if let Some(plan) = Plan::new(state.clone(), load.interval, providers.get(name)) {
                out.plans.push(plan);
            }
            out.providers.push(state);
        }
        out
    }

    /// Starts one monitor per measured source on a child of `supervisor`;
    /// they stop with it or when this registry is dropped. A second call
    /// does nothing.
    pub fn start(&self, supervisor: &Supervisor) {
        let child = supervisor.child();
        if self.jobs.set(child.token().clone().drop_guard()).is_err() {
            return;
        }
        for plan in &self.plans {
            plan.spawn(&child);
        }
    }

    /// The state of `provider`, if its load is monitored.
    pub fn get(&self, provider: &str) -> Option<&Arc<ProviderLoad>> {
        self.providers.iter().find(|p| p.name() == provider)
    }

    /// Every monitored provider, in config order.
    pub fn providers(&self) -> &[Arc<ProviderLoad>] {
        &self.providers
    }

    /// The state of every monitored provider, for `/admin/state`.
    pub fn snapshot(&self) -> Vec<LoadSnapshot> {
        self.providers.iter().map(|p| p.snapshot()).collect()
    }
}
