//! The scenario file of `spillway drill`: which gateway, what traffic,
//! which faults when, and what the run must achieve.
//!
//! ```yaml
//! config: demo.yaml            # the gateway config, relative to this file (or `gateway:` inline)
//! duration: 10m                # traffic runs this long, in virtual time
//! step: 1m                     # one row of the report over time (default: a tenth of the run)
//! seed: 7                      # the mocks' dice (error and empty rates); same seed, same report
//! traffic:
//!   - { cascade: chat, rps: 2, stream: true }
//!   - { cascade: extraction, rps: 0.5, json: true, from: 1m, until: 9m }
//!   - { cascade: chat, rps: 1, users: 40, class: light }   # end users light-0…39 in turn
//! faults:
//!   - { at: 2m, for: 3m, model: paid/reserve-pro, status: 503 }
//!   - { at: 6m, for: 1m, provider: free, hang: true }
//! expect:
//!   chat: { min_success_rate: 0.99, max_p99: 5s, min_valid_rate: 1.0 }
//!   # also: max_handoff_rate, min_free_share, max_last_resort_share,
//!   # paid_before_last_resort, max_cost_per_month, max_first_byte_p99,
//!   # max_latency_growth, shorter_by_profile, alerts: [kind, …],
//!   # alert_after: { fallback_share: 10m }, resolved: true,
//!   # min_class_length_ratio
//! ```
//!
//! Parsed with the config file's machinery: unknown keys are errors and
//! every error comes with its YAML path. Faults become outage windows of
//! the mock models they name, so the engine runs exactly as configured.

use crate::config::raw::RawConfig;
use crate::config::units::parse_duration;
use crate::config::{
    compile, env, shape, Config, ConfigError, ConfigErrors, ModelRef, Outage, ProviderKind, StateBackend,
};
use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Most requests one drill may send (they are held in memory for the report).
pub const MAX_REQUESTS: f64 = 1_000_000.0;
/// Most end users one traffic stream may be spread over.
pub const MAX_USERS: u32 = 100_000;
/// Most rows of the report over time.
pub const MAX_STEPS: u128 = 200;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    config: Option<String>,
    gateway: Option<serde_yaml_ng::Value>,
    duration: String,
    step: Option<String>,
    seed: Option<u64>,
    traffic: Vec<RawTraffic>,
    #[serde(default)]
    faults: Vec<RawFault>,
    #[serde(default)]
    expect: IndexMap<String, RawExpect>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTraffic {
    cascade: String,
    rps: f64,
    from: Option<String>,
    until: Option<String>,
    stream: Option<bool>,
    json: Option<bool>,
    schema: Option<Value>,
    prompt: Option<String>,
    max_tokens: Option<u64>,
    users: Option<u32>,
    class: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    at: String,
    #[serde(rename = "for")]
    lasts: String,
    model: Option<String>,
    provider: Option<String>,
    status: Option<u16>,
    hang: Option<bool>,
    answers: Option<String>,
    share: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    min_success_rate: Option<f64>,
    min_valid_rate: Option<f64>,
    max_p99: Option<String>,
    max_handoff_rate: Option<f64>,
    min_free_share: Option<f64>,
    max_cost_per_month: Option<f64>,
    max_first_byte_p99: Option<String>,
    max_latency_growth: Option<f64>,
    shorter_by_profile: Option<bool>,
    #[serde(default)]
    alerts: Vec<String>,
    max_last_resort_share: Option<f64>,
    paid_before_last_resort: Option<bool>,
    #[serde(default)]
    alert_after: IndexMap<String, String>,
    resolved: Option<bool>,
    max_fault_model_answers: Option<u64>,
    max_restore_after: Option<String>,
    min_class_length_ratio: Option<f64>,
}

/// A compiled scenario, ready to run.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario file, when it came from one.
    pub source: Option<PathBuf>,
    /// The gateway config, faults applied, state kept in memory, alert and
    /// handoff sinks removed (a drill reaches nothing outside the process).
    pub config: Config,
    /// How long traffic is sent.
    pub duration: Duration,
    /// Width of one row of the report over time.
    pub step: Duration,
    /// Seed of the mocks' random choices.
    pub seed: u64,
    /// Traffic streams.
    pub traffic: Vec<Traffic>,
    /// Fault windows.
    pub faults: Vec<Fault>,
    /// What each cascade must achieve.
    pub expect: IndexMap<String, Expect>,
}

/// One stream of requests.
#[derive(Debug, Clone)]
pub struct Traffic {
    /// The request's `model`: a cascade, `auto` or a model ref.
    pub cascade: String,
    /// Requests per second, evenly spaced.
    pub rps: f64,
    /// When the stream starts.
    pub from: Duration,
    /// When it stops.
    pub until: Duration,
    /// Streamed requests (`stream: true`, usage included).
    pub stream: bool,
    /// What a valid answer looks like.
    pub output: Output,
    /// The user message.
    pub prompt: String,
    /// The request's `max_tokens`.
    pub max_tokens: Option<u64>,
    /// End users the requests are spread over in turn (`user` in the
    /// body: `{class}-{n}`); 0 sends no `user`.
    pub users: u32,
    /// The caller class the report groups these requests under.
    pub class: Option<String>,
}

/// What a valid answer looks like (and the `response_format` asked for).
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Any non-empty text.
    Text,
    /// A JSON object (`json_object`).
    Json,
    /// A JSON value valid against this schema (`json_schema`).
    Schema(Value),
}

/// A fault window on some mock models.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// Start, from the beginning of the run.
    pub at: Duration,
    /// Length.
    pub lasts: Duration,
    /// The models it hits (`provider/model`).
    pub models: Vec<String>,
    /// The status they answer; 0 hangs.
    pub status: u16,
    /// How the report names it (`paid/reserve-pro 503`).
    pub label: String,
    /// Instead of failing, the models answer 200 but badly: which way
    /// (`wrong_script`, `empty`, `repetition`) and the share of answers.
    pub answers: Option<(String, f64)>,
}

/// A cascade's pass mark; the drill exits 1 when one is missed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expect {
    /// Least share of requests answered by a model.
    pub min_success_rate: Option<f64>,
    /// Least share of answers that are valid.
    pub min_valid_rate: Option<f64>,
    /// Longest p99 latency.
    pub max_p99: Option<Duration>,
    /// Largest share queued for a person.
    pub max_handoff_rate: Option<f64>,
    /// Least share answered by free models.
    pub min_free_share: Option<f64>,
    /// Most USD a month (the run's cost extrapolated to 30 days).
    pub max_cost_per_month: Option<f64>,
    /// Longest p99 time to the first byte.
    pub max_first_byte_p99: Option<Duration>,
    /// Most a model's mean latency in this cascade may exceed its own
    /// (its answers that took one attempt), as a share: 0.1 is +10 %.
    pub max_latency_growth: Option<f64>,
    /// Answers get shorter with each heavier load profile.
    pub shorter_by_profile: bool,
    /// Alert kinds that must have gone out during the run.
    pub alerts: Vec<String>,
    /// Largest share answered by the cascade's `last_resort`.
    pub max_last_resort_share: Option<f64>,
    /// The paid models of the cascade carry at least as much as its last
    /// resort: the free models' overflow goes to the cheap tier first.
    pub paid_before_last_resort: bool,
    /// Per alert kind: when its first message must go out, counted from
    /// the first fault's start, within one evaluation of the
    /// fallback-share rule.
    pub alert_after: IndexMap<String, Duration>,
    /// Every alert that opened a state (a breaker, the fallback share, a
    /// dead cascade) was followed by its resolved message.
    pub resolved: bool,
    /// Most answers the models of bad-answer faults give during them
    /// (before their demotion, and their probes): how fast traffic leaves.
    pub max_fault_model_answers: Option<u64>,
    /// Longest from the end of the last bad-answer fault to the models'
    /// restoration (`quality_restored`).
    pub max_restore_after: Option<Duration>,
    /// Least mean answer length of the caller class sending least per
    /// caller over that of the class sending most (fair degradation).
    pub min_class_length_ratio: Option<f64>,
}

/// Reads and compiles a scenario file.
pub fn load_file(path: &Path) -> Result<Scenario, ConfigErrors> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigErrors(vec![ConfigError::new("", format!("cannot read {}: {e}", path.display()))]))?;
    let lookup = |name: &str| std::env::var(name).ok();
    load_str(&text, Some(path), &lookup)
}

/// Compiles scenario text; `source` anchors the `config` path.
pub fn load_str(text: &str, source: Option<&Path>, lookup: env::Lookup<'_>) -> Result<Scenario, ConfigErrors> {
    let (raw, mut errors) = shape::parse::<RawScenario>(text, lookup)?;
    let base = source.and_then(Path::parent).unwrap_or(Path::new("."));
    let mut cx = Cx { errors: Vec::new() };
    let config = gateway_config(&mut cx, &raw, base, lookup);
    let duration = cx.duration("duration", &raw.duration);
    if duration.is_zero() && !cx.failed_at("duration") {
        cx.err("duration", "must be longer than 0");
    }
    let step = match &raw.step {
        Some(s) => cx.duration("step", s),
        None => (duration / 10).max(Duration::from_millis(1)),
    };
    if step.is_zero() {
        cx.err("step", "must be longer than 0");
    } else if !duration.is_zero() && duration.as_nanos().div_ceil(step.as_nanos()) > MAX_STEPS {
        cx.err("step", format!("too short: the report would have more than {MAX_STEPS} rows"));
    }
    if raw.traffic.is_empty() {
        cx.err("traffic", "needs at least one stream of requests");
    }
    let traffic: Vec<Traffic> =
        raw.traffic.into_iter().enumerate().map(|(i, t)| cx.traffic(i, t, duration, config.as_ref())).collect();
    let total: f64 = traffic.iter().map(|t| t.rps * t.until.saturating_sub(t.from).as_secs_f64()).sum();
    if total > MAX_REQUESTS {
        cx.err("traffic", format!("would send about {total:.0} requests; a drill sends at most {MAX_REQUESTS:.0}"));
    }
    let faults: Vec<Fault> =
        raw.faults.into_iter().enumerate().filter_map(|(i, f)| cx.fault(i, f, config.as_ref())).collect();
    let mut expect = IndexMap::new();
    for (name, e) in raw.expect {
        let path = format!("expect.{name}");
        if !traffic.iter().any(|t| t.cascade == name) {
            cx.err(&path, "no traffic goes to this cascade");
        }
        let expected = Expect {
            min_success_rate: cx.share(&format!("{path}.min_success_rate"), e.min_success_rate),
            min_valid_rate: cx.share(&format!("{path}.min_valid_rate"), e.min_valid_rate),
            max_p99: e.max_p99.map(|d| cx.duration(&format!("{path}.max_p99"), &d)),
            max_handoff_rate: cx.share(&format!("{path}.max_handoff_rate"), e.max_handoff_rate),
            min_free_share: cx.share(&format!("{path}.min_free_share"), e.min_free_share),
            max_cost_per_month: cx.non_negative(&format!("{path}.max_cost_per_month"), e.max_cost_per_month),
            max_first_byte_p99: e.max_first_byte_p99.map(|d| cx.duration(&format!("{path}.max_first_byte_p99"), &d)),
            max_latency_growth: cx.non_negative(&format!("{path}.max_latency_growth"), e.max_latency_growth),
            shorter_by_profile: e.shorter_by_profile.unwrap_or(false),
            alerts: e.alerts,
            max_last_resort_share: cx.share(&format!("{path}.max_last_resort_share"), e.max_last_resort_share),
            paid_before_last_resort: e.paid_before_last_resort.unwrap_or(false),
            alert_after: e
                .alert_after
                .into_iter()
                .map(|(kind, d)| {
                    let at = cx.duration(&format!("{path}.alert_after.{kind}"), &d);
                    (kind, at)
                })
                .collect(),
            resolved: e.resolved.unwrap_or(false),
            max_fault_model_answers: e.max_fault_model_answers,
            max_restore_after: e.max_restore_after.map(|d| cx.duration(&format!("{path}.max_restore_after"), &d)),
            min_class_length_ratio: cx
                .non_negative(&format!("{path}.min_class_length_ratio"), e.min_class_length_ratio),
        };
        let mut classes: Vec<&str> =
            traffic.iter().filter(|t| t.cascade == name).filter_map(|t| t.class.as_deref()).collect();
        classes.sort_unstable();
        classes.dedup();
        if expected.min_class_length_ratio.is_some() && classes.len() < 2 {
            cx.err(&format!("{path}.min_class_length_ratio"), "needs two caller classes (`class`) of this cascade");
        }
        expect.insert(name, expected);
    }
    errors.append(&mut cx.errors);
    match config {
        Some(config) if errors.is_empty() => Ok(Scenario {
            source: source.map(Path::to_path_buf),
            config: drill_config(config, &faults),
            duration,
            step,
            seed: raw.seed.unwrap_or(1),
            traffic,
            faults,
            expect,
        }),
        _ if errors.is_empty() => Err(ConfigErrors(vec![ConfigError::new("", "the gateway config could not be read")])),
        _ => Err(ConfigErrors(errors)),
    }
}

/// The gateway config named by `config` or written under `gateway`,
/// checked to use mock providers only.
fn gateway_config(cx: &mut Cx, raw: &RawScenario, base: &Path, lookup: env::Lookup<'_>) -> Option<Config> {
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
fn drill_config(mut config: Config, faults: &[Fault]) -> Config {
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
struct Cx {
    errors: Vec<ConfigError>,
}

impl Cx {
    fn err(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(ConfigError::new(path, message));
    }

    fn failed_at(&self, path: &str) -> bool {
        self.errors.iter().any(|e| e.path == path)
    }

    fn duration(&mut self, path: &str, text: &str) -> Duration {
        parse_duration(text).unwrap_or_else(|e| {
            self.err(path, e);
            Duration::ZERO
        })
    }

    fn share(&mut self, path: &str, value: Option<f64>) -> Option<f64> {
        let v = value?;
        if !(0.0..=1.0).contains(&v) {
            self.err(path, format!("expected a share between 0 and 1, got {v}"));
        }
        Some(v)
    }

    fn non_negative(&mut self, path: &str, value: Option<f64>) -> Option<f64> {
        let v = value?;
        if !(v.is_finite() && v >= 0.0) {
            self.err(path, format!("expected a number of at least 0, got {v}"));
        }
        Some(v)
    }

    fn traffic(&mut self, i: usize, t: RawTraffic, duration: Duration, config: Option<&Config>) -> Traffic {
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

    fn fault(&mut self, i: usize, f: RawFault, config: Option<&Config>) -> Option<Fault> {
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

#[cfg(test)]
mod tests {
    use super::*;

    const GATEWAY: &str = r#"
gateway:
  providers:
    free: { kind: mock, models: [ { id: a }, { id: b } ] }
    paid: { kind: mock, models: [ { id: c } ] }
  cascades:
    chat: { models: [free/a, paid/c] }
"#;

    fn load(rest: &str) -> Result<Scenario, ConfigErrors> {
        let text = format!("{GATEWAY}{rest}");
        load_str(&text, None, &|_| None)
    }

    fn paths(e: ConfigErrors) -> Vec<String> {
        e.0.into_iter().map(|e| format!("{}: {}", e.path, e.message)).collect()
    }

    #[test]
    fn a_full_scenario_compiles_and_faults_become_outages() {
        let s = load(
            r#"
duration: 10m
step: 1m
seed: 9
traffic:
  - { cascade: chat, rps: 2, stream: true }
  - { cascade: free/b, rps: 0.5, json: true, from: 1m, until: 9m }
faults:
  - { at: 2m, for: 3m, model: free/a, status: 429 }
  - { at: 6m, for: 1m, provider: free, hang: true }
expect:
  chat: { min_success_rate: 0.99, max_p99: 5s }
"#,
        )
        .unwrap();
        assert_eq!((s.duration, s.step, s.seed), (Duration::from_secs(600), Duration::from_secs(60), 9));
        assert_eq!(s.traffic[1].output, Output::Json);
        assert_eq!((s.traffic[1].from, s.traffic[1].until), (Duration::from_secs(60), Duration::from_secs(540)));
        assert_eq!(s.faults[1].models, vec!["free/a", "free/b"]);
        assert_eq!(s.faults[1].label, "free/* hangs");
        let a = &s.config.providers["free"].models[0];
        let outages = &a.behavior.as_ref().unwrap().outages;
        assert_eq!(outages.len(), 2);
        assert_eq!((outages[0].start, outages[0].status), (Duration::from_secs(120), 429));
        assert_eq!((outages[1].start, outages[1].status), (Duration::from_secs(360), 0));
        let untouched = s.config.providers["paid"].models[0].behavior.as_ref().map_or(0, |b| b.outages.len());
        assert_eq!(untouched, 0, "no fault on paid/c");
        assert_eq!(s.expect["chat"].max_p99, Some(Duration::from_secs(5)));
        assert_eq!(s.step, Duration::from_secs(60));
    }

    #[test]
    fn every_error_is_reported_with_its_path() {
        let errors = paths(
            load(
                r#"
duration: 10 minutes
step: 1ms
traffic:
  - { cascade: nope, rps: 0 }
  - { cascade: chat, rps: 1, from: 5m, until: 2m, schema: { type: 12 } }
faults:
  - { at: 1m, for: 0s, model: free/zzz }
  - { at: 1m, for: 1m, provider: free, status: 200 }
  - { at: 1m, for: 1m, model: free/a, provider: free }
expect:
  other: { min_success_rate: 2 }
colour: blue
"#,
            )
            .unwrap_err(),
        );
        for expected in [
            "colour: unknown field",
            "duration: ",
            "traffic[0].rps: expected requests per second above 0",
            "traffic[0].cascade: `nope` is neither",
            "traffic[1]: `from` must come before `until`",
            "traffic[1].schema: not a valid JSON Schema",
            "faults[0].for: must be longer than 0",
            "faults[0].model: `free/zzz` is not a model",
            "faults[1].status: expected an error status",
            "faults[2]: name either a `model` or a `provider`",
            "expect.other: no traffic goes to this cascade",
            "expect.other.min_success_rate: expected a share between 0 and 1",
        ] {
            assert!(errors.iter().any(|e| e.starts_with(expected)), "missing `{expected}` in {errors:#?}");
        }
    }

    #[test]
    fn a_step_too_short_for_the_report_is_refused() {
        let errors = paths(load("duration: 10m\nstep: 1s\ntraffic: [ { cascade: chat, rps: 1 } ]\n").unwrap_err());
        assert!(errors.iter().any(|e| e.starts_with("step: too short")), "{errors:?}");
    }

    #[test]
    fn real_providers_are_refused() {
        let text = r#"
gateway:
  providers:
    groq: { kind: openai, base_url: "https://api.groq.com/openai/v1", api_key: secret-key }
  cascades:
    chat: { models: [groq/llama] }
duration: 1m
traffic: [ { cascade: chat, rps: 1 } ]
"#;
        let errors = paths(load_str(text, None, &|_| None).unwrap_err());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("gateway: provider `groq` is kind openai"), "{errors:?}");
        assert!(!errors[0].contains("secret-key"));
    }

    #[test]
    fn inline_config_errors_carry_the_gateway_prefix() {
        let text = r#"
gateway:
  providers: { free: { kind: mock, models: [ { id: a } ] } }
  cascades: { chat: { models: [free/missing] } }
duration: 1m
traffic: [ { cascade: chat, rps: 1 } ]
"#;
        let errors = paths(load_str(text, None, &|_| None).unwrap_err());
        assert!(errors.iter().any(|e| e.starts_with("gateway.cascades.chat.models[0]")), "{errors:?}");
    }

    #[test]
    fn config_and_gateway_are_exclusive_and_one_is_needed() {
        let errors = paths(load_str("duration: 1m\ntraffic: []\n", None, &|_| None).unwrap_err());
        assert!(errors.iter().any(|e| e.starts_with(": give the gateway config either")), "{errors:?}");
        assert!(errors.iter().any(|e| e.starts_with("traffic: needs at least one")), "{errors:?}");
    }

    #[test]
    fn caller_classes_compile_and_their_mistakes_carry_paths() {
        let s = load(
            "duration: 1m\ntraffic:\n  - { cascade: chat, rps: 1, users: 40, class: light }\n  - { cascade: chat, rps: 4, users: 4, class: heavy }\nexpect:\n  chat: { min_class_length_ratio: 1.3 }\n",
        )
        .unwrap();
        assert_eq!((s.traffic[0].users, s.traffic[0].class.as_deref()), (40, Some("light")));
        assert_eq!(s.expect["chat"].min_class_length_ratio, Some(1.3));
        assert_eq!(super::super::classes::user_of(&s.traffic[1], 9).as_deref(), Some("heavy-1"));
        let errors = paths(
            load(
                "duration: 1m\ntraffic:\n  - { cascade: chat, rps: 1, users: 0 }\n  - { cascade: chat, rps: 1, class: light }\nexpect:\n  chat: { min_class_length_ratio: -1 }\n",
            )
            .unwrap_err(),
        );
        for expected in [
            "traffic[0].users: expected 1 to",
            "traffic[1].class: a caller class needs `users`",
            "expect.chat.min_class_length_ratio: expected a number of at least 0",
            "expect.chat.min_class_length_ratio: needs two caller classes",
        ] {
            assert!(errors.iter().any(|e| e.starts_with(expected)), "missing `{expected}` in {errors:#?}");
        }
    }

    #[test]
    fn too_many_requests_are_refused() {
        let errors = paths(load("duration: 7d\ntraffic: [ { cascade: chat, rps: 1000 } ]\n").unwrap_err());
        assert!(errors.iter().any(|e| e.starts_with("traffic: would send about")), "{errors:?}");
    }
}
