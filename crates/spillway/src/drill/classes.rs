//! Caller classes of a drill: a traffic stream spread over end users
//! (`users: 40, class: light` sends each request as the next of
//! `light-0` … `light-39`, in the body's `user`), and what each class got —
//! its answers, their mean length and the load profiles they were served
//! under. This is how a drill shows fair degradation: under one load ramp,
//! the class that sends little per caller keeps longer answers than the
//! class that sends much.

use super::engine::sample::{Outcome, Sample};
use super::scenario::Traffic;
use indexmap::IndexMap;
use serde::Serialize;

/// What one caller class sent and got, in one cascade.
#[derive(Debug, Clone, Serialize)]
pub struct ClassRow {
    /// Its end users (the most any of its streams spreads over).
    pub callers: u32,
    /// Requests it sent.
    pub requests: usize,
    /// Requests per caller.
    pub per_caller: f64,
    /// Requests a model answered.
    pub answers: usize,
    /// Mean completion tokens of its answers.
    pub tokens_mean: f64,
    /// Share of its answers under each load profile (`none` without one).
    pub profiles: IndexMap<String, f64>,
}

/// The end user of a stream's `n`-th request, when it names users.
pub fn user_of(t: &Traffic, n: u64) -> Option<String> {
    let users = u64::from(t.users);
    (users > 0).then(|| format!("{}-{}", t.class.as_deref().unwrap_or("user"), n % users))
}

/// Each class's row, in the order classes first appear in the traffic;
/// `order` lists the load profiles lightest first.
pub fn rows(traffic: &[Traffic], samples: &[&Sample], order: &[String]) -> IndexMap<String, ClassRow> {
    let mut out: IndexMap<String, ClassRow> = IndexMap::new();
    for t in traffic {
        let Some(class) = &t.class else { continue };
        let row = out.entry(class.clone()).or_insert_with(|| ClassRow {
            callers: 0,
            requests: 0,
            per_caller: 0.0,
            answers: 0,
            tokens_mean: 0.0,
            profiles: IndexMap::new(),
        });
        row.callers = row.callers.max(t.users);
    }
    for (class, row) in &mut out {
        let mine: Vec<&Sample> =
            samples.iter().copied().filter(|s| traffic[s.traffic].class.as_ref() == Some(class)).collect();
        let answered: Vec<&Sample> =
            mine.iter().copied().filter(|s| matches!(s.outcome, Outcome::Answered { .. })).collect();
        row.requests = mine.len();
        row.per_caller = mine.len() as f64 / f64::from(row.callers.max(1));
        row.answers = answered.len();
        let tokens: u64 = answered.iter().map(|s| s.completion_tokens).sum();
        row.tokens_mean = if answered.is_empty() { 0.0 } else { tokens as f64 / answered.len() as f64 };
        let of = |name: &str| answered.iter().filter(|s| s.profile.as_deref().unwrap_or("none") == name).count();
        let mut names: Vec<&str> = order.iter().map(String::as_str).collect();
        for s in &answered {
            let p = s.profile.as_deref().unwrap_or("none");
            if !names.contains(&p) {
                names.push(p);
            }
        }
        for name in names {
            let n = of(name);
            if n > 0 {
                row.profiles.insert(name.to_string(), n as f64 / answered.len() as f64);
            }
        }
    }
    out
}

/// The lightest class's mean answer length over the heaviest's (fewest
/// and most requests per caller); `None` with fewer than two classes or
/// no answers in the heaviest.
pub fn length_ratio(rows: &IndexMap<String, ClassRow>) -> Option<f64> {
    let by_rate = |a: &&ClassRow, b: &&ClassRow| a.per_caller.total_cmp(&b.per_caller);
    let lightest = rows.values().min_by(by_rate)?;
    let heaviest = rows.values().max_by(by_rate)?;
    (rows.len() >= 2 && heaviest.tokens_mean > 0.0).then(|| lightest.tokens_mean / heaviest.tokens_mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(per_caller: f64, tokens_mean: f64) -> ClassRow {
        ClassRow { callers: 1, requests: 1, per_caller, answers: 1, tokens_mean, profiles: IndexMap::new() }
    }

    #[test]
    fn the_ratio_compares_the_lightest_class_with_the_heaviest() {
        let mut rows = IndexMap::new();
        rows.insert("heavy".to_string(), row(90.0, 60.0));
        assert_eq!(length_ratio(&rows), None, "one class compares with nothing");
        rows.insert("light".to_string(), row(3.0, 90.0));
        rows.insert("middle".to_string(), row(10.0, 75.0));
        assert_eq!(length_ratio(&rows), Some(1.5));
    }
}
