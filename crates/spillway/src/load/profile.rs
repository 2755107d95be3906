//! Degradation profiles and how one is chosen from a load (SPEC §9).
//!
//! The monitor feeds each reading (or failure) into [`Staleness`], which
//! turns "failed three intervals in a row" into an unknown load, then passes
//! the load to [`ProfileSelector::select`] and publishes the chosen index for
//! the request path to read. Selection is stateful only because of
//! hysteresis: without it, a load hovering at a threshold would switch the
//! profile, and with it the `x-spillway-load-profile` header and the answers'
//! length, on every poll.

/// One `load.profiles[]` entry after config compilation.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Shown in `x-spillway-load-profile` and metrics.
    pub name: String,
    /// Applies while the load is below this; `None` for the last profile,
    /// which catches everything above.
    pub below: Option<f64>,
    /// Added as a system message by [`super::apply_profile`].
    pub system_prompt: Option<String>,
    /// `max_tokens` is multiplied by this (rounded up) by
    /// [`super::apply_profile`].
    pub max_tokens_factor: Option<f64>,
}

impl Profile {
    /// Whether [`super::apply_profile`] changes a body under this profile
    /// (a system prompt or a `max_tokens` factor); a plain profile leaves the
    /// client's body uncopied.
    pub fn rewrites(&self) -> bool {
        self.system_prompt.as_deref().is_some_and(|p| !p.is_empty())
            || self.max_tokens_factor.is_some_and(|f| f.is_finite() && f > 0.0)
    }

    /// A profile that changes nothing, e.g. the usual first `normal` one.
    pub fn plain(name: impl Into<String>, below: Option<f64>) -> Self {
        Profile { name: name.into(), below, system_prompt: None, max_tokens_factor: None }
    }

    /// `below`, with "none" as +∞ so comparisons need no special case.
    fn threshold(&self) -> f64 {
        self.below.unwrap_or(f64::INFINITY)
    }
}

/// Picks a profile for each load reading, with hysteresis.
///
/// Rules (profiles ordered by rising `below`, as config validation ensures):
/// - the plain choice is the first profile whose `below` exceeds the load;
/// - moving **up** (to a heavier profile) happens at once, as soon as the load
///   reaches the current profile's `below`;
/// - moving **down** happens only to a profile whose `below − hysteresis`
///   still exceeds the load, i.e. the load must fall `hysteresis` under the
///   threshold it crossed; otherwise the current profile stays;
/// - an unknown load (`None`, or NaN) selects the first profile and resets
///   the state, since the safe default for an unobserved provider is to
///   leave requests alone.
#[derive(Debug, Clone)]
pub struct ProfileSelector {
    profiles: Vec<Profile>,
    hysteresis: f64,
    current: usize,
}

impl ProfileSelector {
    /// A selector starting in the first profile. A negative or NaN
    /// `hysteresis` counts as 0.
    pub fn new(profiles: Vec<Profile>, hysteresis: f64) -> Self {
        ProfileSelector { profiles, hysteresis: if hysteresis > 0.0 { hysteresis } else { 0.0 }, current: 0 }
    }

    /// The profiles, in config order; index with what [`Self::select`] returns.
    pub fn profiles(&self) -> &[Profile] {
        &self.profiles
    }

    /// The index chosen by the last [`Self::select`] (0 before any).
    pub fn current(&self) -> usize {
        self.current
    }

    /// The profile at [`Self::current`], if there are any profiles.
    pub fn current_profile(&self) -> Option<&Profile> {
        self.profiles.get(self.current)
    }

    /// Updates the state with a new reading and returns the profile index.
    /// With no profiles configured it returns 0, which indexes nothing.
    pub fn select(&mut self, load: Option<f64>) -> usize {
        let Some(load) = load.filter(|l| !l.is_nan()) else {
            self.current = 0;
            return 0;
        };
        let last = self.profiles.len().saturating_sub(1);
        let first_with = |margin: f64| self.profiles.iter().position(|p| load < p.threshold() - margin).unwrap_or(last);
        let plain = first_with(0.0);
        if plain > self.current {
            self.current = plain;
        } else {
            // The stricter test can only pick an index at or above `plain`.
            let down = first_with(self.hysteresis);
            if down < self.current {
                self.current = down;
            }
        }
        self.current
    }
}

/// "A source that fails for three intervals makes the load unknown."
///
/// Keeps the last good reading through up to `limit − 1` consecutive
/// failures (one lost scrape should not reset the profile), then reports
/// unknown until the next success. Before the first success the load is
/// unknown.
#[derive(Debug, Clone)]
pub struct Staleness {
    last: Option<f64>,
    failures: u32,
    limit: u32,
}

impl Default for Staleness {
    fn default() -> Self {
        Staleness::new(Staleness::DEFAULT_LIMIT)
    }
}

impl Staleness {
    /// The SPEC's three failed intervals.
    pub const DEFAULT_LIMIT: u32 = 3;

    /// Unknown after `limit` consecutive failures (at least 1).
    pub fn new(limit: u32) -> Self {
        Staleness { last: None, failures: 0, limit: limit.max(1) }
    }

    /// Feeds one interval's outcome and returns the load to use now.
    pub fn observe<E>(&mut self, reading: Result<f64, E>) -> Option<f64> {
        match reading {
            Ok(load) => self.success(load),
            Err(_) => self.failure(),
        }
    }

    /// A good reading: remembered, and the failure count is reset.
    pub fn success(&mut self, load: f64) -> Option<f64> {
        self.failures = 0;
        self.last = Some(load);
        self.last
    }

    /// A failed interval.
    pub fn failure(&mut self) -> Option<f64> {
        self.failures = self.failures.saturating_add(1);
        if self.failures >= self.limit {
            self.last = None;
        }
        self.last
    }

    /// The load to use now, without feeding anything.
    pub fn load(&self) -> Option<f64> {
        self.last
    }

    /// Consecutive failed intervals so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_profiles_that_change_something_rewrite() {
        let with = |prompt: Option<&str>, factor: Option<f64>| Profile {
            name: "p".into(),
            below: None,
            system_prompt: prompt.map(str::to_owned),
            max_tokens_factor: factor,
        };
        assert!(!Profile::plain("normal", Some(0.7)).rewrites());
        assert!(!with(Some(""), Some(f64::NAN)).rewrites());
        assert!(!with(None, Some(0.0)).rewrites());
        assert!(with(Some("Be brief."), None).rewrites());
        assert!(with(None, Some(0.5)).rewrites());
        // What `rewrites` skips, apply_profile would not have changed.
        let body = serde_json::json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100});
        for p in [Profile::plain("normal", None), with(Some(""), Some(f64::INFINITY)), with(None, Some(-1.0))] {
            let mut b = body.as_object().cloned().unwrap();
            super::super::rewrite::apply_profile(&mut b, &p, Some(50), true);
            assert_eq!(serde_json::Value::Object(b), body, "{}", p.name);
        }
    }

    /// The SPEC's example: normal < 0.75 ≤ tired < 0.90 ≤ lazy, hysteresis 0.03.
    fn spec_selector() -> ProfileSelector {
        ProfileSelector::new(
            vec![
                Profile::plain("normal", Some(0.75)),
                Profile::plain("tired", Some(0.90)),
                Profile::plain("lazy", None),
            ],
            0.03,
        )
    }

    /// Runs `loads` through a fresh selector and returns the chosen names.
    fn run(loads: &[Option<f64>]) -> Vec<&'static str> {
        let mut s = spec_selector();
        let names = ["normal", "tired", "lazy"];
        loads.iter().map(|&l| names[s.select(l)]).collect()
    }

    /// What the sequence shows, the loads, the profile chosen after each.
    type Case = (&'static str, &'static [Option<f64>], &'static [&'static str]);

    #[test]
    fn hysteresis_sequences() {
        let cases: &[Case] = &[
            (
                "plain thresholds, no flapping involved",
                &[Some(0.1), Some(0.8), Some(0.95), Some(1.0)],
                &["normal", "tired", "lazy", "lazy"],
            ),
            (
                "moving up happens exactly at the threshold",
                &[Some(0.7499), Some(0.75), Some(0.8999), Some(0.90)],
                &["normal", "tired", "tired", "lazy"],
            ),
            (
                "hovering around 0.75 does not flap",
                &[Some(0.76), Some(0.74), Some(0.76), Some(0.73), Some(0.7201)],
                &["tired", "tired", "tired", "tired", "tired"],
            ),
            (
                "moving down needs load < threshold - hysteresis",
                &[Some(0.76), Some(0.721), Some(0.7199)],
                &["tired", "tired", "normal"],
            ),
            (
                "from lazy, a drop into tired's band waits too",
                &[Some(0.95), Some(0.88), Some(0.8699), Some(0.73), Some(0.70)],
                &["lazy", "lazy", "tired", "tired", "normal"],
            ),
            ("a big drop skips straight to the first profile", &[Some(0.99), Some(0.10)], &["lazy", "normal"]),
            (
                "a drop to the hysteresis band of a lower threshold stops there",
                &[Some(0.99), Some(0.73)],
                &["lazy", "tired"],
            ),
            (
                "unknown load resets to the first profile",
                &[Some(0.95), None, Some(0.74), Some(f64::NAN), Some(0.8)],
                &["lazy", "normal", "normal", "normal", "tired"],
            ),
            (
                "out-of-range readings",
                &[Some(-1.0), Some(7.0), Some(f64::INFINITY), Some(f64::NEG_INFINITY)],
                &["normal", "lazy", "lazy", "normal"],
            ),
        ];
        for (what, loads, want) in cases {
            assert_eq!(run(loads), *want, "{what}");
        }
    }

    #[test]
    fn zero_hysteresis_follows_thresholds() {
        let mut s = spec_selector();
        s.hysteresis = 0.0;
        assert_eq!(s.select(Some(0.8)), 1);
        assert_eq!(s.select(Some(0.7499)), 0);
        assert_eq!(ProfileSelector::new(Vec::new(), f64::NAN).hysteresis, 0.0);
    }

    #[test]
    fn degenerate_profile_lists() {
        let mut none = ProfileSelector::new(Vec::new(), 0.03);
        assert_eq!(none.select(Some(0.5)), 0);
        assert!(none.current_profile().is_none());
        // Every profile has a `below` (config should forbid it): stay in the last.
        let mut capped =
            ProfileSelector::new(vec![Profile::plain("a", Some(0.5)), Profile::plain("b", Some(0.9))], 0.0);
        assert_eq!(capped.select(Some(0.95)), 1);
        assert_eq!(capped.current_profile().map(|p| p.name.as_str()), Some("b"));
        let mut single = ProfileSelector::new(vec![Profile::plain("only", None)], 0.03);
        assert_eq!(single.select(Some(0.99)), 0);
    }

    #[test]
    fn three_failed_intervals_make_the_load_unknown() {
        let mut s = Staleness::default();
        assert_eq!(s.load(), None);
        assert_eq!(s.observe::<()>(Ok(0.8)), Some(0.8));
        assert_eq!(s.observe(Err("timeout")), Some(0.8));
        assert_eq!(s.observe(Err("timeout")), Some(0.8));
        assert_eq!(s.failures(), 2);
        assert_eq!(s.observe(Err("timeout")), None);
        assert_eq!(s.observe(Err("timeout")), None);
        assert_eq!(s.observe::<()>(Ok(0.2)), Some(0.2));
        assert_eq!(s.failures(), 0);
        // Failures that do not run to three in a row never reset it.
        for _ in 0..5 {
            assert_eq!(s.failure(), Some(0.2));
            assert_eq!(s.failure(), Some(0.2));
            assert_eq!(s.success(0.2), Some(0.2));
        }
        let mut strict = Staleness::new(0);
        strict.success(0.5);
        assert_eq!(strict.failure(), None);
    }
}
