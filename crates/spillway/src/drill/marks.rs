//! A drill's pass marks (`expect:`), each measured on the report: what
//! was checked, the value found, and whether it passed.

use super::scenario::Scenario;
use super::times::clock;
use super::units::{pct, secs};
use serde::Serialize;
use std::time::Duration;

/// An alert.
#[derive(Debug, Clone, Serialize)]
pub struct AlertRow {
    /// When, seconds.
    pub at_s: f64,
    /// Kind.
    pub kind: String,
    /// Text.
    pub text: String,
    /// Its grouping key (`breaker_opened:gigachat/GigaChat-Pro`).
    pub key: String,
    /// It opened a state that a later message resolves.
    pub opens: bool,
    /// The key of the alert it resolves, for a resolved message.
    pub resolves: Option<String>,
    /// A digest of repeats.
    pub digest: bool,
}

/// One pass mark.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Cascade.
    pub cascade: String,
    /// What was checked (`success_rate >= 0.99`).
    pub what: String,
    /// The measured value.
    pub actual: f64,
    /// Whether it passed.
    pub passed: bool,
}

/// What the marks read of one cascade's report.
#[derive(Debug, Clone)]
pub struct Figures<'a> {
    /// Its name.
    pub cascade: &'a str,
    /// Share answered by a model.
    pub success_rate: f64,
    /// Share of answers whose content was valid.
    pub valid_rate: Option<f64>,
    /// p99 latency, seconds.
    pub p99_s: f64,
    /// p99 time to the first byte, seconds.
    pub first_byte_p99_s: f64,
    /// Share queued for a person.
    pub handoff_rate: f64,
    /// Shares answered by free models, paid ones and the last resort.
    pub free_share: f64,
    /// See `free_share`.
    pub paid_share: f64,
    /// See `free_share`.
    pub last_resort_share: f64,
    /// The run's cost over 30 days, USD.
    pub cost_per_month_usd: f64,
    /// The most a model's mean latency exceeds its own, as a share.
    pub latency_growth: f64,
    /// Mean answer length per load profile, lightest first.
    pub profile_tokens: Vec<f64>,
    /// Answers the models of bad-answer faults gave during them.
    pub fault_model_answers: usize,
    /// Mean answer length of the caller class sending least per caller
    /// over the class sending most (`None` with fewer than two classes).
    pub class_length_ratio: Option<f64>,
}

/// One evaluation of the fallback-share rule (a tenth of its `for`,
/// between 1 s and 1 min): how far an alert may be from its mark.
fn evaluation(scenario: &Scenario) -> Duration {
    scenario
        .config
        .alerts
        .fallback_share
        .map_or(Duration::from_secs(60), |(above, for_)| crate::alerts::rule::ShareRule::new(above, for_).tick())
}

/// Every mark of the scenario, measured.
pub(super) fn checks(scenario: &Scenario, cascades: &[Figures<'_>], alerts: &[AlertRow]) -> Vec<Check> {
    let mut out = Vec::new();
    for (name, e) in &scenario.expect {
        let Some(c) = cascades.iter().find(|c| c.cascade == name) else { continue };
        let mut check = |what: String, actual: f64, passed: bool| {
            out.push(Check { cascade: name.clone(), what, actual, passed });
        };
        if let Some(min) = e.min_success_rate {
            check(format!("success rate ≥ {}", pct(min)), c.success_rate, c.success_rate >= min);
        }
        if let Some(min) = e.min_valid_rate {
            let actual = c.valid_rate.unwrap_or(0.0);
            check(format!("valid-output rate ≥ {}", pct(min)), actual, actual >= min);
        }
        if let Some(max) = e.max_p99 {
            check(format!("p99 ≤ {}", secs(max.as_secs_f64())), c.p99_s, c.p99_s <= max.as_secs_f64());
        }
        if let Some(max) = e.max_handoff_rate {
            check(format!("handoff rate ≤ {}", pct(max)), c.handoff_rate, c.handoff_rate <= max);
        }
        if let Some(min) = e.min_free_share {
            check(format!("served free ≥ {}", pct(min)), c.free_share, c.free_share >= min);
        }
        if let Some(max) = e.max_cost_per_month {
            check(format!("cost a month ≤ ${max:.2}"), c.cost_per_month_usd, c.cost_per_month_usd <= max);
        }
        if let Some(max) = e.max_first_byte_p99 {
            let actual = c.first_byte_p99_s;
            check(format!("first-byte p99 ≤ {}", secs(max.as_secs_f64())), actual, actual <= max.as_secs_f64());
        }
        if let Some(max) = e.max_latency_growth {
            let growth = c.latency_growth;
            check(format!("latency growth over a model's own ≤ {}", pct(max)), growth, growth <= max);
        }
        if e.shorter_by_profile {
            let lengths = &c.profile_tokens;
            let shorter = lengths.len() >= 2 && lengths.windows(2).all(|w| w[1] < w[0]);
            let ratio = match (lengths.first(), lengths.last()) {
                (Some(first), Some(last)) if *first > 0.0 => last / first,
                _ => 1.0,
            };
            check("answers shorter with each heavier profile (last/first length)".into(), ratio, shorter);
        }
        if let Some(min) = e.min_class_length_ratio {
            let ratio = c.class_length_ratio.unwrap_or(0.0);
            check(
                format!("lightest callers' mean answer ≥ {} of the heaviest callers'", pct(min)),
                ratio,
                ratio >= min,
            );
        }
        for kind in &e.alerts {
            let seen = alerts.iter().filter(|a| &a.kind == kind).count();
            check(format!("alert `{kind}` sent (count)"), seen as f64, seen > 0);
        }
        if let Some(max) = e.max_last_resort_share {
            check(format!("served by the last resort ≤ {}", pct(max)), c.last_resort_share, c.last_resort_share <= max);
        }
        if e.paid_before_last_resort {
            // The cheap paid tier carries the overflow of the free models;
            // the (dear) last resort only what it could not.
            let margin = c.paid_share - c.last_resort_share;
            check(
                "paid tier serves at least the last resort's share (paid − last resort)".into(),
                margin,
                margin >= 0.0,
            );
        }
        for (kind, after) in &e.alert_after {
            let tolerance = evaluation(scenario);
            let start = scenario.faults.iter().map(|f| f.at).min().unwrap_or_default();
            let first = alerts.iter().find(|a| &a.kind == kind && !a.digest);
            let actual = first.map_or(f64::INFINITY, |a| a.at_s - start.as_secs_f64());
            let what = format!(
                "first `{kind}` {} ± {} after the first fault (min)",
                clock(after.as_secs_f64()),
                clock(tolerance.as_secs_f64())
            );
            check(what, actual / 60.0, (actual - after.as_secs_f64()).abs() <= tolerance.as_secs_f64());
        }
        if let Some(max) = e.max_fault_model_answers {
            let n = c.fault_model_answers;
            check(format!("answers by the bad model during its fault ≤ {max} (count)"), n as f64, n as u64 <= max);
        }
        if let Some(max) = e.max_restore_after {
            let end = scenario.faults.iter().filter(|f| f.answers.is_some()).map(|f| f.at + f.lasts).max();
            let end = end.unwrap_or_default().as_secs_f64();
            let back = alerts.iter().find(|a| a.kind == "quality_restored" && a.at_s >= end);
            let actual = back.map_or(f64::INFINITY, |a| a.at_s - end);
            check(
                format!("restored ≤ {} after the bad answers ended (min)", clock(max.as_secs_f64())),
                actual / 60.0,
                actual <= max.as_secs_f64(),
            );
        }
        if e.resolved {
            let opened: Vec<&AlertRow> = alerts.iter().filter(|a| a.opens).collect();
            let resolved = opened
                .iter()
                .filter(|o| alerts.iter().any(|r| r.at_s >= o.at_s && r.resolves.as_deref() == Some(o.key.as_str())))
                .count();
            let share = if opened.is_empty() { 1.0 } else { resolved as f64 / opened.len() as f64 };
            check("every alert that opened was resolved".into(), share, !opened.is_empty() && resolved == opened.len());
        }
    }
    out
}
