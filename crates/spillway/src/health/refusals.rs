//! Base rates of refusals per cascade and request shape
//! ([`crate::quality::shape`]): a refusal counts against the model that
//! gave it (the `refusal` signal) only where the same shape is usually
//! answered — at least [`MIN_HISTORY`] of the cascade's judged answers of
//! that shape seen, fewer than [`USUAL_SHARE`] of them refusals.
//!
//! The history is long: [`HISTORY_WINDOWS`] of the cascade's quality
//! windows, after which both counts are halved (an exponentially fading
//! window). A model that starts refusing a shape the others answer is
//! counted until its refusals are a fifth of that long history — far more
//! answers than its own window needs to demote it — while a shape that was
//! refused often all along never counts.
//!
//! One short lock per judged answer, taken when the answer ends (as the
//! quality window's).

use crate::quality::shape::{Shape, SHAPES};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Answers of a shape seen before its refusals count.
pub const MIN_HISTORY: u32 = 10;
/// A shape is usually answered while refusals are below this share.
pub const USUAL_SHARE: f64 = 0.2;
/// The history, in quality windows of the cascade.
pub const HISTORY_WINDOWS: u32 = 10;

/// Answers and refusals of one shape.
#[derive(Debug, Clone, Copy, Default)]
struct Rate {
    answers: u32,
    refusals: u32,
}

impl Rate {
    fn usually_answered(self) -> bool {
        self.answers >= MIN_HISTORY && f64::from(self.refusals) < USUAL_SHARE * f64::from(self.answers)
    }
}

/// Every cascade's rates, by shape.
#[derive(Debug, Default)]
pub struct RefusalRates {
    cascades: Mutex<HashMap<String, Box<[Rate; SHAPES]>>>,
}

/// What a view shows of one shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShapeRate {
    /// Answers counted (faded).
    pub answers: u32,
    /// The refusals' share of them.
    pub refused_share: f64,
}

impl RefusalRates {
    /// Records one judged answer of `cascade` in `shape`; returns whether
    /// it is a refusal that counts: the shape was usually answered before
    /// it. `window` is the cascade's quality window.
    pub fn record(&self, cascade: &str, shape: Shape, refused: bool, window: u32) -> bool {
        let mut all = self.cascades.lock().unwrap_or_else(PoisonError::into_inner);
        let rates = match all.get_mut(cascade) {
            Some(r) => r,
            None => all.entry(cascade.to_string()).or_insert_with(|| Box::new([Rate::default(); SHAPES])),
        };
        let rate = &mut rates[shape.index()];
        let counts = refused && rate.usually_answered();
        rate.answers += 1;
        rate.refusals += u32::from(refused);
        if rate.answers >= window.max(1).saturating_mul(HISTORY_WINDOWS).max(2 * MIN_HISTORY) {
            rate.answers /= 2;
            rate.refusals /= 2;
        }
        counts
    }

    /// The rate of one shape of `cascade`, if any answer of it was seen.
    pub fn rate(&self, cascade: &str, shape: Shape) -> Option<ShapeRate> {
        let all = self.cascades.lock().unwrap_or_else(PoisonError::into_inner);
        let r = all.get(cascade)?[shape.index()];
        (r.answers > 0)
            .then(|| ShapeRate { answers: r.answers, refused_share: f64::from(r.refusals) / f64::from(r.answers) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quality::text::PromptFacts;

    #[test]
    fn a_refusal_counts_only_where_the_shape_is_usually_answered() {
        let rates = RefusalRates::default();
        let answered = Shape::of(PromptFacts::of("What is the capital of France?"), false, false);
        let refused = Shape::of(PromptFacts::of("Как собрать бомбу?"), false, false);
        // Too little history: a refusal does not count yet.
        assert!(!rates.record("c", answered, true, 50));
        for _ in 0..MIN_HISTORY {
            assert!(!rates.record("c", answered, false, 50));
        }
        assert!(rates.record("c", answered, true, 50), "1 of 11 refused so far: usually answered");
        // Half of this shape's answers are refusals: none counts.
        for i in 0..40 {
            assert!(!rates.record("c", refused, i % 2 == 0, 50));
        }
        assert!(rates.rate("c", refused).is_some_and(|r| r.refused_share == 0.5));
        // Another cascade has its own rates.
        assert!(!rates.record("other", answered, true, 50));
    }

    #[test]
    fn a_model_that_starts_refusing_is_counted_until_its_refusals_are_a_fifth_of_the_history() {
        let rates = RefusalRates::default();
        let shape = Shape::default();
        for _ in 0..100 {
            rates.record("c", shape, false, 10);
        }
        let counted = (0..100).filter(|_| rates.record("c", shape, true, 10)).count();
        // The history (10 windows of 10) fades by halves: about 20 refusals
        // count before the share reaches a fifth — more than a window.
        assert!((12..=30).contains(&counted), "{counted}");
    }
}
