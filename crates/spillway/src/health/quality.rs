//! Quality health of one model: a rolling window of its recent answers'
//! signals, and the demotion a bad window leads to.
//!
//! A model whose share of bad answers (answers with a signal its cascade's
//! `quality.signals` turns on) crosses `max_bad_share` over at least
//! `min_answers` of its last `window` answers is **demoted** for
//! `demote_for`: the runner tries it only after every healthy model of
//! the cascade (it still answers when nothing else can). When the period
//! is over, one request in `probe_every` tries it at its own place again,
//! and canaries count too; after `probe_answers` such probes it is
//! restored if their bad share is within the rule, or demoted again for
//! twice as long (up to `demote_max`) — the breaker's backoff. The window
//! starts afresh at each demotion; the backoff level is forgotten once a
//! restored model has filled a whole window without being demoted.
//!
//! The request path reads one atomic ([`QualityHealth::demoted_until`]);
//! recording takes one short lock per answer, at the answer's end.

use crate::config::QualityConfig;
use crate::quality::{Signal, Signals, ALL};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What a recorded answer changed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QualityChange {
    /// The window crossed the rule: demoted until `until_ms`.
    Demoted {
        /// Unix ms.
        until_ms: u64,
        /// The signal seen most in the window.
        reason: Signal,
        /// The window's bad share.
        bad_share: f64,
    },
    /// The probes failed: demoted again, for longer.
    Extended {
        /// Unix ms.
        until_ms: u64,
        /// The signal seen most in the probes.
        reason: Signal,
    },
    /// The probes passed: back at its place.
    Restored,
}

/// A demotion in force.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Demotion {
    /// Until when (unix ms); probes are taken after it.
    pub until_ms: u64,
    /// Why: the signal seen most.
    pub reason: Signal,
    /// Probe answers judged since the period ended, and how many were bad.
    probes: u32,
    bad_probes: u32,
    /// Signals the bad probes showed.
    probe_signals: [u32; ALL.len()],
}

#[derive(Debug, Default)]
struct State {
    /// The recent answers' signals (bad or not), oldest first.
    ring: VecDeque<Signals>,
    demotion: Option<Demotion>,
    /// Demotions in a row (the backoff's exponent).
    level: u32,
    /// Answers since the last restoration (to forget `level`).
    calm: u32,
}

/// One model's quality health.
#[derive(Debug, Default)]
pub struct QualityHealth {
    /// Unix ms until which the model is demoted; 0 when it is not. Past
    /// that time (and not 0) it is on probation: probes decide.
    demoted_until: AtomicU64,
    /// Counts the requests that found its period over, to pick probes.
    probe_tick: AtomicU32,
    state: Mutex<State>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // Every update is a few assignments; a panic cannot leave them half done.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What `/admin/state`, `/ui` and the gauges show of a model's quality.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct QualityView {
    /// Answers in the window.
    pub answers: u32,
    /// Share of bad answers in the window (by the last rule applied).
    pub bad_share: f64,
    /// Share of each signal seen in the window, by label (only those seen).
    pub signals: std::collections::BTreeMap<&'static str, f64>,
    /// Demoted until (unix ms), when demoted.
    pub demoted_until_ms: Option<u64>,
    /// Why it was demoted.
    pub demoted_for: Option<&'static str>,
    /// Probes taken since its period ended.
    pub probes: u32,
}

impl QualityHealth {
    /// Unix ms until which the model is demoted, when it is (past it: on
    /// probation). One atomic load: what the request path reads.
    pub fn demoted_until(&self) -> Option<u64> {
        Some(self.demoted_until.load(Ordering::Acquire)).filter(|u| *u != 0)
    }

    /// Whether this request should try the demoted model at its own place
    /// (its period is over and it is this request's turn, one in `every`).
    pub fn take_probe(&self, now: u64, every: u32) -> bool {
        match self.demoted_until() {
            Some(until) if now >= until => self.probe_tick.fetch_add(1, Ordering::Relaxed) % every.max(1) == 0,
            _ => false,
        }
    }

    /// Records one answer's signals under `rule`; what changed, if anything.
    pub fn record(&self, signals: Signals, rule: &QualityConfig, now: u64) -> Option<QualityChange> {
        let bad = !signals.and(rule.signals).is_empty();
        let mut st = lock(&self.state);
        if let Some(d) = st.demotion.as_mut() {
            // While the period lasts, its answers (it answered because
            // nothing else could) are neither window nor probe.
            if now < d.until_ms {
                return None;
            }
            d.probes += 1;
            if bad {
                d.bad_probes += 1;
                for s in signals.and(rule.signals).iter() {
                    d.probe_signals[s.index()] += 1;
                }
            }
            if d.probes < rule.probe_answers {
                return None;
            }
            if f64::from(d.bad_probes) > rule.max_bad_share * f64::from(d.probes) {
                let reason = top(&d.probe_signals).unwrap_or(d.reason);
                st.level += 1;
                let until_ms = now + ms(rule.period(st.level));
                st.demotion = Some(fresh(until_ms, reason));
                self.demoted_until.store(until_ms, Ordering::Release);
                return Some(QualityChange::Extended { until_ms, reason });
            }
            st.demotion = None;
            st.calm = 0;
            self.demoted_until.store(0, Ordering::Release);
            return Some(QualityChange::Restored);
        }
        while st.ring.len() >= rule.window as usize {
            st.ring.pop_front();
        }
        st.ring.push_back(signals);
        st.calm = st.calm.saturating_add(1);
        if st.calm >= rule.window {
            st.level = 0;
        }
        let n = st.ring.len();
        if n < rule.min_answers as usize {
            return None;
        }
        let bad_n = st.ring.iter().filter(|s| !s.and(rule.signals).is_empty()).count();
        let bad_share = bad_n as f64 / n as f64;
        if bad_share <= rule.max_bad_share {
            return None;
        }
        let mut counts = [0u32; ALL.len()];
        for s in st.ring.iter().flat_map(|s| s.and(rule.signals).iter()) {
            counts[s.index()] += 1;
        }
        let reason = top(&counts).unwrap_or(Signal::Empty);
        let until_ms = now + ms(rule.period(st.level));
        st.ring.clear();
        st.demotion = Some(fresh(until_ms, reason));
        self.demoted_until.store(until_ms, Ordering::Release);
        Some(QualityChange::Demoted { until_ms, reason, bad_share })
    }

    /// Applies a demotion another instance made (a later end wins).
    pub fn demote_remote(&self, until_ms: u64, reason: Signal) {
        let mut st = lock(&self.state);
        match st.demotion.as_mut() {
            Some(d) if d.until_ms >= until_ms => {}
            Some(d) => d.until_ms = until_ms,
            None => {
                st.ring.clear();
                st.demotion = Some(fresh(until_ms, reason));
            }
        }
        self.demoted_until.fetch_max(until_ms, Ordering::AcqRel);
    }

    /// Ends a demotion (another instance's probes passed, or an operator
    /// revived the model); true when one was in force.
    pub fn restore(&self) -> bool {
        let mut st = lock(&self.state);
        self.demoted_until.store(0, Ordering::Release);
        st.calm = 0;
        st.demotion.take().is_some()
    }

    /// The console's view; `rule` decides which signals count as bad.
    pub fn view(&self, rule: Option<&QualityConfig>) -> QualityView {
        let st = lock(&self.state);
        let n = st.ring.len();
        let enabled = rule.map_or_else(QualityConfig::default_signals, |r| r.signals);
        let mut counts = [0u32; ALL.len()];
        let mut bad = 0usize;
        for s in &st.ring {
            for x in s.iter() {
                counts[x.index()] += 1;
            }
            bad += usize::from(!s.and(enabled).is_empty());
        }
        let share = |k: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
        let signals = ALL
            .iter()
            .filter(|s| counts[s.index()] > 0)
            .map(|s| (s.label(), share(counts[s.index()] as usize)))
            .collect();
        QualityView {
            answers: u32::try_from(n).unwrap_or(u32::MAX),
            bad_share: share(bad),
            signals,
            demoted_until_ms: st.demotion.map(|d| d.until_ms),
            demoted_for: st.demotion.map(|d| d.reason.label()),
            probes: st.demotion.map_or(0, |d| d.probes),
        }
    }
}

fn fresh(until_ms: u64, reason: Signal) -> Demotion {
    Demotion { until_ms, reason, probes: 0, bad_probes: 0, probe_signals: [0; ALL.len()] }
}

/// The signal counted most (the first of equals).
fn top(counts: &[u32; ALL.len()]) -> Option<Signal> {
    let (i, n) = counts.iter().enumerate().max_by_key(|(i, n)| (**n, std::cmp::Reverse(*i)))?;
    (*n > 0).then(|| ALL[i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn rule() -> QualityConfig {
        QualityConfig {
            window: 10,
            min_answers: 5,
            max_bad_share: 0.3,
            probe_answers: 2,
            demote_for: Duration::from_secs(60),
            demote_max: Duration::from_secs(200),
            ..QualityConfig::default()
        }
    }

    const BAD: Signals = Signals::NONE;

    fn bad() -> Signals {
        Signals::of(&[Signal::WrongScript])
    }

    #[test]
    fn a_bad_window_demotes_probes_restore_and_failed_probes_back_off() {
        let q = QualityHealth::default();
        let r = rule();
        for _ in 0..3 {
            assert_eq!(q.record(BAD, &r, 0), None);
        }
        assert_eq!(q.record(bad(), &r, 0), None);
        // 2 bad of 5: 0.4 > 0.3.
        let change = q.record(bad(), &r, 1_000);
        assert_eq!(
            change,
            Some(QualityChange::Demoted { until_ms: 61_000, reason: Signal::WrongScript, bad_share: 0.4 })
        );
        assert_eq!(q.demoted_until(), Some(61_000));
        // During the period: no probes, answers not counted.
        assert!(!q.take_probe(30_000, 1));
        assert_eq!(q.record(bad(), &r, 30_000), None);
        // After it: probes fail, the next period is twice as long.
        assert!(q.take_probe(61_000, 1));
        assert_eq!(q.record(bad(), &r, 61_000), None);
        assert_eq!(
            q.record(BAD, &r, 62_000),
            Some(QualityChange::Extended { until_ms: 182_000, reason: Signal::WrongScript })
        );
        // Then twice more — capped at demote_max.
        q.record(bad(), &r, 182_000);
        assert_eq!(
            q.record(bad(), &r, 182_000),
            Some(QualityChange::Extended { until_ms: 382_000, reason: Signal::WrongScript })
        );
        // Good probes restore.
        q.record(BAD, &r, 382_000);
        assert_eq!(q.record(BAD, &r, 382_500), Some(QualityChange::Restored));
        assert_eq!(q.demoted_until(), None);
        assert_eq!(q.view(Some(&r)).answers, 0, "the window starts afresh");
    }

    #[test]
    fn signals_the_rule_leaves_off_are_counted_but_never_demote() {
        let q = QualityHealth::default();
        let r = rule();
        let repaired = Signals::of(&[Signal::JsonRepaired]);
        for _ in 0..10 {
            assert_eq!(q.record(repaired, &r, 0), None);
        }
        let v = q.view(Some(&r));
        assert_eq!((v.answers, v.bad_share, v.signals.get("json_repaired").copied()), (10, 0.0, Some(1.0)));
    }

    #[test]
    fn a_remote_demotion_and_restore_apply() {
        let q = QualityHealth::default();
        q.demote_remote(5_000, Signal::Empty);
        assert_eq!(q.demoted_until(), Some(5_000));
        assert_eq!(q.view(None).demoted_for, Some("empty"));
        assert!(q.restore());
        assert_eq!(q.demoted_until(), None);
    }
}
