//! The semantic half of config compilation: every rule SPEC §4 states,
//! checked in one pass that collects all errors with their YAML paths.
//!
//! Pure: no network, no clients. The one file access is checking that
//! referenced files (`ca_file`, prompt templates) exist, so a typo fails
//! `spillway check` instead of the first request.

use super::raw::*;
use super::units::{parse_duration, parse_size};
use super::*;
use std::collections::HashSet;

mod alerts;
mod canary;
mod cascades;
mod handoff;
mod health;
pub(crate) mod keys;
pub(crate) mod known;
pub(crate) mod listen;
mod load;
mod prompts;
mod providers;
mod providers_cloud;
mod quality;
mod responses;
mod server;
mod telemetry;

use alerts::compile_alerts;
use cascades::{check_embedding_cascade, compile_cascade};
use handoff::{compile_escalation, compile_handoff};
use health::compile_health;
use prompts::compile_prompt;
use providers::compile_provider;
use responses::compile_responses;
use server::{compile_server, compile_state};
use telemetry::compile_telemetry;

/// Collects errors while compiling.
struct Ctx {
    errors: Vec<ConfigError>,
    /// Providers declared but not compiled (their error is reported):
    /// refs to them report nothing more, so one mistake is one error.
    failed_providers: HashSet<String>,
}

impl Ctx {
    fn err(&mut self, path: impl AsRef<str>, msg: impl Into<String>) {
        self.errors.push(ConfigError::new(path.as_ref(), msg));
    }

    fn duration(&mut self, path: &str, value: Option<&String>, default: Duration) -> Duration {
        match value {
            None => default,
            Some(v) => parse_duration(v).unwrap_or_else(|e| {
                self.err(path, e);
                default
            }),
        }
    }

    fn share(&mut self, path: &str, value: Option<f64>, default: f64) -> f64 {
        match value {
            Some(v) if !(0.0..=1.0).contains(&v) || v.is_nan() => {
                self.err(path, format!("expected a share between 0 and 1, got {v}"));
                default
            }
            Some(v) => v,
            None => default,
        }
    }
}

/// Compiles shape-checked raw config (plus the shape errors already found).
pub fn compile(input: (RawConfig, Vec<ConfigError>), source: Option<&Path>) -> Result<Config, ConfigErrors> {
    let (raw, shape_errors) = input;
    let mut cx = Ctx { errors: shape_errors, failed_providers: HashSet::new() };
    let base_dir = source.and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();

    let server = compile_server(&mut cx, raw.server.unwrap_or_default(), !raw.keys.is_empty());
    let state = compile_state(&mut cx, raw.state.unwrap_or_default());
    let health = compile_health(&mut cx, raw.health.unwrap_or_default());
    let mut providers = IndexMap::new();
    let declared = raw.providers.len();
    for (name, p) in raw.providers {
        match compile_provider(&mut cx, &name, p, &base_dir, &health.breaker) {
            Some(p) => {
                providers.insert(name, p);
            }
            None => {
                cx.failed_providers.insert(name);
            }
        }
    }
    if declared == 0 {
        cx.err("providers", "at least one provider is required");
    }
    let d = raw.discovery.unwrap_or_default();
    let discovery = DiscoveryConfig {
        interval: cx.duration("discovery.interval", d.interval.as_ref(), Duration::from_secs(12 * 3600)),
        cache_ttl: cx.duration("discovery.cache_ttl", d.cache_ttl.as_ref(), Duration::from_secs(24 * 3600)),
    };
    let mut cascades = IndexMap::new();
    let raw_cascades = raw.cascades.len();
    for (name, c) in raw.cascades {
        if let Some(c) = compile_cascade(&mut cx, &name, c, &providers, &health.breaker) {
            cascades.insert(name, c);
        }
    }
    if cascades.is_empty() && raw_cascades == 0 {
        cx.err("cascades", "at least one cascade is required");
    }
    for c in cascades.values().filter(|c| c.kind == CascadeKind::Embedding) {
        check_embedding_cascade(&mut cx, c, &providers);
    }
    let prompts = raw.prompts.into_iter().enumerate().map(|(i, p)| compile_prompt(&mut cx, i, p, &base_dir)).collect();
    let escalation = compile_escalation(&mut cx, raw.escalation, &cascades);
    let alerts = compile_alerts(&mut cx, raw.alerts.unwrap_or_default());
    let handoff = compile_handoff(&mut cx, raw.handoff.unwrap_or_default());
    let responses = compile_responses(&mut cx, raw.responses.unwrap_or_default());
    let keys = keys::compile_keys(&mut cx, raw.keys, &cascades, &server.api_keys);
    let fairness = keys::compile_fairness(&mut cx, raw.fairness.unwrap_or_default());
    let telemetry = compile_telemetry(&mut cx, raw.telemetry.unwrap_or_default(), &base_dir);
    let canaries = canary::compile_canaries(&mut cx, raw.canaries, &cascades, &providers);

    if cx.errors.is_empty() {
        Ok(Config {
            source: source.map(Path::to_path_buf),
            server,
            state,
            providers,
            health,
            discovery,
            cascades,
            prompts,
            escalation,
            alerts,
            handoff,
            responses,
            keys,
            fairness,
            telemetry,
            canaries,
        })
    } else {
        Err(ConfigErrors(cx.errors))
    }
}

/// Extra HTTP headers (`providers.*.headers`, `telemetry.otlp.headers`):
/// valid names and values, the values kept as secrets.
fn compile_headers(cx: &mut Ctx, path: &str, raw: IndexMap<String, String>) -> Vec<(String, Secret)> {
    let mut headers = Vec::new();
    for (k, v) in raw {
        if http::HeaderName::from_bytes(k.as_bytes()).is_err() {
            cx.err(format!("{path}.{k}"), "invalid header name");
        } else if http::HeaderValue::from_str(&v).is_err() {
            cx.err(format!("{path}.{k}"), "invalid header value");
        }
        headers.push((k, Secret::new(v)));
    }
    headers
}

fn check_url(cx: &mut Ctx, path: &str, url: &str) {
    if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 10 {
        cx.err(path, format!("expected an http:// or https:// URL, got `{url}`"));
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{load_str, AlertLanguage, ModelRef};

    const YAML: &str = "
providers:
  groq: { kind: openai, base_url: 'http://127.0.0.1:9/v1', price_per_1m: { input: 0, output: 0 } }
  local:
    kind: openai
    base_url: 'http://127.0.0.1:9/v1'
    breaker: { consecutive_failures: 50 }
health:
  breaker: { consecutive_failures: 3, failure_rate: 0.3 }
cascades:
  chat:
    models: [groq/a, local/t-lite]
    breakers:
      local/t-lite: { failure_rate: 0.9 }
alerts: { language: ru }
";

    #[test]
    fn provider_prices_breaker_overrides_and_the_alert_language_compile() {
        let c = load_str(YAML, None, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.providers["groq"].price.map(|p| (p.input, p.output)), Some((0.0, 0.0)));
        assert_eq!(c.alerts.language, AlertLanguage::Ru);
        let local = c.providers["local"].breaker.unwrap_or_else(|| panic!("provider breaker"));
        assert_eq!((local.consecutive_failures, local.failure_rate), (50, 0.3), "unset fields from health.breaker");
        let cascade = &c.cascades["chat"];
        let t_lite = ModelRef::parse("local/t-lite").unwrap_or_else(|| panic!("ref"));
        let entry = cascade.breaker_for(&t_lite, &c.providers).unwrap_or_else(|| panic!("entry breaker"));
        assert_eq!((entry.consecutive_failures, entry.failure_rate), (50, 0.9), "entry over provider over health");
        let a = ModelRef::parse("groq/a").unwrap_or_else(|| panic!("ref"));
        assert!(cascade.breaker_for(&a, &c.providers).is_none(), "health.breaker applies");
    }

    #[test]
    fn bad_values_are_errors_with_their_paths() {
        let bad = YAML
            .replace("language: ru", "language: de")
            .replace("local/t-lite: { failure_rate: 0.9 }", "local/other: { failure_rate: 1.5 }")
            .replace("input: 0, output: 0", "input: -1, output: 0")
            .replace("consecutive_failures: 50", "consecutive_failures: 0");
        let errors = load_str(&bad, None, &|_| None).expect_err("invalid").0;
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        for want in [
            "alerts.language",
            "cascades.chat.breakers.local/other",
            "cascades.chat.breakers.local/other.failure_rate",
            "providers.groq.price_per_1m",
            "providers.local.breaker.consecutive_failures",
        ] {
            assert!(paths.contains(&want), "{want} missing from {paths:?}");
        }
    }
}
