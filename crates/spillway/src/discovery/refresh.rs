//! The discovery refresh: fetch every listing, rebuild every discovered
//! cascade, report what changed, and swap the new plans into the running
//! gateway — every `discovery.interval`, on `POST /admin/discovery/refresh`,
//! and after a reload that added a provider.
//!
//! Fetching happens with no lock held; only applying a round (build the
//! cascades, publish, rebuild the gateway's plans, swap) runs under
//! [`DiscoveryState`]'s `apply` lock, so it is ordered with config reloads.
//! Requests in flight keep the plans they started with.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::diff::{diff, CascadeDiff};
use super::fetch::{fetch_all, Fetched};
use super::round::{build_cascades, ProviderListing, Round};
use super::state::{DiscoveryEvent, DiscoveryState};
use super::{cache, BuiltCascade};
use crate::config::Config;
use crate::health::clock::now_ms;
use crate::health::HealthRegistry;
use crate::server::AppState;
use crate::supervisor::{BackgroundJob, Supervisor};

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

/// Fetches every listing now and applies the result.
pub async fn refresh(state: &AppState) -> RefreshReport {
    let config = state.gateway.load().config.clone();
    let fetched = fetch_all(&config, &|_| {}).await;
    apply_fetched(state, fetched).await
}

async fn apply_fetched(state: &AppState, fetched: Vec<Fetched>) -> RefreshReport {
    let discovery = state.gateway.load().shared.discovery.clone();
    let _applying = discovery.apply.lock().await;
    // The config live now: a reload may have landed while we fetched.
    let gw = state.gateway.load_full();
    let old = discovery.current();
    let now = now_ms();
    let mut listings = old.listings.clone();
    let mut providers = Vec::new();
    for f in fetched {
        let mut report = ProviderReport { provider: f.provider.clone(), models: 0, error: None, warnings: Vec::new() };
        match f.result {
            Ok(listing) => {
                for w in &listing.warnings {
                    tracing::warn!(provider = %f.provider, warning = %w, "Skipped part of a model listing.");
                }
                report.models = listing.models.len();
                report.warnings = listing.warnings;
                let fresh = ProviderListing { models: listing.models, fetched_at_ms: now, last_error: None };
                listings.insert(f.provider, fresh);
            }
            Err(e) => {
                let error = e.to_string();
                tracing::warn!(provider = %f.provider, %error, "Model listing failed; keeping the last good one.");
                discovery.emit(DiscoveryEvent::ListingFailed { provider: f.provider.clone(), error: error.clone() });
                let kept = listings.entry(f.provider).or_default();
                kept.last_error = Some(error.clone());
                report.models = kept.models.len();
                report.error = Some(error);
            }
        }
        providers.push(report);
    }
    // With a shared store, rank by every instance's TTFT samples.
    if let Some(store) = gw.shared.state.store() {
        match store.ttft_all().await {
            Ok(all) => gw.health.set_shared_ttft(all),
            Err(e) => tracing::warn!(error = %e, "Cannot read the shared TTFT statistics; ranking by local ones."),
        }
    }
    let (round, changes) = build_round(&gw.config, &gw.health, &discovery, &old, listings, now);
    let cascades = round.cascades.iter().map(|(n, c)| (n.clone(), c.model_refs())).collect();
    discovery.publish(round.clone());
    state.gateway.store(Arc::new(gw.with_fresh_plans()));
    // Nothing listed means nothing worth keeping (no provider has discovery
    // on): no cache file appears in a data_dir nobody asked for.
    if !round.listings.is_empty() {
        let store = discovery.cache_store(&gw.shared.state);
        cache::save(store.as_ref(), &gw.config.state.data_dir, &round, gw.config.discovery.cache_ttl).await;
    }
    RefreshReport { at_ms: now, providers, changes, cascades }
}

/// Builds the round for `config` from `listings`, and reports every
/// cascade that changed against `old` (logged and sent as events), and
/// every cascade left with fewer than 2 live models. Does not publish.
pub(crate) fn build_round(
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

/// Applies the cached round (state store, else `data_dir`) to the running
/// gateway, rebuilt for the current config; returns whether there was one.
pub async fn restore(state: &AppState) -> bool {
    let gw = state.gateway.load_full();
    let discovery = gw.shared.discovery.clone();
    let store = discovery.cache_store(&gw.shared.state);
    let Some(cached) = cache::load(store.as_ref(), &gw.config.state.data_dir).await else {
        return false;
    };
    let _applying = discovery.apply.lock().await;
    let gw = state.gateway.load_full();
    tracing::info!(
        providers = cached.listings.len(),
        age_s = now_ms().saturating_sub(cached.at_ms) / 1000,
        "Restored the cached discovery round."
    );
    let (round, _) = build_round(&gw.config, &gw.health, &discovery, &cached, cached.listings.clone(), cached.at_ms);
    discovery.publish(round);
    state.gateway.store(Arc::new(gw.with_fresh_plans()));
    true
}

/// Starts discovery for a served gateway: remembers `supervisor` for the
/// background jobs of reloaded generations, and starts the refresh job.
pub fn start(state: &Arc<AppState>, supervisor: &Supervisor) {
    let discovery = state.gateway.load().shared.discovery.clone();
    let _ = discovery.supervisor.set(supervisor.clone());
    supervisor.spawn(RefreshJob { state: state.clone() });
}

/// After a failed listing, retry after this, doubling up to [`MAX_RETRY`]
/// (never later than the regular interval).
const FIRST_RETRY: Duration = Duration::from_secs(30);
const MAX_RETRY: Duration = Duration::from_secs(30 * 60);

/// The background job: restore the cache, then refresh whenever due.
pub struct RefreshJob {
    state: Arc<AppState>,
}

impl BackgroundJob for RefreshJob {
    fn name(&self) -> &'static str {
        "discovery_refresh"
    }

    async fn run(self, shutdown: CancellationToken) {
        let restored = tokio::select! {
            r = restore(&self.state) => r,
            () = shutdown.cancelled() => return,
        };
        let mut failures: u32 = 0;
        let mut due_now = !restored;
        loop {
            let wait = if due_now { Duration::ZERO } else { self.next_wait(failures) };
            let wake = self.state.gateway.load().shared.discovery.clone();
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = wake.wake.notified() => {}
                () = shutdown.cancelled() => return,
            }
            let report = tokio::select! {
                r = refresh(&self.state) => r,
                () = shutdown.cancelled() => return,
            };
            failures = if report.failed() > 0 { failures.saturating_add(1) } else { 0 };
            due_now = false;
        }
    }
}

impl RefreshJob {
    /// Until the next round: `interval` after the last one, or the retry
    /// back-off after a failure, whichever is sooner.
    fn next_wait(&self, failures: u32) -> Duration {
        let gw = self.state.gateway.load();
        let interval = gw.config.discovery.interval;
        let last = gw.shared.discovery.current().at_ms;
        let since = Duration::from_millis(now_ms().saturating_sub(last));
        let regular = interval.saturating_sub(since);
        if failures == 0 {
            return regular;
        }
        let backoff = FIRST_RETRY.saturating_mul(1 << failures.min(10).saturating_sub(1)).min(MAX_RETRY);
        regular.min(backoff.saturating_sub(since))
    }
}
