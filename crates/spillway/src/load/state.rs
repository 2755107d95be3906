//! The published load of one monitored provider: what its monitor (or the
//! admin API, for `emulated`) writes and the request path reads (SPEC §9).
//!
//! [`ProviderLoad::publish`] runs the hysteresis selector under a mutex
//! only writers take, then stores the chosen profile in an atomic. The
//! request path reads that atomic and rewrites the body: no lock, no I/O,
//! no clock.

use super::profile::{Profile, ProfileSelector};
use super::rewrite::apply_profile;
use crate::config::{LoadSource, ProviderKind};
use crate::metrics::{LoadProfileLabels, Metrics, ProviderLabels};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// The load state of one monitored provider.
#[derive(Debug)]
pub struct ProviderLoad {
    name: String,
    source: LoadSource,
    profiles: Vec<Profile>,
    default_max_tokens: Option<u32>,
    /// The provider accepts one system message only, so a profile's prompt
    /// is merged into the client's instead of added beside it.
    single_system: bool,
    /// Index into `profiles`; the only thing the request path reads.
    current: AtomicUsize,
    /// The last load as `f64` bits; NaN while unknown.
    load_bits: AtomicU64,
    stale: AtomicBool,
    /// Completion tokens the provider generated, counted by the request
    /// path for `token_velocity` (the monitor turns deltas into a rate).
    tokens: AtomicU64,
    /// Hysteresis state. A std mutex: held for a few comparisons by a
    /// monitor tick or an admin call, never by a request and never across
    /// an await.
    selector: Mutex<ProfileSelector>,
    gauges: Gauges,
}

#[derive(Debug)]
struct Gauges {
    load: Gauge<f64, AtomicU64>,
    stale: Gauge,
    /// One per profile, in config order.
    profiles: Vec<Gauge>,
    /// `spillway_fair_load_relief_total` of this provider.
    relieved: Counter,
}

/// `/admin/state` and `GET /admin/load`: one provider's load now.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LoadSnapshot {
    pub provider: String,
    /// `vllm_metrics`, `nvml`, `inflight`, `token_velocity` or `emulated`.
    pub source: &'static str,
    /// The load in 0..1, `null` while unknown.
    pub load: Option<f64>,
    /// The active profile.
    pub profile: String,
    /// The source failed three intervals in a row.
    pub stale: bool,
}

/// `PUT /admin/load/{provider}` on a provider whose load is measured.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("provider `{provider}` takes its load from `{source_name}`; only `emulated` loads can be set")]
pub struct NotEmulated {
    pub provider: String,
    pub source_name: &'static str,
}

/// The config name of a source.
pub fn source_name(source: &LoadSource) -> &'static str {
    match source {
        LoadSource::VllmMetrics { .. } => "vllm_metrics",
        LoadSource::Nvml { .. } => "nvml",
        LoadSource::Inflight { .. } => "inflight",
        LoadSource::TokenVelocity { .. } => "token_velocity",
        LoadSource::Emulated => "emulated",
    }
}

impl ProviderLoad {
    pub(super) fn new(
        name: &str,
        source: LoadSource,
        profiles: Vec<Profile>,
        hysteresis: f64,
        default_max_tokens: Option<u32>,
        kind: ProviderKind,
        metrics: &Metrics,
    ) -> Self {
        let provider = ProviderLabels { provider: name.to_owned() };
        let gauges = Gauges {
            load: metrics.load.get_or_create(&provider).clone(),
            stale: metrics.load_stale.get_or_create(&provider).clone(),
            relieved: metrics.keys.relieved.get_or_create(&provider).clone(),
            profiles: profiles
                .iter()
                .map(|p| {
                    let labels = LoadProfileLabels { provider: name.to_owned(), profile: p.name.clone() };
                    metrics.load_profile.get_or_create(&labels).clone()
                })
                .collect(),
        };
        let this = ProviderLoad {
            name: name.to_owned(),
            source,
            selector: Mutex::new(ProfileSelector::new(profiles.clone(), hysteresis)),
            profiles,
            default_max_tokens,
            single_system: matches!(
                kind,
                ProviderKind::GigaChat
                    | ProviderKind::Yandex
                    | ProviderKind::Anthropic
                    | ProviderKind::Gemini
                    | ProviderKind::Bedrock
            ),
            current: AtomicUsize::new(0),
            load_bits: AtomicU64::new(f64::NAN.to_bits()),
            stale: AtomicBool::new(false),
            tokens: AtomicU64::new(0),
            gauges,
        };
        this.update_gauges(None, false, 0);
        this
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn source(&self) -> &LoadSource {
        &self.source
    }

    /// The active profile (the request path's one read: an atomic load).
    pub fn profile(&self) -> Option<&Profile> {
        self.profiles.get(self.current.load(Ordering::Acquire))
    }

    /// In its last profile, with more than one configured: what
    /// `skip_when_lazy` routes around.
    pub fn is_lazy(&self) -> bool {
        let last = self.profiles.len().saturating_sub(1);
        last > 0 && self.current.load(Ordering::Acquire) == last
    }

    /// Applies the active profile to one attempt's body and returns the
    /// profile's name (for `x-spillway-load-profile`). A `relieved` caller
    /// (at or under its fair share while another is above:
    /// `tenancy::fair::relieved`) gets the profile before the active one.
    pub fn rewrite(&self, body: &mut crate::api::request::Outgoing<'_>, relieved: bool) -> Option<&str> {
        let profile = self.profile_for(relieved)?;
        if relieved && self.current.load(Ordering::Relaxed) > 0 {
            self.gauges.relieved.inc();
        }
        if profile.rewrites() {
            apply_profile(body.to_mut(), profile, self.default_max_tokens, self.single_system);
        }
        Some(&profile.name)
    }

    /// The profile a request runs under: the active one, or for a
    /// `relieved` caller the one before it (the first stays the first).
    pub fn profile_for(&self, relieved: bool) -> Option<&Profile> {
        let current = self.current.load(Ordering::Acquire);
        self.profiles.get(if relieved { current.saturating_sub(1) } else { current })
    }

    /// The last published load; `None` while unknown.
    pub fn load(&self) -> Option<f64> {
        let load = f64::from_bits(self.load_bits.load(Ordering::Acquire));
        (!load.is_nan()).then_some(load)
    }

    /// Whether the source has failed three intervals in a row.
    pub fn is_stale(&self) -> bool {
        self.stale.load(Ordering::Acquire)
    }

    /// Publishes a reading (`None`: unknown), choosing the profile with
    /// hysteresis. Called by the monitor and the admin API.
    pub fn publish(&self, load: Option<f64>, stale: bool) {
        let load = load.filter(|l| !l.is_nan());
        let mut selector = self.selector.lock().unwrap_or_else(PoisonError::into_inner);
        let before = selector.current();
        let index = selector.select(load);
        // Under the lock, so two writers cannot publish out of order.
        self.load_bits.store(load.unwrap_or(f64::NAN).to_bits(), Ordering::Release);
        self.stale.store(stale, Ordering::Release);
        self.current.store(index, Ordering::Release);
        drop(selector);
        self.update_gauges(load, stale, index);
        if index != before {
            tracing::info!(
                provider = %self.name,
                from = self.profile_name(before),
                to = self.profile_name(index),
                load = load.unwrap_or(f64::NAN),
                "Load profile changed."
            );
        }
    }

    /// Sets an `emulated` provider's load (`None` clears it to unknown).
    pub fn set_emulated(&self, load: Option<f64>) -> Result<(), NotEmulated> {
        if self.source != LoadSource::Emulated {
            return Err(NotEmulated { provider: self.name.clone(), source_name: source_name(&self.source) });
        }
        self.publish(load.map(|l| l.clamp(0.0, 1.0)), false);
        Ok(())
    }

    /// Whether the request path should count generated tokens.
    pub fn counts_tokens(&self) -> bool {
        matches!(self.source, LoadSource::TokenVelocity { .. })
    }

    /// Adds generated tokens (`token_velocity`).
    pub fn record_tokens(&self, n: u64) {
        self.tokens.fetch_add(n, Ordering::Relaxed);
    }

    /// Tokens generated since the registry was built.
    pub fn tokens(&self) -> u64 {
        self.tokens.load(Ordering::Relaxed)
    }

    /// The state now, for the admin API.
    pub fn snapshot(&self) -> LoadSnapshot {
        LoadSnapshot {
            provider: self.name.clone(),
            source: source_name(&self.source),
            load: self.load(),
            profile: self.profile_name(self.current.load(Ordering::Acquire)).to_owned(),
            stale: self.is_stale(),
        }
    }

    fn profile_name(&self, index: usize) -> &str {
        self.profiles.get(index).map_or("", |p| p.name.as_str())
    }

    fn update_gauges(&self, load: Option<f64>, stale: bool, index: usize) {
        self.gauges.load.set(load.unwrap_or(f64::NAN));
        self.gauges.stale.set(i64::from(stale));
        for (i, g) in self.gauges.profiles.iter().enumerate() {
            g.set(i64::from(i == index));
        }
    }
}

#[cfg(test)]
pub(crate) fn test_provider(source: LoadSource, metrics: &Metrics) -> std::sync::Arc<ProviderLoad> {
    let profiles =
        vec![Profile::plain("normal", Some(0.75)), Profile::plain("tired", Some(0.90)), Profile::plain("lazy", None)];
    std::sync::Arc::new(ProviderLoad::new("local", source, profiles, 0.03, Some(1024), ProviderKind::OpenAi, metrics))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_moves_profile_gauges_and_snapshot() {
        let metrics = Metrics::new();
        let p = test_provider(LoadSource::Emulated, &metrics);
        assert_eq!(p.profile().map(|p| p.name.as_str()), Some("normal"));
        assert_eq!(p.load(), None);
        p.set_emulated(Some(0.95)).unwrap();
        assert!(p.is_lazy());
        let text = metrics.render();
        assert!(text.contains(r#"spillway_load{provider="local"} 0.95"#), "{text}");
        assert!(text.contains(r#"spillway_load_profile{provider="local",profile="lazy"} 1"#));
        assert!(text.contains(r#"spillway_load_profile{provider="local",profile="normal"} 0"#));
        assert!(text.contains(r#"spillway_load_stale{provider="local"} 0"#));
        p.publish(None, true);
        let snap = p.snapshot();
        assert_eq!(
            snap,
            LoadSnapshot {
                provider: "local".into(),
                source: "emulated",
                load: None,
                profile: "normal".into(),
                stale: true,
            }
        );
        assert!(metrics.render().contains(r#"spillway_load_stale{provider="local"} 1"#));
    }

    #[test]
    fn only_emulated_loads_can_be_set() {
        let metrics = Metrics::new();
        let p = test_provider(LoadSource::Inflight { capacity: 4.0 }, &metrics);
        let err = p.set_emulated(Some(0.5)).unwrap_err();
        assert_eq!(err.source_name, "inflight");
        assert_eq!(p.load(), None);
        let e = test_provider(LoadSource::Emulated, &metrics);
        e.set_emulated(Some(7.0)).unwrap();
        assert_eq!(e.load(), Some(1.0));
        e.set_emulated(None).unwrap();
        assert_eq!(e.load(), None);
        assert!(!e.is_lazy());
    }

    #[test]
    fn a_relieved_caller_runs_one_profile_lighter() {
        let metrics = Metrics::new();
        let p = test_provider(LoadSource::Emulated, &metrics);
        let name = |relieved| p.profile_for(relieved).map(|p| p.name.clone());
        for (load, heavy, light) in
            [(0.5, "normal", "normal"), (0.8, "tired", "normal"), (0.95, "lazy", "tired"), (1.0, "lazy", "tired")]
        {
            p.set_emulated(Some(load)).unwrap();
            assert_eq!(name(false).as_deref(), Some(heavy), "load {load}");
            assert_eq!(name(true).as_deref(), Some(light), "load {load}");
        }
        // The rewrite names what it applied.
        let req = crate::api::ChatRequest::parse(bytes::Bytes::from_static(
            br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
        ))
        .unwrap();
        let mut body = crate::api::request::Outgoing::new(&req);
        assert_eq!(p.rewrite(&mut body, true), Some("tired"));
        assert!(metrics.render().contains(r#"spillway_fair_load_relief_total{provider="local"} 1"#));
    }
}
