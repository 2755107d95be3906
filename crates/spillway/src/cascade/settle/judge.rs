//! Quality judging on a ticket: what the judge is told of a request
//! ([`Asked`]), the signals noted while the answer is checked, the text
//! judge at its end, and the model's quality window fed once it settles.

use super::Ticket;
use crate::quality::text::PromptFacts;
use crate::quality::Signals;
use std::sync::Arc;

/// What the quality judge is told of a request (`Ticket::judge_for`).
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// The request's id: its answer can be rated (`POST /v1/feedback`).
    pub request_id: Option<crate::telemetry::RequestId>,
    /// What the judge needs of the prompt.
    pub prompt: PromptFacts,
    /// The content must be JSON (not judged for its script).
    pub json: bool,
    /// The tools' schemas, for a stream whose tool calls are forwarded
    /// unchecked: judged at its end.
    pub tools: Option<Arc<std::collections::HashMap<String, crate::normalize::Expected>>>,
    /// The request's shape: a refusal counts only where the cascade
    /// usually answers it (`health::refusals`).
    pub shape: crate::quality::shape::Shape,
    /// Who made the request: the only caller that may rate its answer.
    pub owner: crate::health::feedback::Owner,
}

/// What a ticket knows for the quality judge (`cascades.*.quality`).
#[derive(Debug, Clone)]
pub(super) struct Judging {
    pub(super) asked: Asked,
    pub(super) signals: Signals,
}

impl Ticket {
    /// Judges this attempt's answer for quality when its cascade asks for
    /// it; `asked` is called only then.
    pub fn judge_for(&mut self, asked: impl FnOnce() -> Asked) {
        if self.target().quality.is_some() {
            self.judging = Some(Judging { asked: asked(), signals: Signals::NONE });
        }
    }

    /// Whether the answer's streamed tool calls are to be judged (the
    /// request offered tools and the stream forwards them unchecked).
    pub fn judges_calls(&self) -> bool {
        self.judging.as_ref().is_some_and(|j| j.asked.tools.is_some())
    }

    /// Judges a stream's tool calls (name, arguments) at its end.
    pub fn judge_calls(&mut self, calls: &[(String, String)]) {
        let Some(j) = self.judging.as_mut() else { return };
        if let Some(tools) = &j.asked.tools {
            j.signals.extend(crate::cascade::json::judge_streamed_calls(calls, tools));
        }
    }

    /// Whether the answer is being judged for quality.
    pub fn judging(&self) -> bool {
        self.judging.is_some()
    }

    /// Notes quality signals found while the answer was checked.
    pub fn note(&mut self, signals: Signals) {
        if let Some(j) = self.judging.as_mut() {
            j.signals.extend(signals);
        }
    }

    /// Runs the text judge over the answer's final text (once, at its
    /// end); returns every signal noted so far.
    pub fn judge_text(&mut self, content: &str, tool_called: bool, refusal: bool) -> Signals {
        let (Some(rule), Some(shape)) = (self.target().quality, self.judging.as_ref().map(|j| j.asked.shape)) else {
            return Signals::NONE;
        };
        let text = rule.text;
        // Every judged answer adds to its shape's base rate; a refusal is
        // a signal only where the shape was usually answered before it.
        let refusal = self.health.refusals.record(&self.plan.name, shape, refusal, rule.window);
        let Some(j) = self.judging.as_mut() else { return Signals::NONE };
        let answer = crate::quality::text::Answer { content, tool_called, refusal, json: j.asked.json };
        j.signals.extend(crate::quality::text::judge(&answer, j.asked.prompt, text));
        j.signals
    }

    /// Judges a whole answer; returns its signals (see [`Self::judge_text`]).
    pub fn judge_completion(&mut self, c: &crate::api::completion::Completion) -> Signals {
        if self.judging.is_none() {
            return Signals::NONE;
        }
        let first = c.first_choice();
        self.judge_text(&first.content, first.tool_called, first.refusal)
    }

    /// Counts the answer's signals and feeds the model's quality window.
    pub(super) fn record_quality(&self) {
        let target = &self.plan.targets[self.index];
        let (Some(j), Some(rule)) = (self.judging.as_ref(), target.quality.as_ref()) else { return };
        target.metrics.quality(j.signals);
        target.health.record_quality(j.signals, rule, &self.health.events);
        if let Some(id) = &j.asked.request_id {
            let judged = crate::health::registry::Judged {
                model: target.health.clone(),
                rule: *rule,
                metrics: target.metrics.clone(),
                owner: j.asked.owner.clone(),
            };
            self.health.recent.keep(id.shared(), judged);
        }
    }
}
