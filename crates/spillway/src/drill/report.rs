//! A run's report, per cascade: success rate, the share each tier and
//! model served (over the whole run and step by step), latency
//! percentiles, the valid-output rate and the cost — as text, JSON and
//! (in [`super::svg`]) a chart.

use super::engine::{Outcome, Run, Sample};
use super::marks::Figures;
pub use super::marks::{AlertRow, Check};
use super::scenario::Scenario;
pub use super::times::clock;
pub use super::units::{pct, secs};
use indexmap::IndexMap;
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

/// The report of one drill.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Virtual seconds of traffic.
    pub duration_s: f64,
    /// Seconds per row of `steps`.
    pub step_s: f64,
    /// Wall-clock seconds the run took.
    pub wall_s: f64,
    /// Requests sent.
    pub requests: usize,
    /// Per cascade (the traffic's `model`), in scenario order.
    pub cascades: Vec<CascadeReport>,
    /// The fault windows.
    pub faults: Vec<FaultRow>,
    /// Alerts that went out.
    pub alerts: Vec<AlertRow>,
    /// The load each monitored provider read: per provider, the mean per
    /// step (`None` where it read nothing).
    pub load: IndexMap<String, Vec<Option<f64>>>,
    /// Per model that answered JSON: how much of it was valid as the model
    /// sent it, and after normalization (extraction, repair, renaming).
    pub json: Vec<JsonRow>,
    /// Over every model's JSON answers: share valid as sent.
    pub json_valid_as_sent: Option<f64>,
    /// Over every model's JSON answers: share valid after normalization.
    pub json_valid_after: Option<f64>,
    /// The pass marks and how they went.
    pub checks: Vec<Check>,
}

/// One model's JSON answers.
#[derive(Debug, Clone, Serialize)]
pub struct JsonRow {
    /// Model ref.
    pub model: String,
    /// JSON answers (content and tool arguments) it gave.
    pub answers: u64,
    /// Share valid exactly as sent.
    pub valid_as_sent: f64,
    /// Share valid after normalization.
    pub valid_after: f64,
}

/// One cascade's figures.
#[derive(Debug, Clone, Serialize)]
pub struct CascadeReport {
    /// Its name.
    pub cascade: String,
    /// Requests sent to it.
    pub requests: usize,
    /// Share answered by a model.
    pub success_rate: f64,
    /// Share queued for a person.
    pub handoff_rate: f64,
    /// Share that got an error, by error code.
    pub failed: IndexMap<String, usize>,
    /// Share of model answers whose content was valid.
    pub valid_rate: Option<f64>,
    /// Answers the models of bad-answer faults gave during them.
    pub fault_model_answers: usize,
    /// Latency of every request to its last byte, seconds.
    pub latency_s: Percentiles,
    /// Until the first byte (TTFT for streams), seconds.
    pub first_byte_s: Percentiles,
    /// Mean latency inside any fault window, and outside all of them
    /// (`None` where no request was sent).
    pub latency_in_faults_s: Option<f64>,
    /// See `latency_in_faults_s`.
    pub latency_outside_faults_s: Option<f64>,
    /// Share each model served (and `handoff`, `failed`) of the requests
    /// sent inside a fault window; empty without one.
    pub served_in_faults: IndexMap<String, f64>,
    /// Requests that failed before any upstream call (every model skipped,
    /// or refused by the gateway itself); they count among the failures.
    pub failed_without_attempt: usize,
    /// Share of requests by the answering model's 1-based position in the
    /// cascade as it stood (`1`, `2`, `3`, `4+`), then `handoff` and `failed`.
    pub ranks: IndexMap<String, f64>,
    /// Share of requests answered by a free model (last resort excluded).
    pub free_share: f64,
    /// Share answered by a model of known, non-zero price, last resort excluded.
    pub paid_share: f64,
    /// Share answered by a model whose price nobody gave (a self-hosted
    /// model without `price_per_1m`: it costs $0 in the report), last
    /// resort excluded.
    pub unpriced_share: f64,
    /// Share that got an error (from the counts, so never below 0).
    pub failed_rate: f64,
    /// The cascade as discovery built it, with its notes (`None` for a
    /// fixed chain).
    pub discovered: Option<super::discovered::Discovered>,
    /// Share answered by the cascade's `last_resort`.
    pub last_resort_share: f64,
    /// `cost_usd` extrapolated to 30 days of the same traffic.
    pub cost_per_month_usd: f64,
    /// Per model that answered: share, mean latency, and its own latency
    /// (mean over its answers that took one attempt).
    pub models: IndexMap<String, ModelRow>,
    /// Per load profile the answers were served under (`none` without one),
    /// lightest first: how long and how fast the answers were.
    pub profiles: IndexMap<String, ProfileRow>,
    /// Per caller class (traffic with `class`), in the order they first
    /// appear: what each sent and how long its answers were.
    pub classes: IndexMap<String, super::classes::ClassRow>,
    /// Upstream calls per request, mean.
    pub attempts_mean: f64,
    /// USD.
    pub cost_usd: f64,
    /// Share of requests each model served (and `handoff`, `failed`), whole run.
    pub served: IndexMap<String, f64>,
    /// Share of requests each tier served.
    pub tiers: IndexMap<String, f64>,
    /// Step by step.
    pub steps: Vec<Step>,
}

/// One model's answers in a cascade.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRow {
    /// Share of the cascade's requests it answered.
    pub share: f64,
    /// Mean latency of its answers, seconds.
    pub latency_mean_s: f64,
    /// Mean latency of its answers that took one attempt (no failed model
    /// before it): the model's own speed. `None` when it never answered first.
    pub latency_own_s: Option<f64>,
}

/// The answers of one load profile.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileRow {
    /// Answers served under it.
    pub answers: usize,
    /// Mean completion tokens.
    pub tokens_mean: f64,
    /// Mean latency, seconds.
    pub latency_mean_s: f64,
    /// p99 of the time to the first byte, seconds.
    pub first_byte_p99_s: f64,
}

/// p50 / p90 / p99 and the mean.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Percentiles {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th.
    pub p90: f64,
    /// 99th.
    pub p99: f64,
}

/// One row of the report over time.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Start of the step, seconds.
    pub from_s: f64,
    /// Requests sent in it.
    pub requests: usize,
    /// Share answered by a model.
    pub success_rate: f64,
    /// Median latency, seconds.
    pub p50_s: f64,
    /// Mean latency, seconds.
    pub mean_s: f64,
    /// Share per model, `handoff` and `failed` (same keys as `served`).
    pub served: IndexMap<String, f64>,
    /// Share per tier, `handoff` and `failed` (same keys as `tiers`).
    pub tiers: IndexMap<String, f64>,
}

/// A fault window.
#[derive(Debug, Clone, Serialize)]
pub struct FaultRow {
    /// Start, seconds.
    pub from_s: f64,
    /// End, seconds.
    pub until_s: f64,
    /// What it does.
    pub label: String,
}

/// The key under which an outcome is counted in `served`.
fn served_key(o: &Outcome) -> &str {
    match o {
        Outcome::Answered { model, .. } => model,
        Outcome::Handoff => "handoff",
        Outcome::Failed { .. } => "failed",
    }
}

/// The `q`-quantile (nearest rank) of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn percentiles(samples: &[&Sample]) -> Percentiles {
    percentiles_of(samples, |s| s.latency)
}

fn percentiles_of(samples: &[&Sample], of: impl Fn(&Sample) -> Duration) -> Percentiles {
    let mut l: Vec<f64> = samples.iter().map(|s| of(s).as_secs_f64()).collect();
    l.sort_by(f64::total_cmp);
    Percentiles { mean: mean(&l), p50: quantile(&l, 0.5), p90: quantile(&l, 0.9), p99: quantile(&l, 0.99) }
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// The key a rank is counted under: `1`, `2`, `3`, `4+`.
fn rank_key(rank: u32) -> &'static str {
    match rank {
        0 | 1 => "1",
        2 => "2",
        3 => "3",
        _ => "4+",
    }
}

fn share(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 / of as f64
    }
}

/// Shares of each key, in the order given by `keys`.
fn shares(samples: &[&Sample], keys: &[String]) -> IndexMap<String, f64> {
    keys.iter()
        .map(|k| (k.clone(), share(samples.iter().filter(|s| served_key(&s.outcome) == k).count(), samples.len())))
        .collect()
}

/// Builds the report of a run.
pub fn build(scenario: &Scenario, run: &Run) -> Report {
    let mut names: Vec<String> = Vec::new();
    for t in &scenario.traffic {
        if !names.contains(&t.cascade) {
            names.push(t.cascade.clone());
        }
    }
    let steps = scenario.duration.as_nanos().div_ceil(scenario.step.as_nanos().max(1)) as usize;
    let cascades = names
        .iter()
        .map(|name| {
            let samples: Vec<&Sample> =
                run.samples.iter().filter(|s| &scenario.traffic[s.traffic].cascade == name).collect();
            cascade_report(name, &samples, &Frame { scenario, run, steps })
        })
        .collect::<Vec<_>>();
    let alerts: Vec<AlertRow> = run.alerts.clone();
    let figures: Vec<Figures<'_>> = cascades.iter().map(figures).collect();
    let checks = super::marks::checks(scenario, &figures, &alerts);
    let totals = run.json.iter().fold([0u64; 3], |t, (_, c)| [t[0] + c[0], t[1] + c[1], t[2] + c[2]]);
    let json_answers = totals.iter().sum::<u64>();
    let of = |n: u64| (json_answers > 0).then(|| n as f64 / json_answers as f64);
    let mut load: IndexMap<String, Vec<(f64, usize)>> = IndexMap::new();
    for (at, provider, value) in &run.load {
        let row = load.entry(provider.clone()).or_insert_with(|| vec![(0.0, 0); steps]);
        let i = (at.as_nanos() / scenario.step.as_nanos().max(1)) as usize;
        if let Some(cell) = row.get_mut(i) {
            cell.0 += value;
            cell.1 += 1;
        }
    }
    Report {
        load: load
            .into_iter()
            .map(|(p, row)| (p, row.into_iter().map(|(sum, n)| (n > 0).then(|| sum / n as f64)).collect()))
            .collect(),
        json_valid_as_sent: of(totals[0]),
        json_valid_after: of(totals[0] + totals[1]),
        duration_s: scenario.duration.as_secs_f64(),
        step_s: scenario.step.as_secs_f64(),
        wall_s: run.wall.as_secs_f64(),
        requests: run.samples.len(),
        cascades,
        faults: scenario
            .faults
            .iter()
            .map(|f| FaultRow {
                from_s: f.at.as_secs_f64(),
                until_s: (f.at + f.lasts).as_secs_f64(),
                label: f.label.clone(),
            })
            .collect(),
        json: run
            .json
            .iter()
            .map(|(model, [valid, repaired, invalid])| {
                let answers = valid + repaired + invalid;
                let of = |n: u64| n as f64 / answers.max(1) as f64;
                JsonRow { model: model.clone(), answers, valid_as_sent: of(*valid), valid_after: of(valid + repaired) }
            })
            .collect(),
        alerts,
        checks,
    }
}

/// What every cascade's figures are measured against.
struct Frame<'a> {
    scenario: &'a Scenario,
    run: &'a Run,
    steps: usize,
}

impl Frame<'_> {
    fn discovered(&self, cascade: &str) -> Option<super::discovered::Discovered> {
        self.run.discovered.iter().find(|(name, _)| name == cascade).map(|(_, built)| built.into())
    }

    fn in_fault(&self, s: &Sample) -> bool {
        self.scenario.faults.iter().any(|f| s.sent >= f.at && s.sent < f.at + f.lasts)
    }

    /// Every load profile name of the config, lightest first per provider.
    fn profile_order(&self) -> Vec<String> {
        let mut names = vec!["none".to_string()];
        for p in self.scenario.config.providers.values() {
            for profile in p.load.iter().flat_map(|l| l.profiles.iter()) {
                if !names.contains(&profile.name) {
                    names.push(profile.name.clone());
                }
            }
        }
        names
    }
}

fn cascade_report(name: &str, samples: &[&Sample], frame: &Frame<'_>) -> CascadeReport {
    let (step, steps) = (frame.scenario.step, frame.steps);
    // Models in the order they first answered; then handoff and failed.
    let mut keys: Vec<String> = Vec::new();
    for s in samples {
        if let Outcome::Answered { model, .. } = &s.outcome {
            if !keys.contains(model) {
                keys.push(model.clone());
            }
        }
    }
    keys.extend(["handoff".to_string(), "failed".to_string()]);
    let answered: Vec<&&Sample> = samples.iter().filter(|s| matches!(s.outcome, Outcome::Answered { .. })).collect();
    let handoffs = samples.iter().filter(|s| s.outcome == Outcome::Handoff).count();
    let mut failed = IndexMap::new();
    for s in samples {
        if let Outcome::Failed { code, .. } = &s.outcome {
            *failed.entry(code.clone()).or_insert(0) += 1;
        }
    }
    let tiers = tier_shares(samples);
    let tier_keys: Vec<String> = tiers.keys().cloned().collect();
    let rows = (0..steps)
        .map(|i| {
            let from = step * i as u32;
            let in_step: Vec<&Sample> =
                samples.iter().copied().filter(|s| s.sent >= from && s.sent < from + step).collect();
            let ok = in_step.iter().filter(|s| matches!(s.outcome, Outcome::Answered { .. })).count();
            Step {
                from_s: from.as_secs_f64(),
                requests: in_step.len(),
                success_rate: share(ok, in_step.len()),
                p50_s: percentiles(&in_step).p50,
                mean_s: percentiles(&in_step).mean,
                served: shares(&in_step, &keys),
                tiers: {
                    let here = tier_shares(&in_step);
                    tier_keys.iter().map(|k| (k.clone(), here.get(k).copied().unwrap_or(0.0))).collect()
                },
            }
        })
        .collect();
    let (in_faults, outside): (Vec<&Sample>, Vec<&Sample>) = samples.iter().partition(|s| frame.in_fault(s));
    let mean_latency = |v: &[&Sample]| (!v.is_empty()).then(|| percentiles(v).mean);
    let count = |f: &dyn Fn(&Sample) -> bool| share(samples.iter().filter(|s| f(s)).count(), samples.len());
    let answered_as = |s: &Sample, last: bool| matches!(&s.outcome, Outcome::Answered { tier, .. } if (tier == "last_resort") == last);
    let cost: f64 = samples.iter().map(|s| s.cost_usd).sum();
    let month = Duration::from_secs(30 * 24 * 3600).as_secs_f64();
    CascadeReport {
        first_byte_s: percentiles_of(samples, |s| s.first_byte),
        latency_in_faults_s: mean_latency(&in_faults),
        latency_outside_faults_s: mean_latency(&outside),
        served_in_faults: if in_faults.is_empty() { IndexMap::new() } else { shares(&in_faults, &keys) },
        failed_without_attempt: samples.iter().filter(|s| s.unattempted).count(),
        ranks: rank_shares(samples),
        free_share: count(&|s| answered_as(s, false) && s.free),
        paid_share: count(&|s| answered_as(s, false) && !s.free && s.priced),
        unpriced_share: count(&|s| answered_as(s, false) && !s.priced),
        failed_rate: count(&|s| matches!(s.outcome, Outcome::Failed { .. })),
        discovered: frame.discovered(name),
        last_resort_share: count(&|s| answered_as(s, true)),
        cost_per_month_usd: cost * month / frame.scenario.duration.as_secs_f64().max(f64::MIN_POSITIVE),
        models: model_rows(samples, &keys),
        profiles: profile_rows(samples, &frame.profile_order()),
        classes: super::classes::rows(&frame.scenario.traffic, samples, &frame.profile_order()),
        cascade: name.to_string(),
        requests: samples.len(),
        success_rate: share(answered.len(), samples.len()),
        handoff_rate: share(handoffs, samples.len()),
        failed,
        valid_rate: (!answered.is_empty()).then(|| share(answered.iter().filter(|s| s.valid).count(), answered.len())),
        fault_model_answers: answered
            .iter()
            .filter(|s| {
                let Outcome::Answered { model, .. } = &s.outcome else { return false };
                frame.scenario.faults.iter().any(|f| {
                    f.answers.is_some() && f.models.contains(model) && s.sent >= f.at && s.sent < f.at + f.lasts
                })
            })
            .count(),
        latency_s: percentiles(samples),
        attempts_mean: samples.iter().map(|s| f64::from(s.attempts)).sum::<f64>() / samples.len().max(1) as f64,
        cost_usd: cost,
        served: shares(samples, &keys),
        tiers,
        steps: rows,
    }
}

/// Share per rank, then `handoff` and `failed`.
fn rank_shares(samples: &[&Sample]) -> IndexMap<String, f64> {
    let mut counts: IndexMap<String, usize> = ["1", "2", "3", "4+"].iter().map(|k| (k.to_string(), 0)).collect();
    for s in samples {
        let key = match &s.outcome {
            Outcome::Answered { .. } => rank_key(s.rank),
            other => served_key(other),
        };
        *counts.entry(key.to_string()).or_insert(0) += 1;
    }
    counts.into_iter().map(|(k, n)| (k, share(n, samples.len()))).collect()
}

fn model_rows(samples: &[&Sample], keys: &[String]) -> IndexMap<String, ModelRow> {
    keys.iter()
        .filter(|k| *k != "handoff" && *k != "failed")
        .map(|k| {
            let mine: Vec<&Sample> = samples.iter().copied().filter(|s| served_key(&s.outcome) == k).collect();
            let own: Vec<&Sample> = mine.iter().copied().filter(|s| s.attempts <= 1).collect();
            let row = ModelRow {
                share: share(mine.len(), samples.len()),
                latency_mean_s: percentiles(&mine).mean,
                latency_own_s: (!own.is_empty()).then(|| percentiles(&own).mean),
            };
            (k.clone(), row)
        })
        .collect()
}

fn profile_rows(samples: &[&Sample], order: &[String]) -> IndexMap<String, ProfileRow> {
    let answered: Vec<&Sample> =
        samples.iter().copied().filter(|s| matches!(s.outcome, Outcome::Answered { .. })).collect();
    let mut names: Vec<String> = order.to_vec();
    for s in &answered {
        if let Some(p) = &s.profile {
            if !names.contains(p) {
                names.push(p.clone());
            }
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let mine: Vec<&Sample> =
                answered.iter().copied().filter(|s| s.profile.as_deref().unwrap_or("none") == name).collect();
            if mine.is_empty() {
                return None;
            }
            let tokens: Vec<f64> = mine.iter().map(|s| s.completion_tokens as f64).collect();
            let row = ProfileRow {
                answers: mine.len(),
                tokens_mean: mean(&tokens),
                latency_mean_s: percentiles(&mine).mean,
                first_byte_p99_s: percentiles_of(&mine, |s| s.first_byte).p99,
            };
            Some((name, row))
        })
        .collect()
}

/// The tier an outcome counts under (`handoff`, `failed` for the rest).
fn tier_of(o: &Outcome) -> &str {
    match o {
        Outcome::Answered { tier, .. } => tier,
        Outcome::Handoff => "handoff",
        Outcome::Failed { .. } => "failed",
    }
}

/// Share of each tier, in the order tiers first appear.
fn tier_shares(samples: &[&Sample]) -> IndexMap<String, f64> {
    let mut tiers: IndexMap<String, f64> = IndexMap::new();
    for s in samples {
        *tiers.entry(tier_of(&s.outcome).to_string()).or_insert(0.0) += share(1, samples.len());
    }
    tiers
}

/// What the pass marks read of a cascade's report.
fn figures(c: &CascadeReport) -> Figures<'_> {
    Figures {
        cascade: &c.cascade,
        success_rate: c.success_rate,
        valid_rate: c.valid_rate,
        p99_s: c.latency_s.p99,
        first_byte_p99_s: c.first_byte_s.p99,
        handoff_rate: c.handoff_rate,
        free_share: c.free_share,
        paid_share: c.paid_share,
        last_resort_share: c.last_resort_share,
        cost_per_month_usd: c.cost_per_month_usd,
        // The worst model: its mean latency over its own.
        latency_growth: c
            .models
            .values()
            .filter_map(|m| Some(m.latency_mean_s / m.latency_own_s.filter(|own| *own > 0.0)? - 1.0))
            .fold(0.0, f64::max),
        profile_tokens: c.profiles.values().map(|p| p.tokens_mean).collect(),
        fault_model_answers: c.fault_model_answers,
        class_length_ratio: super::classes::length_ratio(&c.classes),
    }
}

impl Report {
    /// Whether every pass mark passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    /// The report as text for a terminal.
    pub fn text(&self, title: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Drill {title}: {} of traffic, {} requests (virtual time; ran in {:.1} s)",
            clock(self.duration_s),
            self.requests,
            self.wall_s
        );
        for f in &self.faults {
            let _ = writeln!(out, "  fault {}–{}  {}", clock(f.from_s), clock(f.until_s), f.label);
        }
        for c in &self.cascades {
            let _ = writeln!(out, "\n{} — {} requests", c.cascade, c.requests);
            let failed: Vec<String> = c.failed.iter().map(|(code, n)| format!("{code} {n}")).collect();
            let _ = writeln!(
                out,
                "  answered {}   handoff {}   failed {}{}",
                pct(c.success_rate),
                pct(c.handoff_rate),
                pct(c.failed_rate),
                if failed.is_empty() { String::new() } else { format!(" ({})", failed.join(", ")) }
            );
            if c.failed_without_attempt > 0 {
                let _ = writeln!(out, "  failed without an attempt: {}", c.failed_without_attempt);
            }
            let _ = writeln!(
                out,
                "  latency mean {}  p50 {}  p90 {}  p99 {}   first byte mean {}  p99 {}",
                secs(c.latency_s.mean),
                secs(c.latency_s.p50),
                secs(c.latency_s.p90),
                secs(c.latency_s.p99),
                secs(c.first_byte_s.mean),
                secs(c.first_byte_s.p99)
            );
            if let (Some(inside), Some(outside)) = (c.latency_in_faults_s, c.latency_outside_faults_s) {
                let _ = writeln!(out, "  latency mean outside faults {} → inside {}", secs(outside), secs(inside));
            }
            let _ = writeln!(
                out,
                "  attempts/request {:.2}   valid output {}   cost ${:.6} (${:.2} a month)",
                c.attempts_mean,
                c.valid_rate.map_or("—".to_string(), pct),
                c.cost_usd,
                c.cost_per_month_usd
            );
            let unpriced =
                if c.unpriced_share > 0.0 { format!("   unpriced {}", pct(c.unpriced_share)) } else { String::new() };
            let _ = writeln!(
                out,
                "  free {}   paid {}{unpriced}   last resort {}",
                pct(c.free_share),
                pct(c.paid_share),
                pct(c.last_resort_share)
            );
            if let Some(d) = &c.discovered {
                out.push_str(&d.text());
            }
            let ranks: Vec<String> =
                c.ranks.iter().filter(|(_, &v)| v > 0.0).map(|(k, v)| format!("{k} {}", pct(*v))).collect();
            let _ = writeln!(out, "  by rank: {}", ranks.join(", "));
            for (m, row) in &c.models {
                let own = row.latency_own_s.map_or("—".to_string(), secs);
                let _ =
                    writeln!(out, "    {m:<32} {:>6}  mean {}  own {own}", pct(row.share), secs(row.latency_mean_s));
            }
            if c.profiles.len() > 1 || c.profiles.keys().any(|k| k != "none") {
                let rows: Vec<String> = c
                    .profiles
                    .iter()
                    .map(|(k, p)| {
                        format!(
                            "{k} {} answers, {:.0} tokens, {} (first byte p99 {})",
                            p.answers,
                            p.tokens_mean,
                            secs(p.latency_mean_s),
                            secs(p.first_byte_p99_s)
                        )
                    })
                    .collect();
                let _ = writeln!(out, "  by load profile: {}", rows.join("; "));
            }
            for (class, row) in &c.classes {
                let profiles: Vec<String> = row.profiles.iter().map(|(k, v)| format!("{k} {}", pct(*v))).collect();
                let _ = writeln!(
                    out,
                    "  class {class}: {} callers, {:.1} requests each, {} answers of {:.0} tokens mean ({})",
                    row.callers,
                    row.per_caller,
                    row.answers,
                    row.tokens_mean,
                    profiles.join(", ")
                );
            }
            let served: Vec<String> =
                c.served.iter().filter(|(_, &v)| v > 0.0).map(|(k, v)| format!("{k} {}", pct(*v))).collect();
            let _ = writeln!(out, "  served by: {}", served.join(", "));
            if !c.served_in_faults.is_empty() {
                let inside: Vec<String> = c
                    .served_in_faults
                    .iter()
                    .filter(|(_, &v)| v > 0.0)
                    .map(|(k, v)| format!("{k} {}", pct(*v)))
                    .collect();
                let _ = writeln!(out, "  inside fault windows: {}", inside.join(", "));
            }
            let tiers: Vec<String> = c.tiers.iter().map(|(k, v)| format!("{k} {}", pct(*v))).collect();
            let _ = writeln!(out, "  tiers: {}", tiers.join(", "));
            out.push_str(&steps_table(c));
        }
        for (provider, row) in &self.load {
            let cells: Vec<String> = row.iter().map(|v| v.map_or("—".to_string(), |v| format!("{v:.2}"))).collect();
            let _ = writeln!(out, "\nLoad of {provider} per {}: {}", clock(self.step_s), cells.join(" "));
        }
        if !self.json.is_empty() {
            if let (Some(sent), Some(after)) = (self.json_valid_as_sent, self.json_valid_after) {
                let _ = writeln!(
                    out,
                    "\nValid JSON over all models: {} as sent → {} after normalization",
                    pct(sent),
                    pct(after)
                );
            }
            let _ = writeln!(out, "\nJSON answers per model (valid as sent → after normalization):");
            for j in &self.json {
                let _ = writeln!(
                    out,
                    "  {:<28} {} → {}  ({} answers)",
                    j.model,
                    pct(j.valid_as_sent),
                    pct(j.valid_after),
                    j.answers
                );
            }
        }
        if !self.alerts.is_empty() {
            let _ = writeln!(out, "\nAlerts ({}):", self.alerts.len());
            for a in &self.alerts {
                let first = a.text.lines().next().unwrap_or_default();
                let _ = writeln!(out, "  {}  {:<18} {first}", clock(a.at_s), a.kind);
            }
        }
        if !self.checks.is_empty() {
            let _ = writeln!(out, "\nChecks:");
            for c in &self.checks {
                let actual = if c.what.ends_with("(min)") {
                    format!("{:.1} min", c.actual)
                } else if c.what.contains("p99") {
                    secs(c.actual)
                } else if c.what.starts_with("cost") {
                    format!("${:.2}", c.actual)
                } else if c.what.contains("(count)") {
                    format!("{:.2}", c.actual).trim_end_matches('0').trim_end_matches('.').to_string()
                } else {
                    pct(c.actual)
                };
                let mark = if c.passed { "pass" } else { "FAIL" };
                let _ = writeln!(out, "  {mark}  {}: {} (got {actual})", c.cascade, c.what);
            }
        }
        out
    }
}

/// The step-by-step table of one cascade.
fn steps_table(c: &CascadeReport) -> String {
    let keys: Vec<&String> = c.served.keys().collect();
    let width = |k: &str| k.len().max(6);
    let mut out = String::new();
    let _ = write!(out, "\n  {:<8} {:>5} {:>9} {:>9}", "time", "reqs", "answered", "p50");
    for k in &keys {
        let _ = write!(out, "  {:>w$}", k, w = width(k));
    }
    out.push('\n');
    for s in &c.steps {
        let _ = write!(
            out,
            "  {:<8} {:>5} {:>9} {:>9}",
            clock(s.from_s),
            s.requests,
            if s.requests == 0 { "—".to_string() } else { pct(s.success_rate) },
            if s.requests == 0 { "—".to_string() } else { secs(s.p50_s) }
        );
        for k in &keys {
            let v = s.served.get(*k).copied().unwrap_or(0.0);
            let _ = write!(out, "  {:>w$}", if s.requests == 0 { "—".to_string() } else { pct(v) }, w = width(k));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!((quantile(&v, 0.5), quantile(&v, 0.9), quantile(&v, 0.99)), (50.0, 90.0, 99.0));
        assert_eq!(quantile(&[7.0], 0.99), 7.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }

    #[test]
    fn clock_and_units_read_like_a_person_writes_them() {
        assert_eq!((clock(0.0), clock(125.0), clock(3725.0)), ("0:00".into(), "2:05".into(), "1:02:05".into()));
        assert_eq!((secs(0.152), secs(1.5)), ("152 ms".to_string(), "1.50 s".to_string()));
        assert_eq!(pct(0.987), "98.7%");
        // 1 − 0.9 − 0.1 is a hair below zero in floating point.
        assert_eq!((pct(1.0 - 0.9 - 0.1), pct(-0.0)), ("0.0%".to_string(), "0.0%".to_string()));
    }
}
