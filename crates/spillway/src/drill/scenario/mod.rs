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
//!
//! - `raw`: the file's serde types.
//! - `check`: the checks that turn them into a [`Scenario`].
//! - this file: the compiled scenario's types and the entry points.

mod check;
mod raw;

use check::{drill_config, gateway_config, Cx};
use raw::RawScenario;

use crate::config::{env, shape, Config, ConfigError, ConfigErrors};
use indexmap::IndexMap;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Most requests one drill may send (they are held in memory for the report).
pub const MAX_REQUESTS: f64 = 1_000_000.0;
/// Most end users one traffic stream may be spread over.
pub const MAX_USERS: u32 = 100_000;
/// Most rows of the report over time.
pub const MAX_STEPS: u128 = 200;

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

#[cfg(test)]
mod tests;
