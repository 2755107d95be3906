//! The checks behind `load_str`: the gateway config a drill may run (mock
//! providers only, faults as outage windows), each traffic stream and
//! fault, every error with its path.

use super::raw::{RawFault, RawScenario, RawTraffic};
use super::{Fault, Output, Traffic, MAX_USERS};
use crate::config::raw::RawConfig;
use crate::config::units::parse_duration;
use crate::config::{compile, env, shape, Config, ConfigError, ModelRef, Outage, ProviderKind, StateBackend};
use std::path::Path;
use std::time::Duration;

/// The gateway config named by `config` or written under `gateway`,
/// checked to use mock providers only.
pub(super) fn gateway_config(cx: &mut Cx, raw: &RawScenario, base: &Path, lookup: env::Lookup<'_>) -> Option<Config> {
    let (config, path) = match (&raw.config, &raw.gateway) {
        (Some(_), Some(_)) | (None, None) => {
            cx.err("", "give the gateway config either as a file (`config`) or inline (`gateway`), not both");
            return None;
        }
        (Some(file), None) => {
            let file = base.join(file);
            match crate::config::load_file(&file) {
                Ok(c) => (c, "config"),
                Err(errors) => {
                    for e in errors.0 {
                        cx.err("config", format!("{}: {e}", file.display()));
                    }
                    return None;
                }
            }
        }
        (None, Some(inline)) => {
            // Variables were expanded with the rest of the scenario.
            let text = serde_yaml_ng::to_string(inline).unwrap_or_default();
            let compiled = shape::parse::<RawConfig>(&text, lookup).and_then(|raw| compile::compile(raw, None));
            match compiled {
                Ok(c) => (c, "gateway"),
                Err(errors) => {
                    for e in errors.0 {
                        let at = if e.path.is_empty() { "gateway".to_string() } else { format!("gateway.{}", e.path) };
                        cx.err(&at, e.message);
                    }
                    return None;
                }
            }
        }
    };
    let mut ok = true;
    for p in config.providers.values().filter(|p| p.kind != ProviderKind::Mock) {
        cx.err(
            path,
            format!(
                "provider `{}` is kind {}: a drill runs mock providers only (it must not call real APIs)",
                p.name,
                p.kind.as_str()
            ),
        );
        ok = false;
    }
    ok.then_some(config)
}

/// The config the drill runs: faults added as outage windows; state in
/// memory under a scratch directory set by the engine; no alert sinks or
/// handoff webhook (alerts are collected in-process instead).
pub(super) fn drill_config(mut config: Config, faults: &[Fault]) -> Config {
    for f in faults {
        for m in &f.models {
            let Some(r) = ModelRef::parse(m) else { continue };
            let Some(p) = config.providers.get_mut(&r.provider) else { continue };
            for model in p.models.iter_mut().filter(|s| s.id == r.model) {
                let b = model.behavior.get_or_insert_with(Default::default);
                match &f.answers {
                    Some((kind, share)) => {
                        match kind.as_str() {
                            "wrong_script" => b.wrong_script_rate = *share,
                            "empty" => b.near_empty_rate = *share,
                            _ => b.repeat_rate = *share,
                        }
                        b.bad_windows.push((f.at, f.lasts));
                    }
                    None => b.outages.push(Outage { start: f.at, duration: f.lasts, status: f.status }),
                }
            }
        }
    }
    config.state.backend = StateBackend::Memory;
    config.state.redis_url = None;
    config.alerts.telegram = None;
    config.alerts.webhook = None;
    config.handoff.webhook = None;
    config
}

/// Collects errors with their paths.
pub(super) struct Cx {
    pub(super) errors: Vec<ConfigError>,
}

impl Cx {
    pub(super) fn err(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(ConfigError::new(path, message));
    }

    pub(super) fn failed_at(&self, path: &str) -> bool {
        self.errors.iter().any(|e| e.path == path)
    }

    pub(super) fn duration(&mut self, path: &str, text: &str) -> Duration {
        parse_duration(text).unwrap_or_else(|e| {
            self.err(path, e);
            Duration::ZERO
        })
    }

    pub(super) fn share(&mut self, path: &str, value: Option<f64>) -> Option<f64> {
        let v = value?;
        if !(0.0..=1.0).contains(&v) {
            self.err(path, format!("expected a share between 0 and 1, got {v}"));
        }
        Some(v)
    }

    pub(super) fn non_negative(&mut self, path: &str, value: Option<f64>) -> Option<f64> {
        let v = value?;
        if !(v.is_finite() && v >= 0.0) {
            self.err(path, format!("expected a number of at least 0, got {v}"));
        }
        Some(v)
    }

    pub(super) fn traffic(&mut self, i: usize, t: RawTraffic, duration: Duration, config: Option<&Config>) -> Traffic {
        let path = format!("traffic[{i}]");
        if !t.rps.is_finite() || t.rps <= 0.0 {
            self.err(&format!("{path}.rps"), format!("expected requests per second above 0, got {}", t.rps));
        }
        if let Some(c) = config {
            if !routable(c, &t.cascade) {
                self.err(
                    &format!("{path}.cascade"),
                    format!("`{}` is neither a cascade of the config, `auto`, nor a model of its providers", t.cascade),
                );
            }
        }
        let from = t.from.map_or(Duration::ZERO, |d| self.duration(&format!("{path}.from"), &d));
        let until = t.until.map_or(duration, |d| self.duration(&format!("{path}.until"), &d));
        if from >= until || until > duration {
            self.err(&path, "`from` must come before `until`, and `until` no later than `duration`");
        }
        let output = match (t.json.unwrap_or(false), t.schema) {
            (_, Some(schema)) => {
                if let Err(e) = crate::normalize::CompiledSchema::compile(&schema) {
                    self.err(&format!("{path}.schema"), format!("not a valid JSON Schema ({e})"));
                }
                Output::Schema(schema)
            }
            (true, None) => Output::Json,
            (false, None) => Output::Text,
        };
        if t.users.is_some_and(|u| u == 0 || u > MAX_USERS) {
            self.err(&format!("{path}.users"), format!("expected 1 to {MAX_USERS} end users"));
        }
        if t.class.is_some() && t.users.is_none() {
            self.err(&format!("{path}.class"), "a caller class needs `users` (the end users it is spread over)");
        }
        if t.rps.is_finite() && t.rps > 0.0 && t.rps > 100_000.0 {
            self.err(&format!("{path}.rps"), "at most 100000 requests per second");
        }
        Traffic {
            cascade: t.cascade,
            rps: t.rps,
            from,
            until,
            stream: t.stream.unwrap_or(false),
            output,
            prompt: t.prompt.unwrap_or_else(|| "How do I reset my password?".to_string()),
            max_tokens: t.max_tokens,
            users: t.users.unwrap_or(0).min(MAX_USERS),
            class: t.class,
        }
    }

    pub(super) fn fault(&mut self, i: usize, f: RawFault, config: Option<&Config>) -> Option<Fault> {
        let path = format!("faults[{i}]");
        let at = self.duration(&format!("{path}.at"), &f.at);
        let lasts = self.duration(&format!("{path}.for"), &f.lasts);
        if lasts.is_zero() && !self.failed_at(&format!("{path}.for")) {
            self.err(&format!("{path}.for"), "must be longer than 0");
        }
        let status = match (f.hang.unwrap_or(false), f.status) {
            (true, Some(_)) => {
                self.err(&path, "give either `status` or `hang: true`, not both");
                0
            }
            (true, None) => 0,
            (false, status) => {
                let s = status.unwrap_or(503);
                if !(400..=599).contains(&s) {
                    self.err(&format!("{path}.status"), format!("expected an error status (400–599), got {s}"));
                }
                s
            }
        };
        let answers = match f.answers {
            None => None,
            Some(kind) if matches!(kind.as_str(), "wrong_script" | "empty" | "repetition") => {
                let share = f.share.unwrap_or(1.0);
                if !(0.0..=1.0).contains(&share) {
                    self.err(&format!("{path}.share"), "expected a share between 0 and 1");
                }
                Some((kind, share))
            }
            Some(kind) => {
                self.err(
                    &format!("{path}.answers"),
                    format!("unknown answers `{kind}`: expected wrong_script, empty or repetition"),
                );
                None
            }
        };
        let what = match &answers {
            Some((kind, share)) => format!("answers {kind} ({:.0}%)", share * 100.0),
            None if status == 0 => "hangs".to_string(),
            None => status.to_string(),
        };
        let config = config?;
        let (models, label) = match (&f.model, &f.provider) {
            (Some(m), None) => {
                let known = ModelRef::parse(m).is_some_and(|r| {
                    config.providers.get(&r.provider).is_some_and(|p| p.models.iter().any(|s| s.id == r.model))
                });
                if !known {
                    self.err(&format!("{path}.model"), format!("`{m}` is not a model of the config's providers"));
                    return None;
                }
                (vec![m.clone()], format!("{m} {what}"))
            }
            (None, Some(p)) => {
                let Some(provider) = config.providers.get(p) else {
                    self.err(&format!("{path}.provider"), format!("`{p}` is not a provider of the config"));
                    return None;
                };
                let models = provider.models.iter().map(|s| format!("{p}/{}", s.id)).collect();
                (models, format!("{p}/* {what}"))
            }
            _ => {
                self.err(&path, "name either a `model` or a `provider`");
                return None;
            }
        };
        Some(Fault { at, lasts, models, status, label, answers })
    }
}

/// Whether the gateway would serve a request for `model`.
fn routable(config: &Config, model: &str) -> bool {
    if model == "auto" && !config.cascades.is_empty() || config.cascades.contains_key(model) {
        return true;
    }
    ModelRef::parse(model)
        .is_some_and(|r| config.providers.get(&r.provider).is_some_and(|p| p.models.iter().any(|s| s.id == r.model)))
}
