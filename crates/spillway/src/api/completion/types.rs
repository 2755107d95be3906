//! [`Completion`]: a whole answer as the runner carries it from the
//! adapter's call to the client — the checked upstream bytes of the fast
//! path, or a tree on the general path — and what the runner asks of it
//! (an answer at all? its usage?) whichever path it took.

use super::raw::RawCompletion;
use crate::api::tokens::{estimate_tokens, Tokens};
use crate::api::wire::{self, Stamp};
use serde_json::Value;
use std::borrow::Cow;

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

    /// What the quality judge reads of choice 0: its content, whether it
    /// called a tool, whether it refused. A checked body is read with a
    /// borrowing parse of the fields it needs (once, at the answer's end).
    pub fn first_choice(&self) -> FirstChoice<'_> {
        match self {
            Self::Value(v) => {
                let choice = v.pointer("/choices/0");
                let message = choice.and_then(|c| c.get("message"));
                let field = |k: &str| message.and_then(|m| m.get(k));
                FirstChoice {
                    content: Cow::Borrowed(field("content").and_then(Value::as_str).unwrap_or_default()),
                    tool_called: field("tool_calls").and_then(Value::as_array).is_some_and(|c| !c.is_empty()),
                    refusal: field("refusal").and_then(Value::as_str).is_some_and(|r| !r.is_empty())
                        || choice.and_then(|c| c.get("finish_reason")).and_then(Value::as_str)
                            == Some("content_filter"),
                }
            }
            Self::Raw(r) => {
                if let Some((content, refusal)) = r.assembled_text() {
                    return FirstChoice { content: Cow::Borrowed(content), tool_called: false, refusal };
                }
                let Ok(lite) = serde_json::from_slice::<lite::Body<'_>>(r.body()) else {
                    return FirstChoice::default();
                };
                let Some(choice) = lite.choices.into_iter().next() else { return FirstChoice::default() };
                let message = choice.message.unwrap_or_default();
                FirstChoice {
                    content: message.content.unwrap_or_default(),
                    tool_called: message.tool_calls.is_some_and(|c| !c.is_empty()),
                    refusal: message.refusal.is_some_and(|r| !r.is_empty())
                        || choice.finish_reason.as_deref() == Some("content_filter"),
                }
            }
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

/// Choice 0 as the quality judge reads it ([`Completion::first_choice`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FirstChoice<'a> {
    /// Its content (empty when it has none).
    pub content: Cow<'a, str>,
    /// It called a tool.
    pub tool_called: bool,
    /// It refused (`refusal`, or a `content_filter` finish).
    pub refusal: bool,
}

/// The fields [`Completion::first_choice`] reads of a checked body; the
/// rest is skipped unparsed.
mod lite {
    use serde::Deserialize;
    use std::borrow::Cow;

    #[derive(Deserialize)]
    pub(super) struct Body<'a> {
        #[serde(borrow, default)]
        pub choices: Vec<Choice<'a>>,
    }

    #[derive(Deserialize)]
    pub(super) struct Choice<'a> {
        #[serde(borrow, default)]
        pub message: Option<Message<'a>>,
        #[serde(borrow, default)]
        pub finish_reason: Option<Cow<'a, str>>,
    }

    #[derive(Deserialize, Default)]
    pub(super) struct Message<'a> {
        #[serde(borrow, default)]
        pub content: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        pub refusal: Option<Cow<'a, str>>,
        #[serde(default)]
        pub tool_calls: Option<Vec<serde::de::IgnoredAny>>,
    }
}
