//! The counting rules every backend applies, written once in Rust: the
//! memory backend runs them, and the Redis backend's Lua script
//! (`redis.rs`) is the same rules line for line, so one conformance test
//! checks both.
//!
//! A *subject* is a key, or one end user of a key. Its [`Tally`] holds:
//!
//! - a ring of 60 one-second buckets (`second, requests, tokens`): the rpm
//!   and tpm of a sliding minute, exact to the second and bounded whatever
//!   the traffic;
//! - the requests in flight, each a lease (`expires, usd, tokens, second`)
//!   so that an instance that dies mid-request cannot hold a slot or a
//!   reservation for longer than the lease;
//! - the period's spend and usage (requests, input and output tokens).
//!
//! Admission ([`admit`]) checks every subject before it writes anything:
//! all or nothing. Settlement ([`settle`]) replaces a reservation by the
//! real usage.

use std::collections::HashMap;

/// Seconds in the sliding window.
pub const WINDOW_S: u64 = 60;

/// One subject's limits for an admission; 0 means no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rules {
    /// Requests per minute.
    pub rpm: u64,
    /// Tokens per minute.
    pub tpm: u64,
    /// Requests in flight.
    pub parallel: u64,
    /// Micro-USD per period; `u64::MAX`: no budget.
    pub budget_micro: u64,
    /// The budget period's number (day, month, or 0 for `total`).
    pub period: u64,
    /// Unix ms when the period ends (0: never).
    pub period_end_ms: u64,
}

/// What one admission asks for.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    /// Now, Unix ms.
    pub now_ms: u64,
    /// Tokens reserved (prompt estimate plus the answer's cap).
    pub tokens: u64,
    /// Micro-USD reserved (the worst case of the cascade).
    pub usd_micro: u64,
    /// How long the reservation holds at most (the request's deadline and a margin).
    pub lease_ms: u64,
}

/// Which limit refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `max_parallel`.
    Parallel,
    /// `rpm`.
    Requests,
    /// `tpm`.
    Tokens,
    /// The budget is spent.
    Budget,
}

impl Refusal {
    /// A bounded label (metrics, logs).
    pub fn label(self) -> &'static str {
        match self {
            Self::Parallel => "parallel",
            Self::Requests => "requests",
            Self::Tokens => "tokens",
            Self::Budget => "budget",
        }
    }

    /// The code the Lua script returns.
    pub fn code(self) -> u64 {
        match self {
            Self::Parallel => 1,
            Self::Requests => 2,
            Self::Tokens => 3,
            Self::Budget => 4,
        }
    }

    /// From the Lua script's code.
    pub fn from_code(c: u64) -> Option<Self> {
        [Self::Parallel, Self::Requests, Self::Tokens, Self::Budget].into_iter().find(|r| r.code() == c)
    }
}

/// Where one subject stands after an admission: what the rate-limit
/// headers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Standing {
    /// Requests left in the window (after this one, when admitted).
    pub requests_left: u64,
    /// Ms until the oldest counted request leaves the window.
    pub requests_reset_ms: u64,
    /// Tokens left in the window.
    pub tokens_left: u64,
    /// Ms until the oldest counted tokens leave the window.
    pub tokens_reset_ms: u64,
}

/// The answer to an admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Let in; the standing of each subject (key, then user).
    Admitted([Standing; 2]),
    /// Refused by `subject` (0 the key, 1 the user) for `refusal`; retry
    /// after `retry_ms` (0: not before the period ends, or never).
    Refused { subject: u8, refusal: Refusal, retry_ms: u64, standing: Standing },
}

/// One request in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lease {
    expires_ms: u64,
    usd_micro: u64,
    tokens: u64,
    second: u64,
}

/// Usage of one period, for `/admin/keys/{id}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// The period's number.
    pub period: u64,
    /// Requests admitted.
    pub requests: u64,
    /// Input tokens settled.
    pub input_tokens: u64,
    /// Output tokens settled.
    pub output_tokens: u64,
    /// Micro-USD settled.
    pub spent_micro: u64,
    /// Micro-USD reserved by requests in flight.
    pub reserved_micro: u64,
    /// Requests in flight.
    pub in_flight: u64,
}

/// One subject's counters.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    buckets: HashMap<u64, (u64, u64, u64)>,
    leases: HashMap<String, Lease>,
    usage: Usage,
    /// Unix ms of the last admission (for dropping idle subjects).
    pub last_ms: u64,
}

impl Tally {
    fn prune(&mut self, now_ms: u64, period: u64) {
        self.leases.retain(|_, l| l.expires_ms > now_ms);
        let now_s = now_ms / 1000;
        self.buckets.retain(|_, (sec, _, _)| *sec + WINDOW_S > now_s);
        if self.usage.period != period {
            self.usage = Usage { period, ..Usage::default() };
        }
    }

    fn standing(&self, rules: &Rules, now_ms: u64) -> Standing {
        let (mut reqs, mut toks, mut oldest) = (0u64, 0u64, u64::MAX);
        for (sec, r, t) in self.buckets.values() {
            reqs += r;
            toks += t;
            oldest = oldest.min(*sec);
        }
        let reset = if oldest == u64::MAX { 0 } else { ((oldest + WINDOW_S) * 1000).saturating_sub(now_ms) };
        Standing {
            requests_left: rules.rpm.saturating_sub(reqs),
            requests_reset_ms: reset,
            tokens_left: rules.tpm.saturating_sub(toks),
            tokens_reset_ms: reset,
        }
    }

    /// Ms until `needed` tokens have left the window.
    fn tokens_free_in(&self, rules: &Rules, now_ms: u64, needed: u64) -> u64 {
        let mut secs: Vec<&(u64, u64, u64)> = self.buckets.values().collect();
        secs.sort_unstable_by_key(|b| b.0);
        let used: u64 = secs.iter().map(|b| b.2).sum();
        let mut over = (used + needed).saturating_sub(rules.tpm);
        for (sec, _, t) in secs {
            over = over.saturating_sub(*t);
            if over == 0 {
                return ((sec + WINDOW_S) * 1000).saturating_sub(now_ms);
            }
        }
        WINDOW_S * 1000
    }

    fn check(&mut self, rules: &Rules, ask: &Ask) -> Result<Standing, (Refusal, u64, Standing)> {
        self.prune(ask.now_ms, rules.period);
        let st = self.standing(rules, ask.now_ms);
        if rules.parallel > 0 && self.leases.len() as u64 >= rules.parallel {
            return Err((Refusal::Parallel, 1000, st));
        }
        if rules.rpm > 0 && st.requests_left == 0 {
            return Err((Refusal::Requests, st.requests_reset_ms.max(1), st));
        }
        // A reservation counts at most the whole tpm: one request larger
        // than the limit is let in when the window is empty.
        let tokens = if rules.tpm > 0 { ask.tokens.min(rules.tpm) } else { ask.tokens };
        if rules.tpm > 0 && st.tokens_left < tokens {
            return Err((Refusal::Tokens, self.tokens_free_in(rules, ask.now_ms, tokens).max(1), st));
        }
        let reserved: u64 = self.leases.values().map(|l| l.usd_micro).sum();
        if rules.budget_micro != u64::MAX && self.usage.spent_micro.saturating_add(reserved) >= rules.budget_micro {
            let retry = if rules.period_end_ms == 0 { 0 } else { rules.period_end_ms.saturating_sub(ask.now_ms) };
            return Err((Refusal::Budget, retry, st));
        }
        Ok(st)
    }

    fn take(&mut self, rules: &Rules, ask: &Ask, rid: &str, st: Standing) -> Standing {
        let sec = ask.now_ms / 1000;
        let tokens = if rules.tpm > 0 { ask.tokens.min(rules.tpm) } else { ask.tokens };
        let b = self.buckets.entry(sec % WINDOW_S).or_insert((sec, 0, 0));
        if b.0 != sec {
            *b = (sec, 0, 0);
        }
        b.1 += 1;
        b.2 += tokens;
        self.leases.insert(
            rid.to_string(),
            Lease { expires_ms: ask.now_ms + ask.lease_ms, usd_micro: ask.usd_micro, tokens, second: sec },
        );
        self.usage.requests += 1;
        self.last_ms = ask.now_ms;
        let reset = if st.requests_reset_ms == 0 { WINDOW_S * 1000 } else { st.requests_reset_ms };
        Standing {
            requests_left: st.requests_left.saturating_sub(1),
            requests_reset_ms: reset,
            tokens_left: st.tokens_left.saturating_sub(tokens),
            tokens_reset_ms: reset,
        }
    }

    /// Replaces reservation `rid` with the real usage.
    pub fn settle(&mut self, rid: &str, now_ms: u64, period: u64, used: Used) {
        self.prune(now_ms, period);
        let Some(lease) = self.leases.remove(rid) else {
            // Expired (or never made here): the usage still counts.
            self.add_usage(used);
            return;
        };
        let real = used.input_tokens + used.output_tokens;
        if let Some(b) = self.buckets.get_mut(&(lease.second % WINDOW_S)).filter(|b| b.0 == lease.second) {
            b.2 = (b.2 + real).saturating_sub(lease.tokens);
        }
        self.add_usage(used);
    }

    fn add_usage(&mut self, used: Used) {
        self.usage.input_tokens += used.input_tokens;
        self.usage.output_tokens += used.output_tokens;
        self.usage.spent_micro += used.usd_micro;
    }

    /// The period's usage now.
    pub fn usage(&mut self, now_ms: u64, period: u64) -> Usage {
        self.prune(now_ms, period);
        Usage {
            reserved_micro: self.leases.values().map(|l| l.usd_micro).sum(),
            in_flight: self.leases.len() as u64,
            ..self.usage
        }
    }

    /// The period's settled usage as it stands, for keeping across restarts.
    pub fn kept(&self) -> Usage {
        self.usage
    }

    /// Adds usage kept from before a restart: onto a fresh tally, or one of
    /// the same period (what was counted since the start adds to it); a
    /// past period's usage is dropped, as the next admission would reset it.
    pub fn restore(&mut self, kept: Usage) {
        if self.usage == Usage::default() {
            self.usage.period = kept.period;
        }
        if self.usage.period != kept.period {
            return;
        }
        self.usage.requests += kept.requests;
        self.usage.input_tokens += kept.input_tokens;
        self.usage.output_tokens += kept.output_tokens;
        self.usage.spent_micro += kept.spent_micro;
    }

    /// Nothing in flight and nothing in the window: safe to forget (the
    /// period's spend goes with it — only per-user tallies are dropped).
    pub fn idle(&self, now_ms: u64) -> bool {
        self.leases.is_empty() && self.last_ms + WINDOW_S * 1000 < now_ms
    }
}

/// Real usage of a settled request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Used {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Micro-USD.
    pub usd_micro: u64,
}

/// Admits `ask` against the key's tally and, when given, the user's: both
/// are checked before either is written.
pub fn admit(key: (&mut Tally, &Rules), user: Option<(&mut Tally, &Rules)>, ask: &Ask, rid: &str) -> Verdict {
    let ks = match key.0.check(key.1, ask) {
        Ok(s) => s,
        Err((refusal, retry_ms, standing)) => return Verdict::Refused { subject: 0, refusal, retry_ms, standing },
    };
    let mut user = user;
    let mut us = None;
    if let Some((t, r)) = user.as_mut() {
        // Checking only prunes what has expired: no harm when the key refuses.
        match t.check(r, ask) {
            Ok(s) => us = Some(s),
            Err((refusal, retry_ms, standing)) => return Verdict::Refused { subject: 1, refusal, retry_ms, standing },
        }
    }
    let ks = key.0.take(key.1, ask, rid, ks);
    let us = match (user, us) {
        (Some((t, r)), Some(s)) => t.take(r, ask, rid, s),
        _ => Standing::default(),
    };
    Verdict::Admitted([ks, us])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(now_ms: u64, tokens: u64) -> Ask {
        Ask { now_ms, tokens, usd_micro: 0, lease_ms: 60_000 }
    }

    #[test]
    fn rpm_is_a_sliding_minute() {
        let rules = Rules { rpm: 3, budget_micro: u64::MAX, ..Rules::default() };
        let mut t = Tally::default();
        for i in 0..3 {
            assert!(matches!(
                admit((&mut t, &rules), None, &ask(1_000 + i * 10_000, 1), &format!("r{i}")),
                Verdict::Admitted(_)
            ));
        }
        let v = admit((&mut t, &rules), None, &ask(30_000, 1), "r3");
        assert_eq!(
            v,
            Verdict::Refused {
                subject: 0,
                refusal: Refusal::Requests,
                retry_ms: 31_000,
                standing: Standing {
                    requests_left: 0,
                    requests_reset_ms: 31_000,
                    tokens_left: 0,
                    tokens_reset_ms: 31_000
                }
            }
        );
        assert!(matches!(admit((&mut t, &rules), None, &ask(61_000, 1), "r4"), Verdict::Admitted(_)));
        assert!(matches!(admit((&mut t, &rules), None, &ask(61_500, 1), "r5"), Verdict::Refused { .. }));
    }

    #[test]
    fn tokens_are_reserved_then_settled() {
        let rules = Rules { tpm: 1000, budget_micro: u64::MAX, ..Rules::default() };
        let mut t = Tally::default();
        assert!(matches!(admit((&mut t, &rules), None, &ask(0, 800), "a"), Verdict::Admitted(_)));
        assert!(matches!(
            admit((&mut t, &rules), None, &ask(0, 300), "b"),
            Verdict::Refused { refusal: Refusal::Tokens, .. }
        ));
        t.settle("a", 10, 0, Used { input_tokens: 100, output_tokens: 50, usd_micro: 0 });
        assert!(matches!(admit((&mut t, &rules), None, &ask(20, 300), "b"), Verdict::Admitted(_)));
        assert_eq!(t.usage(20, 0).input_tokens, 100);
    }

    #[test]
    fn budget_counts_spend_and_reservations() {
        let rules = Rules { budget_micro: 1_000, period_end_ms: 86_400_000, ..Rules::default() };
        let mut t = Tally::default();
        let a = Ask { usd_micro: 600, ..ask(0, 0) };
        assert!(matches!(admit((&mut t, &rules), None, &a, "a"), Verdict::Admitted(_)));
        assert!(matches!(admit((&mut t, &rules), None, &a, "b"), Verdict::Admitted(_)), "600 reserved < 1000");
        let v = admit((&mut t, &rules), None, &a, "c");
        assert!(matches!(v, Verdict::Refused { refusal: Refusal::Budget, retry_ms: 86_400_000, .. }), "{v:?}");
        t.settle("a", 1, 0, Used { usd_micro: 10, ..Used::default() });
        t.settle("b", 1, 0, Used { usd_micro: 10, ..Used::default() });
        assert!(matches!(admit((&mut t, &rules), None, &a, "c"), Verdict::Admitted(_)));
        assert_eq!(t.usage(2, 0).spent_micro, 20);
        assert_eq!(t.usage(2, 1).spent_micro, 0, "a new period starts afresh");
    }

    #[test]
    fn parallel_leases_end_or_expire() {
        let rules = Rules { parallel: 1, budget_micro: u64::MAX, ..Rules::default() };
        let mut t = Tally::default();
        assert!(matches!(admit((&mut t, &rules), None, &ask(0, 0), "a"), Verdict::Admitted(_)));
        assert!(matches!(
            admit((&mut t, &rules), None, &ask(1, 0), "b"),
            Verdict::Refused { refusal: Refusal::Parallel, .. }
        ));
        assert!(
            matches!(admit((&mut t, &rules), None, &ask(60_001, 0), "b"), Verdict::Admitted(_)),
            "the lease expired"
        );
    }

    #[test]
    fn a_refusing_user_leaves_the_key_untouched() {
        let key = Rules { rpm: 10, budget_micro: u64::MAX, ..Rules::default() };
        let user = Rules { rpm: 1, budget_micro: u64::MAX, ..Rules::default() };
        let (mut k, mut u) = (Tally::default(), Tally::default());
        assert!(matches!(admit((&mut k, &key), Some((&mut u, &user)), &ask(0, 0), "a"), Verdict::Admitted(_)));
        let v = admit((&mut k, &key), Some((&mut u, &user)), &ask(1, 0), "b");
        assert!(matches!(v, Verdict::Refused { subject: 1, refusal: Refusal::Requests, .. }));
        assert_eq!(k.usage(1, 0).requests, 1);
    }
}
