//! The vocabulary of answer quality, at the bottom of the layering with
//! [`crate::outcome`]: what can make a 200 answer bad ([`Signal`]), a set
//! of them ([`Signals`]), and the one-pass text judge ([`text`]) that finds
//! the signals an answer's final text shows (near-empty, wrong script,
//! degenerate repetition), and a request's [`shape`] (for the refusal
//! signal's base rates).
//!
//! Signals are settled with the attempt (`cascade::settle`): the JSON
//! checks note theirs while they run, a stream notes a continuation when
//! it breaks, and the text judge runs once over the final text when the
//! answer ends — never per event. `health::quality` turns them into a
//! rolling window per model and demotes a model whose bad share crosses
//! its cascade's rule.

pub mod shape;
pub mod text;

/// One thing that can make an answer bad although it came with a 200.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signal {
    /// JSON was asked for and the answer needed repair to become valid.
    JsonRepaired,
    /// JSON was asked for and the answer stayed invalid after repair.
    JsonInvalid,
    /// Tool-call arguments invalid for the tool's schema.
    ToolArgsInvalid,
    /// Empty or near-empty content, no tool called.
    Empty,
    /// A refusal (`refusal` field or a `content_filter` finish).
    Refusal,
    /// The answer is in another script than the prompt (Cyrillic answered
    /// in Latin or CJK, or the reverse).
    WrongScript,
    /// The same run of words repeated many times.
    Repetition,
    /// The stream broke mid-answer and needed a continuation.
    Continued,
    /// The client said the answer was bad (`POST /v1/feedback`).
    Feedback,
    /// A canary's check failed.
    Canary,
}

/// Every signal, in label order ([`Signal::index`]).
pub const ALL: [Signal; 10] = [
    Signal::JsonRepaired,
    Signal::JsonInvalid,
    Signal::ToolArgsInvalid,
    Signal::Empty,
    Signal::Refusal,
    Signal::WrongScript,
    Signal::Repetition,
    Signal::Continued,
    Signal::Feedback,
    Signal::Canary,
];

/// Every signal's label, indexed by [`Signal::index`]; the metric's
/// `signal` label takes these and `ok` ([`OK_LABEL`]).
pub const LABELS: [&str; 10] = [
    "json_repaired",
    "json_invalid",
    "tool_args_invalid",
    "empty",
    "refusal",
    "wrong_script",
    "repetition",
    "continued",
    "feedback",
    "canary",
];

/// The `signal` label of an answer that showed none.
pub const OK_LABEL: &str = "ok";

impl Signal {
    /// Position in [`ALL`] and [`LABELS`].
    pub fn index(self) -> usize {
        match self {
            Self::JsonRepaired => 0,
            Self::JsonInvalid => 1,
            Self::ToolArgsInvalid => 2,
            Self::Empty => 3,
            Self::Refusal => 4,
            Self::WrongScript => 5,
            Self::Repetition => 6,
            Self::Continued => 7,
            Self::Feedback => 8,
            Self::Canary => 9,
        }
    }

    /// The bounded label (config, metrics, headers, logs).
    pub fn label(self) -> &'static str {
        LABELS[self.index()]
    }

    /// Reads a label back.
    pub fn parse(label: &str) -> Option<Self> {
        ALL.into_iter().find(|s| s.label() == label)
    }
}

/// A set of signals, one bit each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Signals(u16);

impl Signals {
    /// No signal.
    pub const NONE: Self = Self(0);

    /// The set of `signals`.
    pub fn of(signals: &[Signal]) -> Self {
        signals.iter().fold(Self::NONE, |s, x| s.with(*x))
    }

    /// Adds one.
    #[must_use]
    pub fn with(self, s: Signal) -> Self {
        Self(self.0 | 1 << s.index())
    }

    /// Adds one in place.
    pub fn add(&mut self, s: Signal) {
        *self = self.with(s);
    }

    /// Adds every signal of `other`.
    pub fn extend(&mut self, other: Self) {
        self.0 |= other.0;
    }

    /// Has `s`.
    pub fn has(self, s: Signal) -> bool {
        self.0 & (1 << s.index()) != 0
    }

    /// None at all.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The signals both sets have.
    #[must_use]
    pub fn and(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    /// Each signal of the set, in label order.
    pub fn iter(self) -> impl Iterator<Item = Signal> {
        ALL.into_iter().filter(move |s| self.has(*s))
    }

    /// The labels joined with `,` (`x-spillway-quality`, logs).
    pub fn labels(self) -> String {
        let mut out = String::new();
        for s in self.iter() {
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str(s.label());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_sets_hold_what_was_added() {
        for s in ALL {
            assert_eq!(Signal::parse(s.label()), Some(s));
            assert_eq!(ALL[s.index()], s);
        }
        let set = Signals::of(&[Signal::Empty, Signal::Canary]);
        assert!(set.has(Signal::Empty) && set.has(Signal::Canary) && !set.has(Signal::Refusal));
        assert_eq!(set.labels(), "empty,canary");
        assert!(set.and(Signals::of(&[Signal::Refusal])).is_empty());
    }
}
