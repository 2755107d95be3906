//! The discovery refresh job: fetch every listing, rebuild every
//! discovered cascade, and swap the new plans into the live gateway —
//! every `discovery.interval`, on `POST /admin/discovery/refresh`, and
//! after a reload that added a provider.
//!
//! Fetching happens with no lock held; only applying a round (build the
//! cascades, publish, rebuild the gateway's plans, swap) runs under the
//! discovery state's `apply` lock, so it is ordered with config reloads.
//! Requests in flight keep the plans they started with. A refreshed
//! gateway is the same generation: its jobs keep running.

use super::live::Live;
use crate::discovery::fetch::{fetch_all, Fetched};
use crate::discovery::refresh::{build_round, ProviderReport, RefreshReport};
use crate::discovery::{cache, DiscoveryEvent, ProviderListing};
use crate::health::clock::now_ms;
use crate::supervisor::BackgroundJob;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Fetches every listing now and applies the result.
pub async fn refresh(state: &Live) -> RefreshReport {
    let config = state.load().config.clone();
    let fetched = fetch_all(&config, &|_| {}).await;
    apply_fetched(state, fetched).await
}

async fn apply_fetched(state: &Live, fetched: Vec<Fetched>) -> RefreshReport {
    let discovery = state.load().shared.discovery.clone();
    let _applying = discovery.apply.lock().await;
    // The config live now: a reload may have landed while we fetched.
    let gw = state.load_full();
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
    state.store(Arc::new(gw.with_fresh_plans()));
    // Nothing listed means nothing worth keeping (no provider has discovery
    // on): no cache file appears in a data_dir nobody asked for.
    if !round.listings.is_empty() {
        let store = discovery.cache_store(&gw.shared.state);
        cache::save(store.as_ref(), &gw.config.state.data_dir, &round, gw.config.discovery.cache_ttl).await;
    }
    RefreshReport { at_ms: now, providers, changes, cascades }
}

/// Applies the cached round (state store, else `data_dir`) to the running
/// gateway, rebuilt for the current config; returns whether there was one.
pub async fn restore(state: &Live) -> bool {
    let gw = state.load_full();
    let discovery = gw.shared.discovery.clone();
    let store = discovery.cache_store(&gw.shared.state);
    // At start-up the shared store's link is still connecting, and every
    // command fails at once until it is up: give it a moment, or an
    // instance started next to a running one would ignore their cache.
    if let Some(mut link) = store.link() {
        let connected = link.wait_for(|s| *s != crate::state::LinkState::Connecting);
        let _ = tokio::time::timeout(RESTORE_WAIT, connected).await;
    }
    let Some(cached) = cache::load(store.as_ref(), &gw.config.state.data_dir).await else {
        return false;
    };
    let _applying = discovery.apply.lock().await;
    let gw = state.load_full();
    tracing::info!(
        providers = cached.listings.len(),
        age_s = now_ms().saturating_sub(cached.at_ms) / 1000,
        "Restored the cached discovery round."
    );
    let (round, _) = build_round(&gw.config, &gw.health, &discovery, &cached, cached.listings.clone(), cached.at_ms);
    discovery.publish(round);
    state.store(Arc::new(gw.with_fresh_plans()));
    true
}

/// The refresh job of a served gateway.
pub fn job(state: &Arc<Live>) -> RefreshJob {
    RefreshJob { state: state.clone() }
}

/// How long a restore waits for the shared store's first connection.
const RESTORE_WAIT: Duration = Duration::from_secs(5);

/// After a failed listing, retry after this, doubling up to [`MAX_RETRY`]
/// (never later than the regular interval).
const FIRST_RETRY: Duration = Duration::from_secs(30);
const MAX_RETRY: Duration = Duration::from_secs(30 * 60);

/// The background job: restore the cache, then refresh whenever due.
pub struct RefreshJob {
    state: Arc<Live>,
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
            let wake = self.state.load().shared.discovery.clone();
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
        let gw = self.state.load();
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
