//! Building a [`Report`] from a run: the samples grouped per cascade, the
//! shares each tier, rank, model and profile served, the percentiles and
//! the figures the pass marks read.

use super::*;
use crate::drill::engine::{Outcome, Run, Sample};
use crate::drill::marks::Figures;
use crate::drill::scenario::Scenario;
use indexmap::IndexMap;
use std::time::Duration;

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
    let checks = crate::drill::marks::checks(scenario, &figures, &alerts);
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
    fn discovered(&self, cascade: &str) -> Option<crate::drill::discovered::Discovered> {
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
        classes: crate::drill::classes::rows(&frame.scenario.traffic, samples, &frame.profile_order()),
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
        class_length_ratio: crate::drill::classes::length_ratio(&c.classes),
    }
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
}
