//! Digests instead of floods: the first event of a key (kind plus cascade,
//! model or provider: [`Event::key`]) goes out at once; more of that key
//! within `alerts.repeat_after` are counted, and when the window ends one
//! message says how many there were ("12 requests queued for an operator in
//! chat in the last 10 min"). A window that ends with a count starts the
//! next one, so a long outage sends one message per window; a window that
//! ends with nothing held closes, and the next event is sent at once again.
//!
//! A breaker that re-opens after a failed probe while its first alert is
//! still within the window is held like any repeat and reported in the
//! digest, never dropped. When the state an alert opened ends (the breaker
//! closes: see [`super::resolve`]), what its digest held goes out at once
//! ([`Digest::take_key`]) and covers the time up to then, not a window that
//! would end after the resolved message; the window itself goes on, so a
//! state that flaps (a cascade failing one request now and then) is one
//! alert, its resolution, and one digest per window — which says when the
//! last of its repeats ended, if it did ([`Digest::ended`]). The digest
//! lives on the [`super::AlertBus`], so a config reload keeps what is held.

use super::Event;
use std::collections::HashMap;
use std::time::Duration;

#[derive(Debug)]
struct Group {
    /// Unix ms the current window began (the last message of this key).
    opened_ms: u64,
    /// Events held since.
    held: u64,
    /// The latest of them.
    last: Option<Event>,
    /// When the state the latest held event opened ended, if it did.
    ended_ms: Option<u64>,
}

/// Held repeats per key.
#[derive(Debug, Default)]
pub struct Digest {
    groups: HashMap<String, Group>,
}

/// A digest ready to go out.
#[derive(Debug, Clone, PartialEq)]
pub struct Due {
    /// The latest event of the key.
    pub last: Event,
    /// How many were held.
    pub count: u64,
    /// Unix ms the window it covers began (it ends when the digest goes out).
    pub opened_ms: u64,
    /// When the state the latest of them opened ended, if it did before
    /// the digest went out (a state still on is open from the digest on).
    pub ended_ms: Option<u64>,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Digest {
    /// Whether `event` goes out now (the first of its key in a window);
    /// otherwise it is held for the digest.
    pub fn offer(&mut self, event: &Event, now_ms: u64, window: Duration) -> bool {
        let key = event.key();
        match self.groups.get_mut(&key) {
            // Within the window; or past it with events held and no flush
            // yet: the digest goes out first (see `take_due`), this one is
            // held in the next window.
            Some(g) if now_ms.saturating_sub(g.opened_ms) < ms(window) || g.held > 0 => {
                g.held += 1;
                g.last = Some(event.clone());
                g.ended_ms = None;
                false
            }
            _ => {
                self.groups.insert(key, Group { opened_ms: now_ms, held: 0, last: None, ended_ms: None });
                true
            }
        }
    }

    /// Digests whose window has ended; each starts the next window. Groups
    /// whose window ended with nothing held are forgotten.
    pub fn take_due(&mut self, now_ms: u64, window: Duration) -> Vec<Due> {
        let w = ms(window);
        let mut due = Vec::new();
        self.groups.retain(|_, g| {
            if now_ms.saturating_sub(g.opened_ms) < w {
                return true;
            }
            match g.last.take() {
                Some(last) if g.held > 0 => {
                    due.push(Due { last, count: g.held, opened_ms: g.opened_ms, ended_ms: g.ended_ms });
                    *g = Group { opened_ms: now_ms, held: 0, last: None, ended_ms: None };
                    true
                }
                _ => false,
            }
        });
        due
    }

    /// What `key` holds, taken out now whatever the window's age: the
    /// state those events belonged to ended (see [`super::resolve`]). The
    /// window goes on, so a state that opens again within it is held.
    pub fn take_key(&mut self, key: &str, now_ms: u64) -> Option<Due> {
        let g = self.groups.get_mut(key)?;
        let last = g.last.take().filter(|_| g.held > 0)?;
        let due = Due { last, count: g.held, opened_ms: g.opened_ms, ended_ms: Some(now_ms) };
        g.held = 0;
        Some(due)
    }

    /// The state the latest held event of `key` opened ended at `now_ms`
    /// (its alert had not gone out: it is only in the digest).
    pub fn ended(&mut self, key: &str, now_ms: u64) {
        if let Some(g) = self.groups.get_mut(key).filter(|g| g.held > 0) {
            g.ended_ms = Some(now_ms);
        }
    }

    /// When the next window with something held ends, Unix ms.
    pub fn next_due(&self, window: Duration) -> Option<u64> {
        self.groups.values().filter(|g| g.held > 0).map(|g| g.opened_ms.saturating_add(ms(window))).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(id: &str) -> Event {
        Event::HandoffQueued { id: id.into(), cascade: "chat".into(), attempts: 3 }
    }

    #[test]
    fn first_at_once_then_one_digest_per_window() {
        let mut d = Digest::default();
        let w = Duration::from_secs(600);
        assert!(d.offer(&queued("1"), 0, w));
        for i in 0..12 {
            assert!(!d.offer(&queued(&format!("r{i}")), 1_000 + i * 1_000, w));
        }
        assert_eq!(d.next_due(w), Some(600_000));
        assert!(d.take_due(599_999, w).is_empty());
        let due = d.take_due(600_000, w);
        assert_eq!(due, [Due { last: queued("r11"), count: 12, opened_ms: 0, ended_ms: None }]);
        // The next window: held again, then a quiet window closes the group.
        assert!(!d.offer(&queued("x"), 700_000, w));
        assert_eq!(d.take_due(1_200_000, w).len(), 1);
        assert!(d.take_due(1_800_000, w).is_empty());
        assert!(d.offer(&queued("y"), 1_800_001, w), "a closed group sends at once again");
    }

    #[test]
    fn keys_group_separately() {
        let mut d = Digest::default();
        let w = Duration::from_secs(60);
        let other = Event::HandoffQueued { id: "2".into(), cascade: "support".into(), attempts: 1 };
        assert!(d.offer(&queued("1"), 0, w));
        assert!(d.offer(&other, 0, w));
        let reopened = Event::BreakerOpened { model: "p/m".into(), reason: "probe failed".into() };
        assert!(d.offer(&reopened, 0, w));
        assert!(!d.offer(&reopened, 30_000, w), "a re-open within the window is held, not dropped");
        assert_eq!(d.take_due(60_000, w), [Due { last: reopened, count: 1, opened_ms: 0, ended_ms: None }]);
    }

    /// A state that ends takes its digest out of the window at once; a
    /// state that opens again within the window is held, and its end is
    /// said in the digest.
    #[test]
    fn take_key_sends_what_is_held_and_the_window_goes_on() {
        let mut d = Digest::default();
        let w = Duration::from_secs(1800);
        let reopened = Event::BreakerOpened { model: "p/m".into(), reason: "probe failed".into() };
        assert!(d.offer(&reopened, 0, w));
        assert!(!d.offer(&reopened, 120_000, w));
        assert!(!d.offer(&reopened, 240_000, w));
        let due = d.take_key(&reopened.key(), 300_000);
        assert_eq!(due, Some(Due { last: reopened.clone(), count: 2, opened_ms: 0, ended_ms: Some(300_000) }));
        assert_eq!(d.next_due(w), None, "nothing left to send at the window's end");
        assert_eq!(d.take_key(&reopened.key(), 300_000), None, "nothing held: nothing to send");
        // It flaps: opens again within the window (held), ends again.
        assert!(!d.offer(&reopened, 400_000, w));
        d.ended(&reopened.key(), 500_000);
        let due = d.take_due(1_800_000, w);
        assert_eq!(due, [Due { last: reopened.clone(), count: 1, opened_ms: 0, ended_ms: Some(500_000) }]);
        // Opened again and still on at the window's end: no end to say.
        assert!(!d.offer(&reopened, 1_900_000, w));
        assert_eq!(d.take_due(3_600_000, w)[0].ended_ms, None);
    }
}
