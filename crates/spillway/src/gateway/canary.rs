//! Canaries (`canaries:`): a known prompt sent to models every `interval`,
//! its answer checked (a JSON Schema, a regex, texts it must or must not
//! contain, its script, its latency).
//!
//! Each canary call runs through the cascade runner as a one-model walk, so
//! it passes the same gates and is settled the same way: a hard failure
//! (5xx, timeout, a broken body) counts toward the model's breaker like any
//! call. An answer's check result feeds the model's quality window under
//! its cascade's rule (when the cascade has `quality:`): a failed check is
//! the `canary` signal, a passed one an answer without signals — so a
//! demoted model's canaries are probes. A model that is dead or whose
//! breaker is open is skipped, not called. What canaries cost is recorded
//! under the cascade label `canary` (`spillway_cost_usd_total`, the
//! ledger), apart from the clients' traffic.
//!
//! [`CanaryJob`] runs them in the background (due ones each second);
//! `spillway canary` runs each once ([`run_all`]).

use super::build::Gateway;
use super::live::Live;
use crate::api::ChatRequest;
use crate::cascade::{CascadePlan, ServedBody, Target};
use crate::config::{CanaryCheck, CanaryConfig, CanaryTarget, CascadeKind};
use crate::health::breaker::State;
use crate::health::clock::now_ms;
use crate::quality::{Signal, Signals};
use crate::supervisor::BackgroundJob;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The cascade label canaries' cost and requests are recorded under.
pub const CANARY_CASCADE: &str = "canary";

/// One canary's result on one model.
#[derive(Debug, Clone, PartialEq)]
pub struct CanaryResult {
    /// The canary's name.
    pub canary: String,
    /// The model ref.
    pub model: String,
    /// What happened.
    pub outcome: Outcome,
    /// How long the answer took (ms; 0 when skipped).
    pub latency_ms: u64,
}

/// How a canary call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The answer passed every check.
    Passed,
    /// The answer failed a check: which and why.
    Failed(String),
    /// No answer: the call failed (counted by the breaker).
    Error(String),
    /// Not called: the model is dead or its breaker open.
    Skipped(&'static str),
}

impl Outcome {
    /// `passed`, `failed`, `error` or `skipped`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed(_) => "failed",
            Self::Error(_) => "error",
            Self::Skipped(_) => "skipped",
        }
    }

    /// Details for the console.
    pub fn detail(&self) -> &str {
        match self {
            Self::Passed => "",
            Self::Failed(d) | Self::Error(d) => d,
            Self::Skipped(d) => d,
        }
    }
}

/// The targets of `canary` in `gw`, with their cascade's quality rule.
fn targets(gw: &Gateway, canary: &CanaryConfig) -> Vec<Target> {
    match &canary.target {
        CanaryTarget::Cascade(name) => gw.cascades.get(name).map(|p| p.targets.clone()).unwrap_or_default(),
        CanaryTarget::Model(r) => {
            let name = r.to_string();
            // The entry of a cascade that has it (its quality rule), else a direct one.
            let of_cascade = gw.cascades.values().flat_map(|p| p.targets.iter()).find(|t| t.name == name).cloned();
            of_cascade.or_else(|| gw.resolve(&name).and_then(|p| p.targets.first().cloned())).into_iter().collect()
        }
    }
}

/// Why a model is not called now, if it is not.
fn skip(t: &Target) -> Option<&'static str> {
    let now = now_ms();
    if t.health.dead.is_dead(now) || t.provider_health.dead.is_dead(now) {
        return Some("dead");
    }
    match t.health.breaker_state() {
        State::Open { until_ms, .. } if now < until_ms => Some("breaker open"),
        _ => None,
    }
}

/// The first check `text` (taking `latency`) fails, if any.
pub fn check(c: &CanaryCheck, text: &str, latency: Duration) -> Option<String> {
    if let Some(max) = c.max_latency.filter(|m| latency > *m) {
        return Some(format!("took {} ms, more than {} ms", latency.as_millis(), max.as_millis()));
    }
    if let Some(word) = c.contains.iter().find(|w| !text.contains(w.as_str())) {
        return Some(format!("does not contain `{word}`"));
    }
    if let Some(word) = c.not_contains.iter().find(|w| text.contains(w.as_str())) {
        return Some(format!("contains `{word}`"));
    }
    if let Some(re) = c.regex.as_ref().filter(|re| !re.is_match(text)) {
        return Some(format!("does not match `{}`", re.as_str()));
    }
    if let Some(want) = c.script {
        let got = crate::quality::text::Letters::of(text).dominant(1);
        if got != Some(want) {
            return Some(format!(
                "is not mostly {} (it is {})",
                want.as_str(),
                got.map_or("no script", |s| s.as_str())
            ));
        }
    }
    if let Some(schema) = &c.json_schema {
        let Ok(value) = serde_json::from_str::<Value>(text.trim()) else {
            return Some("is not JSON".into());
        };
        match jsonschema::validator_for(schema) {
            Ok(v) if v.is_valid(&value) => {}
            Ok(_) => return Some("is not valid against the JSON Schema".into()),
            Err(e) => return Some(format!("the JSON Schema is invalid: {e}")),
        }
    }
    None
}

/// Runs `canary` once on `target`: calls it (unless skipped), checks the
/// answer, and feeds the result to quality health and the cost ledger.
pub async fn run_one(gw: &Gateway, canary: &CanaryConfig, target: &Target) -> CanaryResult {
    let result = |outcome, latency_ms| CanaryResult {
        canary: canary.name.clone(),
        model: target.name.clone(),
        outcome,
        latency_ms,
    };
    if let Some(why) = skip(target) {
        return result(Outcome::Skipped(why), 0);
    }
    let mut one = target.clone();
    // Judged here, once, by the check (not by the runner's text judge).
    let rule = one.quality.take();
    one.rank = 1;
    let plan = Arc::new(CascadePlan {
        name: CANARY_CASCADE.into(),
        kind: CascadeKind::Chat,
        targets: vec![one],
        handoff: false,
        hedge_after: None,
        continue_streams: false,
        metrics: gw.metrics.cascade(CANARY_CASCADE),
    });
    let body = json!({"model": CANARY_CASCADE, "messages": [{"role": "user", "content": canary.prompt}]});
    let Value::Object(map) = body else { return result(Outcome::Error("no request".into()), 0) };
    let req = match ChatRequest::from_map(map) {
        Ok(r) => r,
        Err(e) => return result(Outcome::Error(e.to_string()), 0),
    };
    let started = Instant::now();
    let served = crate::cascade::run(gw.runner(), &plan, &req).await;
    let latency = started.elapsed();
    let latency_ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
    let served = match served {
        Ok(s) => s,
        Err(un) => {
            un.finish.settle(crate::cascade::RequestOutcome::Error);
            let why = un.attempts.last().map_or_else(|| "no answer".to_string(), |a| a.reason.clone());
            tracing::warn!(canary = %canary.name, model = %target.name, reason = %why, "Canary got no answer.");
            return result(Outcome::Error(why), latency_ms);
        }
    };
    let ServedBody::Complete(answer) = &served.body else {
        return result(Outcome::Error("not a whole answer".into()), latency_ms);
    };
    let tokens = answer.tokens();
    let text = answer.first_choice().content;
    let books = gw.books();
    let b = books.books(Some(&target.metrics.usage));
    gw.shared.usage.record(b, CANARY_CASCADE, &target.name, tokens, now_ms());
    let failed = check(&canary.check, &text, latency);
    if let Some(rule) = &rule {
        let signals = if failed.is_some() { Signals::NONE.with(Signal::Canary) } else { Signals::NONE };
        target.metrics.quality(signals);
        target.health.record_quality(signals, rule, &gw.health.events);
    }
    match failed {
        Some(why) => {
            tracing::warn!(canary = %canary.name, model = %target.name, %why, "Canary failed its check.");
            result(Outcome::Failed(why), latency_ms)
        }
        None => result(Outcome::Passed, latency_ms),
    }
}

/// Runs every canary once on each of its models (`spillway canary`).
pub async fn run_all(gw: &Gateway) -> Vec<CanaryResult> {
    let mut out = Vec::new();
    for canary in &gw.config.canaries {
        for target in targets(gw, canary) {
            out.push(run_one(gw, canary, &target).await);
        }
    }
    out
}

/// Runs the live config's canaries when each is due.
pub struct CanaryJob {
    /// The live gateway (read at each tick: a reload changes the canaries).
    pub live: Arc<Live>,
}

impl BackgroundJob for CanaryJob {
    fn name(&self) -> &'static str {
        "canaries"
    }

    async fn run(self, shutdown: CancellationToken) {
        // When each canary (by name) ran last.
        let mut last: HashMap<String, Instant> = HashMap::new();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let gw = self.live.load_full();
            for canary in &gw.config.canaries {
                let now = Instant::now();
                let due = last.get(&canary.name).is_none_or(|at| now.duration_since(*at) >= canary.interval);
                if !due {
                    continue;
                }
                last.insert(canary.name.clone(), now);
                for target in targets(&gw, canary) {
                    run_one(&gw, canary, &target).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_check_fails_on_its_own_fault() {
        let ms = Duration::from_millis;
        let c = CanaryCheck {
            json_schema: Some(json!({"type": "object", "required": ["ok"]})),
            regex: regex::Regex::new(r#"^\{.*\}$"#).ok(),
            contains: vec!["ok".into()],
            not_contains: vec!["error".into()],
            script: Some(crate::quality::text::Script::Latin),
            max_latency: Some(ms(500)),
        };
        assert_eq!(check(&c, r#"{"ok": true}"#, ms(100)), None);
        assert!(check(&c, r#"{"ok": true}"#, ms(900)).unwrap().contains("more than 500 ms"));
        assert!(check(&c, r#"{"fine": true}"#, ms(1)).unwrap().contains("does not contain"));
        assert!(check(&c, r#"{"ok": "error"}"#, ms(1)).unwrap().contains("contains `error`"));
        assert!(check(&c, r#"ok: {"a": 1}"#, ms(1)).unwrap().contains("does not match"));
        assert!(check(&c, r#"{"ok": "привет мир как дела"}"#, ms(1)).unwrap().contains("not mostly latin"));
        assert!(check(&c, r#"{"oki": {"ok": 1}}"#, ms(1)).unwrap().contains("JSON Schema"));
        assert!(check(&c, r#"{ok}"#, ms(1)).unwrap().contains("not JSON"));
    }
}
