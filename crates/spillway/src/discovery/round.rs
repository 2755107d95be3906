//! One discovery round: the listings each provider returned, and every
//! discovered cascade of the running config built from them.
//!
//! A [`Round`] is what the gateway publishes (see [`super::state`]), what
//! the cache keeps and what `spillway discover` prints. Building it is pure
//! and cheap ([`build_cascades`]), so a config reload rebuilds the cascades
//! from the cached listings at once, before any network round trip.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::build::{build_cascade, BuiltCascade, CascadeSpec, Filters};
use super::model::{apply_hints, apply_provider_price, ModelMeta, StaticHint};
use crate::config::{self, CascadeSource, Config, ProviderConfig};

/// The last good listing of one provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderListing {
    /// Models as listed (static hints are applied at build time, so a
    /// changed hint in a reloaded config takes effect without a fetch).
    pub models: Vec<ModelMeta>,
    /// When this listing was fetched, Unix ms.
    pub fetched_at_ms: u64,
    /// The error of the latest fetch when it failed (the models are then
    /// the last good ones); `None` after a good fetch.
    pub last_error: Option<String>,
}

/// The result of one discovery round.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// When the round finished, Unix ms; 0 for "never ran".
    pub at_ms: u64,
    /// The last good listing of every provider with discovery enabled.
    pub listings: BTreeMap<String, ProviderListing>,
    /// Every discovered cascade of the config, built from `listings`.
    pub cascades: IndexMap<String, BuiltCascade>,
}

impl Round {
    /// The model refs of a cascade, in order (empty when unknown).
    pub fn refs(&self, cascade: &str) -> Vec<String> {
        self.cascades.get(cascade).map(BuiltCascade::model_refs).unwrap_or_default()
    }
}

/// The discovery spec of a configured cascade, in discovery's own types.
pub fn cascade_spec(name: &str, spec: &config::DiscoverySpec) -> CascadeSpec {
    CascadeSpec {
        name: name.to_owned(),
        strategy: spec.strategy,
        providers: spec.providers.clone(),
        preferred: spec.preferred.iter().map(ToString::to_string).collect(),
        filters: Filters {
            min_context: spec.filters.min_context.map(saturate_u32),
            max_cost_per_1m: spec.filters.max_cost_per_1m,
            free_only: spec.filters.free_only,
            exclude_patterns: spec.filters.exclude_patterns.clone(),
        },
        size: spec.size as usize,
        min_other_providers: spec.min_other_providers as usize,
        preferred_order: spec.preferred_order,
    }
}

fn saturate_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// The static `models:` of a provider as hints.
pub fn static_hints(p: &ProviderConfig) -> Vec<StaticHint> {
    p.models
        .iter()
        .map(|m| StaticHint {
            id: m.id.clone(),
            context: m.context.map(saturate_u32),
            price_in_per_1m: m.price.as_ref().map(|p| p.input),
            price_out_per_1m: m.price.as_ref().map(|p| p.output),
            quality: m.quality,
        })
        .collect()
}

/// Every model of every configured provider: listed ones with their hints
/// and then the provider's `price_per_1m` applied, static ones alone where a provider lists nothing (discovery off,
/// or no good listing yet). Warnings name hints that matched nothing.
pub fn merged_models(config: &Config, listings: &BTreeMap<String, ProviderListing>) -> (Vec<ModelMeta>, Vec<String>) {
    let mut models = Vec::new();
    let mut warnings = Vec::new();
    for (name, p) in &config.providers {
        let listed = p.discovery_format.as_ref().and_then(|_| listings.get(name)).map(|l| l.models.clone());
        let mut merged = apply_hints(name, listed, &static_hints(p));
        if let Some(price) = p.price {
            apply_provider_price(&mut merged.models, (price.input, price.output));
        }
        models.extend(merged.models);
        warnings.extend(merged.warnings);
    }
    (models, warnings)
}

/// What discovery knows of one model when a cascade falls back to its
/// static models: the provider's static `models:` entry for it, else its
/// listed entry, else nothing but its id; the provider's `price_per_1m`
/// fills a missing price. The fallback's models pass the cascade's filters
/// on this (SPEC §4: a filtered cascade never gains a model they reject).
pub fn static_meta(
    config: &Config,
    listings: &BTreeMap<String, ProviderListing>,
    provider: &str,
    id: &str,
) -> ModelMeta {
    let p = config.providers.get(provider);
    let hint = p.and_then(|p| static_hints(p).into_iter().find(|h| h.id == id));
    let listed = listings.get(provider).and_then(|l| l.models.iter().find(|m| m.id == id)).cloned();
    let mut models = match (hint, listed) {
        (Some(h), Some(l)) => apply_hints(provider, Some(vec![l]), &[h]).models,
        (Some(h), None) => apply_hints(provider, None, &[h]).models,
        (None, Some(l)) => vec![l],
        (None, None) => vec![ModelMeta::new(provider, id)],
    };
    if let Some(price) = p.and_then(|p| p.price) {
        apply_provider_price(&mut models, (price.input, price.output));
    }
    models.pop().unwrap_or_else(|| ModelMeta::new(provider, id))
}

/// Builds every discovered cascade of `config` from `listings`;
/// `ttft_ms` is the measured median time to first token of a model ref.
pub fn build_cascades(
    config: &Config,
    listings: &BTreeMap<String, ProviderListing>,
    ttft_ms: &dyn Fn(&str) -> Option<f64>,
) -> (IndexMap<String, BuiltCascade>, Vec<String>) {
    let (models, warnings) = merged_models(config, listings);
    let cascades = config
        .cascades
        .iter()
        .filter_map(|(name, c)| match &c.source {
            CascadeSource::Discovered(spec) => {
                Some((name.clone(), build_cascade(&cascade_spec(name, spec), &models, ttft_ms)))
            }
            CascadeSource::Fixed(_) => None,
        })
        .collect();
    (cascades, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "
providers:
  groq:
    kind: openai
    base_url: http://127.0.0.1:9/v1
    discovery: { enabled: true, format: groq }
    models: [ { id: llama-3.3-70b-versatile, context: 4096 } ]
  local:
    kind: openai
    base_url: http://127.0.0.1:9/v1
    models: [ { id: t-lite, context: 8192 } ]
cascades:
  chat:
    strategy: quality_first
    providers: [groq, local]
    size: 5
  fixed:
    models: [local/t-lite]
";

    fn config() -> Config {
        crate::config::load_str(YAML, None, &|_| None).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn static_models_stand_in_until_a_listing_arrives() {
        let (cascades, _) = build_cascades(&config(), &BTreeMap::new(), &|_| None);
        assert_eq!(cascades.len(), 1, "fixed cascades are not discovered");
        let refs = cascades["chat"].model_refs();
        assert_eq!(refs, ["groq/llama-3.3-70b-versatile", "local/t-lite"]);
    }

    #[test]
    fn listed_models_replace_the_static_ones_and_take_hints() {
        let mut listings = BTreeMap::new();
        let mut big = ModelMeta::new("groq", "qwen3-235b");
        big.context = Some(131_072);
        let listed = ModelMeta::new("groq", "llama-3.3-70b-versatile");
        listings.insert("groq".into(), ProviderListing { models: vec![big, listed], ..Default::default() });
        let (cascades, warnings) = build_cascades(&config(), &listings, &|_| None);
        assert!(warnings.is_empty(), "{warnings:?}");
        let chat = &cascades["chat"];
        assert_eq!(chat.model_refs(), ["groq/qwen3-235b", "groq/llama-3.3-70b-versatile", "local/t-lite"]);
        assert_eq!(chat.entries[1].meta.context, Some(4096), "the static hint applies to the listed model");
    }
}
