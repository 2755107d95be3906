//! The fallback-share rule's clock: "models other than a cascade's first
//! serve more than `above` of its traffic for `for`".
//!
//! The condition is read bucket by bucket ([`Series`], a tenth of `for`
//! each): it holds while the latest bucket with answers is above the
//! threshold. Its clock starts where the condition first held — the start
//! of the first bucket of the run above it, or of the bucket before when
//! that one already had fallback answers (the onset fell in its tail) —
//! not once the share over the whole window has crossed the threshold,
//! which took a fifth of `for` more (incident 001: a "for 10 min" alert at
//! 11.5–12 min). So the alert goes out `for` after the onset, within one
//! evaluation. A bucket at or under the threshold ends the run, and a run
//! that alerted ends with [`Event::FallbackShareBack`]; a bucket without
//! answers neither starts nor ends one (thin traffic is not a recovery).
//! A short burst of fallbacks is not an alert: it ends before `for`.

use super::window::{Bucket, Series};
use super::Event;
use std::collections::HashMap;
use std::time::Duration;

/// Buckets per window (the same as the traffic ring's).
const SLOTS: u64 = 10;

/// One cascade's time above the threshold.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Unix ms the condition first held.
    since_ms: u64,
    /// The alert went out (so the end is a resolved message).
    fired: bool,
}

/// The rule's memory: each cascade's current run above the threshold.
#[derive(Debug)]
pub struct ShareRule {
    above: f64,
    for_ms: u64,
    runs: HashMap<String, Run>,
}

impl ShareRule {
    /// `fallback_share: {above, for}`.
    pub fn new(above: f64, for_: Duration) -> Self {
        Self { above, for_ms: u64::try_from(for_.as_millis()).unwrap_or(u64::MAX), runs: HashMap::new() }
    }

    /// How often to check: a tenth of the window (one bucket), between 1 s
    /// and 1 min.
    pub fn tick(&self) -> Duration {
        Duration::from_millis((self.for_ms / SLOTS).clamp(1_000, 60_000))
    }

    fn is_above(&self, b: &Bucket) -> bool {
        b.fallback as f64 / b.total.max(1) as f64 > self.above
    }

    /// Reads each cascade's buckets (`width_ms` wide) at `now_ms`: an alert
    /// for each cascade whose run has lasted `for` (every tick while it
    /// lasts; repeats are digested later), and the resolution of each run
    /// that alerted and ended.
    pub fn check(&mut self, series: &[Series], width_ms: u64, now_ms: u64) -> Vec<Event> {
        let width_ms = width_ms.max(1);
        let current = now_ms / width_ms;
        let mut out = Vec::new();
        // A cascade with no answers in the whole window has nothing falling back.
        let quiet: Vec<String> = self
            .runs
            .keys()
            .filter(|name| !series.iter().any(|s| &s.cascade == *name && !s.buckets.is_empty()))
            .cloned()
            .collect();
        for name in quiet {
            out.extend(self.end(&name, 0.0));
        }
        for s in series {
            // Complete buckets with answers, newest first.
            let mut done: Vec<&Bucket> = s.buckets.iter().filter(|b| b.index < current && b.total > 0).collect();
            done.sort_unstable_by_key(|b| std::cmp::Reverse(b.index));
            let Some(latest) = done.first() else { continue };
            if !self.is_above(latest) {
                out.extend(self.end(&s.cascade, latest.fallback as f64 / latest.total as f64));
                continue;
            }
            let since_ms = match self.runs.get(&s.cascade) {
                Some(run) => run.since_ms,
                None => self.onset(&done) * width_ms,
            };
            let run = self.runs.entry(s.cascade.clone()).or_insert(Run { since_ms, fired: false });
            let window = s.share().filter(|share| *share > self.above);
            if let Some(share) = window.filter(|_| now_ms.saturating_sub(run.since_ms) >= self.for_ms) {
                run.fired = true;
                out.push(Event::FallbackShare {
                    cascade: s.cascade.clone(),
                    share,
                    since_ms: run.since_ms,
                    at_ms: now_ms,
                    models: Vec::new(),
                });
            }
        }
        out
    }

    /// The bucket where the run that reaches the newest of `done` (complete
    /// buckets with answers, newest first, the newest above) began.
    fn onset(&self, done: &[&Bucket]) -> u64 {
        let mut first = done[0].index;
        for b in done {
            if !self.is_above(b) {
                // The onset fell in this bucket's tail.
                return if b.index + 1 == first && b.fallback > 0 { b.index } else { first };
            }
            first = b.index;
        }
        first
    }

    /// Ends `cascade`'s run; its resolution when it had alerted.
    fn end(&mut self, cascade: &str, share: f64) -> Option<Event> {
        let run = self.runs.remove(cascade)?;
        run.fired.then(|| Event::FallbackShareBack {
            cascade: cascade.to_owned(),
            share,
            above: self.above,
            since_ms: run.since_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    /// A rule for "above 20% for 10 min" (1-minute buckets) fed minute by
    /// minute: `fallback_from` .. `until` every answer falls back.
    struct Feed {
        rule: ShareRule,
        series: Series,
    }

    impl Feed {
        fn new() -> Self {
            Self { rule: ShareRule::new(0.2, Duration::from_secs(600)), series: Series::default() }
        }

        /// One minute bucket of 24 answers, `fallback` of them falling back.
        fn minute(&mut self, index: u64, fallback: u64) {
            self.series.cascade = "support".into();
            self.series.buckets.retain(|b| b.index + SLOTS > index + 1);
            self.series.buckets.push(Bucket { index, total: 24, fallback });
        }

        fn check(&mut self, at_ms: u64) -> Vec<Event> {
            self.rule.check(std::slice::from_ref(&self.series), MIN, at_ms)
        }
    }

    /// Incident 001: a 502 from minute 20 (at 20:40 inside its bucket);
    /// the rule checks every minute at :30. The alert goes out 10 min after
    /// the onset, within one evaluation, then once the share is back under
    /// the threshold, the resolution.
    #[test]
    fn the_clock_starts_when_the_share_first_rises() {
        let mut f = Feed::new();
        let mut fired = None;
        let mut back = None;
        for minute in 0..70u64 {
            let fallback = match minute {
                20 => 8, // the last 20 s of the minute: a third of it
                21..=57 => 24,
                _ => 0,
            };
            f.minute(minute, fallback);
            let at = minute * MIN + 90_000; // checked 30 s into the next minute
            for e in f.check(at) {
                match e {
                    Event::FallbackShare { since_ms, .. } if fired.is_none() => fired = Some((at, since_ms)),
                    Event::FallbackShareBack { share, since_ms, .. } => back = Some((at, share, since_ms)),
                    _ => {}
                }
            }
        }
        let onset = 20 * MIN + 40_000;
        let (at, since) = fired.expect("the alert went out");
        assert_eq!(since, 20 * MIN, "the clock starts in the bucket where the share first rose");
        assert!(at.abs_diff(onset + 10 * MIN) <= MIN, "fired {} s after the onset", (at - onset) / 1000);
        let (at, share, since) = back.expect("resolved");
        assert_eq!((at, share, since), (58 * MIN + 90_000, 0.0, 20 * MIN));
    }

    /// A rise that fills most of a bucket starts the clock at its start;
    /// one in the bucket's last fifth is under the threshold there and
    /// starts it at the bucket before only when that one had fallbacks.
    #[test]
    fn the_onset_is_read_back_from_the_buckets() {
        let rule = ShareRule::new(0.2, Duration::from_secs(600));
        let b = |index, fallback| Bucket { index, total: 24, fallback };
        let (a, c, d) = (b(9, 24), b(8, 4), b(7, 0));
        assert_eq!(rule.onset(&[&a, &c, &d]), 8, "the tail of bucket 8 fell back already");
        let c = b(8, 0);
        assert_eq!(rule.onset(&[&a, &c, &d]), 9);
        assert_eq!(rule.onset(&[&a, &b(8, 24), &b(7, 24)]), 7);
    }

    /// A burst shorter than `for` never alerts; and a run that never
    /// alerted ends without a resolution.
    #[test]
    fn a_short_burst_is_quiet_and_unresolved() {
        let mut f = Feed::new();
        for minute in 0..30u64 {
            f.minute(minute, if (5..12).contains(&minute) { 24 } else { 0 });
            assert!(f.check(minute * MIN + 90_000).is_empty(), "minute {minute}");
        }
        assert!(f.rule.runs.is_empty());
    }

    /// Minutes without answers neither end a run nor start one; a window
    /// with no answers at all ends it.
    #[test]
    fn silence_is_neither_recovery_nor_onset() {
        let mut f = Feed::new();
        for minute in 0..12u64 {
            f.minute(minute, 24);
            f.check(minute * MIN + 90_000);
        }
        f.series.buckets.clear();
        f.series.cascade = "support".into();
        let out = f.check(30 * MIN);
        assert!(matches!(&out[..], [Event::FallbackShareBack { share, .. }] if *share == 0.0), "{out:?}");
        // Thin traffic: the window has too few answers for a share, no alert.
        let mut f = Feed::new();
        for minute in 0..20u64 {
            f.series.cascade = "support".into();
            f.series.buckets = vec![Bucket { index: minute, total: 1, fallback: 1 }];
            assert!(f.check(minute * MIN + 90_000).is_empty());
        }
    }
}
