//! [`Completion`]: a whole answer as the runner carries it from the
//! adapter's call to the client — the checked upstream bytes of the fast
//! path, or a tree on the general path — and what the runner asks of it
//! (an answer at all? its usage?) whichever path it took.

use super::raw::RawCompletion;
use crate::api::tokens::{estimate_tokens, Tokens};
use crate::api::wire::{self, Stamp};
use serde_json::Value;

/// A whole answer: checked upstream bytes, or a parsed tree.
#[derive(Debug, Clone)]
pub enum Completion {
    /// A parsed body (native adapters, answers that needed completing,
    /// answers whose JSON content was checked).
    Value(Value),
    /// An upstream body that needs nothing but the stamp.
    Raw(RawCompletion),
}

impl From<Value> for Completion {
    fn from(v: Value) -> Self {
        Self::Value(v)
    }
}

impl Completion {
    /// Stamps the gateway's id, `created` and `model` and completes what
    /// the schema requires; `Err` when the body is not a completion.
    pub fn stamp(&mut self, stamp: Stamp) -> Result<(), &'static str> {
        match self {
            Self::Value(v) => wire::completion(v, &stamp),
            Self::Raw(r) => {
                r.stamp(stamp);
                Ok(())
            }
        }
    }

    /// The answer carries some content, a refusal or a tool call.
    pub fn has_answer(&self) -> bool {
        match self {
            Self::Value(v) => wire::completion_has_answer(v),
            Self::Raw(r) => r.has_answer(),
        }
    }

    /// The counts of its `usage`, when it has one.
    pub fn tokens(&self) -> Option<Tokens> {
        match self {
            Self::Value(v) => v.get("usage").map(Tokens::of),
            Self::Raw(r) => r.tokens(),
        }
    }

    /// `usage.completion_tokens`; without usage, [`estimate_tokens`] over
    /// the choices' text.
    pub fn completion_tokens(&self) -> u64 {
        match self {
            Self::Value(v) => completion_tokens(v),
            Self::Raw(r) => r.completion_tokens(),
        }
    }

    /// The answer as a tree (for checks that need one; stamped if it was).
    pub fn into_value(self) -> Result<Value, &'static str> {
        match self {
            Self::Value(v) => Ok(v),
            Self::Raw(r) => r.into_value(),
        }
    }

    /// The body the client receives.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Self::Value(v) => serde_json::to_vec(v).unwrap_or_default(),
            Self::Raw(r) => r.to_bytes(),
        }
    }
}

/// [`Completion::completion_tokens`] of a tree.
fn completion_tokens(v: &Value) -> u64 {
    if let Some(n) = v.get("usage").and_then(|u| u.get("completion_tokens")).and_then(Value::as_u64) {
        return n;
    }
    let chars: usize = v
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.pointer("/message/content").and_then(Value::as_str))
        .map(|t| t.chars().count())
        .sum();
    estimate_tokens(chars)
}
