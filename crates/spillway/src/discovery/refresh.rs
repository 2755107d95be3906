//! One discovery round: from listings to every discovered cascade, with
//! what changed against the last round (logged and raised as events) and
//! what a refresh reports. The job that fetches and swaps the new plans
//! into the running gateway is `gateway::refresh`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::diff::{diff, CascadeDiff};
use super::round::{build_cascades, ProviderListing, Round};
use super::state::{DiscoveryEvent, DiscoveryState};
use super::BuiltCascade;
use crate::config::Config;
use crate::health::clock::now_ms;
use crate::health::HealthRegistry;

/// What one provider's fetch gave, for the admin answer.
#[derive(Debug, Clone, Serialize)]
pub struct ProviderReport {
    /// The provider.
    pub provider: String,
    /// Models listed (the last good count when the fetch failed).
    pub models: usize,
    /// Why this round's fetch failed, if it did.
    pub error: Option<String>,
    /// Models or fields skipped while reading the listing.
    pub warnings: Vec<String>,
}

/// What a refresh did.
#[derive(Debug, Clone, Serialize)]
pub struct RefreshReport {
    /// When it was applied, Unix ms.
    pub at_ms: u64,
    /// Per provider with discovery enabled.
    pub providers: Vec<ProviderReport>,
    /// Cascades that changed.
    pub changes: Vec<CascadeDiff>,
    /// Every discovered cascade's model refs now.
    pub cascades: BTreeMap<String, Vec<String>>,
}

impl RefreshReport {
    /// Listings that failed for a reason a retry may fix.
    pub fn failed(&self) -> usize {
        self.providers.iter().filter(|p| p.error.is_some()).count()
    }
}

/// Builds the round for `config` from `listings`, and reports every
/// cascade that changed against `old` (logged and sent as events), and
/// every cascade left with fewer than 2 live models. Does not publish.
pub fn build_round(
    config: &Config,
    health: &HealthRegistry,
    discovery: &DiscoveryState,
    old: &Round,
    mut listings: BTreeMap<String, ProviderListing>,
    at_ms: u64,
) -> (Round, Vec<CascadeDiff>) {
    // Providers removed from the config, or with discovery turned off, no
    // longer have a listing worth keeping.
    listings.retain(|name, _| config.providers.get(name).is_some_and(|p| p.discovery_format.is_some()));
    let ttft = |r: &str| health.ttft_ms(r);
    let (cascades, warnings) = build_cascades(config, &listings, &ttft);
    for w in &warnings {
        tracing::warn!(warning = %w, "Static model hint unused.");
    }
    let mut changes = Vec::new();
    for (name, built) in &cascades {
        for note in &built.notes {
            tracing::info!(cascade = %name, note = %note, "Discovery note.");
        }
        let before = old.cascades.get(name);
        for out in &built.left_out {
            if out.is_unknown() {
                tracing::warn!(cascade = %name, model = %out.model_ref, "{out}");
            }
            let known = before.is_some_and(|b| b.left_out.iter().any(|o| o.model_ref == out.model_ref));
            // A preferred model lost to what the listing did not say: once.
            if out.preferred && out.is_unknown() && !known {
                discovery.emit(DiscoveryEvent::PreferredLeftOut {
                    cascade: name.clone(),
                    model: out.model_ref.clone(),
                    why: out.why.clone(),
                });
            }
        }
        let new_refs = built.model_refs();
        if let Some(before) = old.cascades.get(name) {
            let d = diff(name, &before.model_refs(), &new_refs);
            if !d.is_empty() {
                let text = d.to_string();
                tracing::info!(cascade = %name, change = %text, "Cascade changed.");
                discovery.emit(DiscoveryEvent::CascadeChanged { diff: d.clone(), text });
                changes.push(d);
            }
        } else {
            tracing::info!(cascade = %name, models = %new_refs.join(", "), "Cascade built.");
        }
        check_alive(name, built, health, discovery);
    }
    if !changes.is_empty() {
        discovery.emit(DiscoveryEvent::RoundChanged { diffs: changes.clone() });
    }
    (Round { at_ms, listings, cascades }, changes)
}

/// SPEC: a cascade is never silently empty. `gateway` appends static models
/// behind a build of fewer than 2; this raises the alert.
fn check_alive(name: &str, built: &BuiltCascade, health: &HealthRegistry, discovery: &DiscoveryState) {
    let now = now_ms();
    let alive = built
        .entries
        .iter()
        .filter(|e| {
            let model_dead = health.find_model(&e.model_ref).is_some_and(|m| m.dead.is_dead(now));
            !model_dead && !health.provider(&e.meta.provider).dead.is_dead(now)
        })
        .count();
    if alive < 2 {
        let models = built.model_refs();
        tracing::warn!(
            cascade = %name, alive, built = %models.join(", "),
            "Fewer than 2 discovered models are alive; the cascade falls back to its static models."
        );
        discovery.emit(DiscoveryEvent::TooFewModels { cascade: name.to_owned(), alive, models });
    }
}
