//! Hot reload (SPEC §4): on SIGHUP or `POST /admin/config/reload`, re-read
//! the config file, compile it with the same step as start-up, and swap in a
//! gateway built from it — or reject it with every error and keep the old.
//!
//! Requests in flight hold an `Arc` of the gateway they started on and
//! finish there. Health, metrics and discovery live in
//! [`super::Shared`] and carry over; discovered cascades are
//! rebuilt for the new config from the cached listings at once, and a
//! refresh is asked for when the new config has a provider with no listing
//! yet. The old generation's background jobs stop when its last gateway drops
//! (requests in flight on it finish first).

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::build::Gateway;
use super::live::Live;
use crate::config::{Config, ConfigErrors};
use crate::discovery::refresh::build_round;
use crate::discovery::{CascadeDiff, DiscoveryEvent};
use crate::supervisor::BackgroundJob;

/// A reload that took effect.
#[derive(Debug, Clone, Serialize)]
pub struct Reloaded {
    /// The file read.
    pub path: PathBuf,
    /// Discovered cascades that changed with the new config.
    pub changes: Vec<CascadeDiff>,
    /// Settings that changed but only apply after a restart.
    pub needs_restart: Vec<&'static str>,
    /// What the new config changed: `providers.groq: changed`,
    /// `cascades.chat: added`, `health: changed`, … (empty: nothing).
    pub changed: Vec<String>,
}

/// Why a reload was rejected; the old config stays.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// The gateway runs the embedded demo config, not a file.
    #[error("the gateway was not started from a config file; nothing to reload")]
    NoFile,
    /// The file does not compile; every error, each with its path.
    #[error("invalid config:\n{0}")]
    Invalid(ConfigErrors),
    /// It compiles, but a provider cannot be built (an unreadable `ca_file`).
    #[error("{0}")]
    Build(String),
}

impl ReloadError {
    /// Every error as one line each (path first), for logs, events and JSON.
    pub fn lines(&self) -> Vec<String> {
        match self {
            Self::Invalid(errors) => errors.0.iter().map(ToString::to_string).collect(),
            other => vec![other.to_string()],
        }
    }
}

/// Re-reads and applies the config file the gateway was started from.
pub async fn reload(state: &Live) -> Result<Reloaded, ReloadError> {
    let discovery = state.load().shared.discovery.clone();
    let result = reload_inner(state).await;
    match &result {
        Ok(r) => {
            tracing::info!(path = %r.path.display(), changed = %r.changed.join(", "), "Config reloaded.");
            for setting in &r.needs_restart {
                tracing::warn!(setting, "This setting changed but applies only after a restart.");
            }
            discovery.emit(DiscoveryEvent::ConfigReloaded { path: r.path.display().to_string() });
        }
        Err(e) => {
            let errors = e.lines();
            for line in &errors {
                tracing::warn!(error = %line, "Config reload rejected; the running config stays.");
            }
            discovery.emit(DiscoveryEvent::ConfigRejected { errors });
        }
    }
    result
}

async fn reload_inner(state: &Live) -> Result<Reloaded, ReloadError> {
    let path = state.load().config.source.clone().ok_or(ReloadError::NoFile)?;
    let read_path = path.clone();
    let config = tokio::task::spawn_blocking(move || crate::config::load_file(&read_path))
        .await
        .map_err(|e| ReloadError::Build(format!("the config reader stopped: {e}")))?
        .map_err(ReloadError::Invalid)?;

    let discovery = state.load().shared.discovery.clone();
    let _applying = discovery.apply.lock().await;
    let old_gw = state.load_full();
    let needs_restart = needs_restart(&old_gw.config, &config);
    let changed = config_changes(&old_gw.config, &config);
    let old_round = discovery.current();
    let (round, changes) =
        build_round(&config, &old_gw.health, &discovery, &old_round, old_round.listings.clone(), old_round.at_ms);
    let missing_listing =
        config.providers.values().any(|p| p.discovery_format.is_some() && !round.listings.contains_key(&p.name));
    discovery.publish(round);
    let gateway = match Gateway::build(config, &old_gw.shared) {
        Ok(g) => g,
        Err(e) => {
            // Back to the round that matches the gateway that stays.
            discovery.publish((*old_round).clone());
            return Err(ReloadError::Build(e.to_string()));
        }
    };
    // Starts the new generation's jobs; the old ones stop with the old
    // generation's last gateway.
    state.store(Arc::new(gateway));
    if missing_listing {
        discovery.request_refresh();
    }
    Ok(Reloaded { path, changes, needs_restart, changed })
}

/// A setting's value for comparison: its `Debug` text (secrets show
/// redacted there) and a hash of its secrets, so a rotated key counts as
/// a change without being written anywhere.
fn fingerprint<T: std::fmt::Debug>(value: &T, secrets: &[&crate::config::Secret]) -> (String, u64) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for s in secrets {
        s.expose().hash(&mut h);
    }
    (format!("{value:?}"), h.finish())
}

fn provider_print(p: &crate::config::ProviderConfig) -> (String, u64) {
    let mut secrets: Vec<&crate::config::Secret> =
        [&p.api_key, &p.auth_key, &p.iam_token].into_iter().flatten().collect();
    secrets.extend(p.headers.iter().map(|(_, v)| v));
    fingerprint(p, &secrets)
}

/// What changed between two configs, by section and by named entry.
fn config_changes(old: &Config, new: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let mut named = |section: &str, old: Vec<(&String, (String, u64))>, new: Vec<(&String, (String, u64))>| {
        for (name, print) in &new {
            match old.iter().find(|(n, _)| n == name) {
                None => out.push(format!("{section}.{name}: added")),
                Some((_, before)) if before != print => out.push(format!("{section}.{name}: changed")),
                Some(_) => {}
            }
        }
        for (name, _) in &old {
            if !new.iter().any(|(n, _)| n == name) {
                out.push(format!("{section}.{name}: removed"));
            }
        }
    };
    named(
        "providers",
        old.providers.iter().map(|(n, p)| (n, provider_print(p))).collect(),
        new.providers.iter().map(|(n, p)| (n, provider_print(p))).collect(),
    );
    named(
        "cascades",
        old.cascades.iter().map(|(n, c)| (n, fingerprint(c, &[]))).collect(),
        new.cascades.iter().map(|(n, c)| (n, fingerprint(c, &[]))).collect(),
    );
    let server = |c: &Config| {
        let mut secrets: Vec<&crate::config::Secret> = c.server.api_keys.iter().collect();
        secrets.extend(&c.server.admin_token);
        fingerprint(&c.server, &secrets)
    };
    let sections = [
        ("server", server(old) != server(new)),
        ("state", fingerprint(&old.state, &[]) != fingerprint(&new.state, &[])),
        ("health", fingerprint(&old.health, &[]) != fingerprint(&new.health, &[])),
        ("discovery", fingerprint(&old.discovery, &[]) != fingerprint(&new.discovery, &[])),
        ("prompts", fingerprint(&old.prompts, &[]) != fingerprint(&new.prompts, &[])),
        ("escalation", fingerprint(&old.escalation, &[]) != fingerprint(&new.escalation, &[])),
        ("alerts", fingerprint(&old.alerts, &[]) != fingerprint(&new.alerts, &[])),
        ("handoff", fingerprint(&old.handoff, &[]) != fingerprint(&new.handoff, &[])),
        ("responses", fingerprint(&old.responses, &[]) != fingerprint(&new.responses, &[])),
        ("telemetry", telemetry_print(old) != telemetry_print(new)),
    ];
    out.extend(sections.into_iter().filter(|(_, changed)| *changed).map(|(s, _)| format!("{s}: changed")));
    out
}

/// Settings read once at start-up (the listener, the state store) that a
/// reload cannot change.
fn needs_restart(old: &Config, new: &Config) -> Vec<&'static str> {
    let mut out = Vec::new();
    if old.server.listen != new.server.listen {
        out.push("server.listen");
    }
    if old.server.header_read_timeout != new.server.header_read_timeout {
        out.push("server.header_read_timeout");
    }
    if old.state.backend != new.state.backend || old.state.key_prefix != new.state.key_prefix {
        out.push("state");
    }
    if old.state.data_dir != new.state.data_dir {
        out.push("state.data_dir");
    }
    if telemetry_print(old) != telemetry_print(new) {
        out.push("telemetry");
    }
    out
}

/// `telemetry:` for comparison (the request log's writer and the trace
/// exporter are started once, by `App::start`).
fn telemetry_print(c: &Config) -> (String, u64) {
    let secrets: Vec<&crate::config::Secret> =
        c.telemetry.otlp.iter().flat_map(|o| o.headers.iter().map(|(_, v)| v)).collect();
    fingerprint(&c.telemetry, &secrets)
}

/// Reloads on every SIGHUP until shutdown (Unix only).
///
/// The signal handler is installed when this is made, not when the job
/// first runs: a SIGHUP between start-up and the job's first poll must
/// reload, not kill the process (SIGHUP's default action).
pub struct ReloadOnSighup {
    state: Arc<Live>,
    #[cfg(unix)]
    hup: Option<tokio::signal::unix::Signal>,
}

impl ReloadOnSighup {
    /// Installs the SIGHUP handler now, for `state`. Needs a runtime.
    pub fn new(state: Arc<Live>) -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let hup = match signal(SignalKind::hangup()) {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::warn!(error = %e, "Cannot watch SIGHUP; reload with POST /admin/config/reload.");
                    None
                }
            };
            Self { state, hup }
        }
        #[cfg(not(unix))]
        Self { state }
    }
}

impl BackgroundJob for ReloadOnSighup {
    fn name(&self) -> &'static str {
        "reload_on_sighup"
    }

    async fn run(self, shutdown: CancellationToken) {
        #[cfg(unix)]
        {
            let Some(mut hup) = self.hup else {
                shutdown.cancelled().await;
                return;
            };
            loop {
                tokio::select! {
                    got = hup.recv() => {
                        if got.is_none() {
                            return;
                        }
                        tracing::info!("SIGHUP received: reloading the config.");
                        // The outcome is logged and sent as an event inside.
                        let _ = reload(&self.state).await;
                    }
                    () = shutdown.cancelled() => return,
                }
            }
        }
        #[cfg(not(unix))]
        shutdown.cancelled().await;
    }
}
