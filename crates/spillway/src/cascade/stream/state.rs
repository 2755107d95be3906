//! A forwarded stream's state and its settlement: the attempt's ticket,
//! the request's finish, the meter, what is kept for a continuation, and
//! the continuation itself when the stream breaks.

use super::super::continuation::{Continuation, Mode};
use super::super::gap::Gap;
use super::super::plan::Target;
use super::super::seam::Seam;
use super::super::settle::{Finish, RequestOutcome, Ticket};
use super::super::whole::FINISH_GRACE;
use crate::api::completion::Tokens;
use crate::api::wire::Stamp;
use crate::client_link::ClientLink;
use crate::outcome::AttemptError;
use crate::providers::{ChunkStream, StreamItem};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::time::{Duration, Instant};

/// Told each attempt's token counts once: from its usage chunk when one
/// passes, else an estimate when the attempt ends (so cost and budgets see
/// streamed answers whose client did not ask for usage, and every model
/// of a continued answer is billed for its part).
pub type Meter = Box<dyn FnMut(&Target, Tokens) + Send>;

/// The partial answer is kept for a continuation up to this size; a longer
/// answer that breaks ends with the error event.
const MAX_PARTIAL: usize = 1 << 20;

pub(super) struct State {
    pub(super) head: VecDeque<StreamItem>,
    pub(super) rest: ChunkStream,
    /// The timer of the gaps between `rest`'s items.
    pub(super) gap: Gap,
    pub(super) stamp: Stamp,
    pub(super) idle: Duration,
    /// `timeouts.total` from the request's start: it bounds the whole
    /// stream, not only its first token (a trickle under `idle` ends too).
    pub(super) deadline: Instant,
    pub(super) include_usage: bool,
    pub(super) saw_finish: bool,
    pub(super) done: bool,
    pub(super) ticket: Option<Ticket>,
    pub(super) finish: Option<Finish>,
    pub(super) meter: Option<Meter>,
    /// This attempt's usage has been metered (from its usage chunk).
    pub(super) metered: bool,
    pub(super) prompt_tokens: u64,
    /// Characters of content and tool-call arguments this attempt sent.
    pub(super) out_chars: usize,
    /// What the client has of the answer: choice 0's text so far.
    pub(super) partial: crate::api::completion::TextBuf,
    /// The answer can still be continued (one choice, text only, not too long).
    pub(super) continuable: bool,
    /// It called a tool, or declared a refusal (for the quality judge).
    pub(super) tool_called: bool,
    /// Choice 0's tool calls (name, arguments) by index, kept only when
    /// the judge checks them at the end ([`Ticket::judges_calls`]);
    /// bounded like the partial answer.
    pub(super) calls: Vec<(String, String)>,
    pub(super) refused: bool,
    pub(super) continuation: Option<Continuation>,
    /// Continued at least once: chunks take the general path from then on.
    pub(super) continued: Option<Continued>,
    /// The client connection the stream is written to: it holds the
    /// deadline while the client's socket is full, and says whether the
    /// server cut the client off.
    pub(super) link: Option<Arc<ClientLink>>,
    /// The request's journal: finish reasons and (when recorded) the text.
    pub(super) journal: Option<Arc<crate::journal::Journal>>,
    /// What every checked chunk's event starts with: `data: ` and the
    /// stamp (`frame`), made at the first such chunk.
    pub(super) prefix: Option<Vec<u8>>,
    /// The attempt failed after some events of the last frame: handled
    /// first thing in the next one (continued or ended).
    pub(super) broke: Option<AttemptError>,
    /// The last frame stopped with events maybe still ready (its bound
    /// reached: [`super::frame::FIRST_FRAME`], [`super::frame::MAX_FRAME`]): the client's writer
    /// gets a turn to send it before the next is gathered.
    pub(super) cut_short: bool,
    /// The last frame's length: the next frame's buffer starts that large
    /// (no string of doublings per frame); 0 before the first.
    pub(super) frame_len: usize,
}

/// What a continued stream keeps.
pub(super) struct Continued {
    /// Every model that answered part of it, in order.
    pub(super) models: Vec<String>,
    /// Usage of the attempts before the current one (estimates: a broken
    /// attempt sends no usage).
    pub(super) before: Tokens,
    /// An instructed continuation's first text, held (a bounded amount)
    /// or dropped until it is clear how much of it repeats the partial
    /// answer ([`Seam`]).
    pub(super) seam: Option<Seam>,
    /// Whitespace cut off the partial answer for an Anthropic prefill: the
    /// client has it already, so the continuation's first text drops it if
    /// the model sends it again.
    pub(super) resent_space: Option<String>,
}

impl State {
    /// A stream that has forwarded nothing yet: `head` (read up to the first
    /// token) then `rest`; no ticket, finish, meter, journal or
    /// continuation until the caller attaches them.
    pub(super) fn new(
        head: VecDeque<StreamItem>,
        rest: ChunkStream,
        stamp: Stamp,
        idle: Duration,
        deadline: Instant,
        include_usage: bool,
    ) -> Self {
        Self {
            head,
            rest,
            gap: Gap::new(),
            stamp,
            idle,
            deadline,
            include_usage,
            saw_finish: false,
            done: false,
            ticket: None,
            finish: None,
            meter: None,
            metered: false,
            prompt_tokens: 0,
            out_chars: 0,
            partial: Default::default(),
            continuable: true,
            tool_called: false,
            calls: Vec::new(),
            refused: false,
            journal: None,
            continuation: None,
            continued: None,
            link: None,
            prefix: None,
            broke: None,
            cut_short: false,
            frame_len: 0,
        }
    }

    /// Settles the attempt and the request: answered, or failed with `e`.
    pub(super) fn end(&mut self, failed: Option<&AttemptError>) {
        self.done = true;
        if let Some(ticket) = self.ticket.take() {
            if failed.is_none() && self.continued.is_some() {
                self.count_continuation(&ticket, "ok");
            }
            self.meter_estimate(ticket.target());
            match failed {
                None => {
                    let mut ticket = ticket;
                    self.judge(&mut ticket);
                    ticket.answered();
                }
                Some(e) => {
                    tracing::warn!(model = %ticket.target().name, reason = %e, "Stream failed after its first byte.");
                    ticket.failed(e);
                }
            }
        }
        if let Some(finish) = self.finish.take() {
            finish.settle(if failed.is_some() { RequestOutcome::Error } else { RequestOutcome::Ok });
        }
    }

    fn count_continuation(&self, ticket: &Ticket, result: &'static str) {
        let (Some(cont), Some(c)) = (&self.continuation, &self.continued) else { return };
        let n = c.models.len();
        let from = n.checked_sub(2).and_then(|i| c.models.get(i)).map_or("-", String::as_str);
        let mode = super::super::continuation::mode_of(ticket.target()).map_or("none", Mode::label);
        cont.ctx.metrics.continued(&cont.plan.name, from, &ticket.target().name, mode, result);
    }

    /// An estimate of this attempt's tokens, unless its usage chunk came.
    fn meter_estimate(&mut self, target: &Target) {
        if std::mem::replace(&mut self.metered, true) {
            return;
        }
        let tokens = Tokens { input: self.prompt_tokens, output: crate::api::tokens::estimate_tokens(self.out_chars) };
        if let Some(meter) = self.meter.as_mut() {
            meter(target, tokens);
        }
    }

    pub(super) fn meter_usage(&mut self, tokens: Tokens) {
        if std::mem::replace(&mut self.metered, true) {
            return;
        }
        if let (Some(meter), Some(ticket)) = (self.meter.as_mut(), self.ticket.as_ref()) {
            meter(ticket.target(), tokens);
        }
    }

    /// Runs the quality judge over the stream's text at its end, once,
    /// when its cascade judges quality: choice 0's text as the client got
    /// it. A continued answer (the broken model counted `continued`), or
    /// one too long or of several choices to keep, is not judged by text.
    fn judge(&mut self, ticket: &mut Ticket) {
        if !ticket.judging() {
            return;
        }
        if self.tool_called {
            ticket.judge_calls(&self.calls);
        }
        let whole_text = self.continued.is_none() && (self.continuable || self.tool_called);
        let signals = if whole_text {
            ticket.judge_text(self.partial.as_str(), self.tool_called, self.refused)
        } else {
            ticket.judge_text("", true, self.refused)
        };
        if !signals.is_empty() {
            tracing::info!(model = %ticket.target().name, quality = %signals.labels(), "The streamed answer counted as bad for its quality.");
        }
    }

    /// Keeps choice 0's text for a continuation: `text`, UTF-8 (checked
    /// with its chunk, or a `&str`'s bytes).
    pub(super) fn keep(&mut self, text: &[u8], other_choice: bool, tool_call: bool) {
        self.tool_called |= tool_call;
        if other_choice || tool_call || self.partial.len() + text.len() > MAX_PARTIAL {
            self.continuable = false;
        }
        if self.continuable {
            self.partial.push_checked(text);
        }
    }

    /// Keeps choice 0's tool-call deltas of `v` for the judge.
    pub(super) fn keep_calls(&mut self, v: &serde_json::Value) {
        if !self.ticket.as_ref().is_some_and(Ticket::judges_calls) {
            return;
        }
        let Some(calls) = v.pointer("/choices/0/delta/tool_calls").and_then(serde_json::Value::as_array) else {
            return;
        };
        for tc in calls {
            let i = tc.get("index").and_then(serde_json::Value::as_u64).unwrap_or(0).min(64) as usize;
            if self.calls.len() <= i {
                self.calls.resize(i + 1, Default::default());
            }
            let kept: usize = self.calls.iter().map(|(n, a)| n.len() + a.len()).sum();
            let Some(f) = tc.get("function") else { continue };
            let text = |k: &str| f.get(k).and_then(serde_json::Value::as_str).unwrap_or_default();
            if kept + text("name").len() + text("arguments").len() > MAX_PARTIAL {
                continue;
            }
            self.calls[i].0.push_str(text("name"));
            self.calls[i].1.push_str(text("arguments"));
        }
    }

    /// After `e` broke the stream: the next model that continues it, if the
    /// answer can be continued and one can. The broken attempt is settled.
    pub(super) async fn try_continue(&mut self, e: &AttemptError) -> bool {
        if self.continuation.is_none()
            || !self.continuable
            || self.partial.is_empty()
            || Instant::now() >= self.deadline
        {
            return false;
        }
        let Some(ticket) = self.ticket.take() else { return false };
        let (from, index) = (ticket.target().name.clone(), ticket.index());
        tracing::warn!(model = %from, reason = %e, chars = self.partial.len(), "Stream broke mid-answer; continuing on the next model.");
        self.meter_estimate(ticket.target());
        let broken = Tokens { input: self.prompt_tokens, output: crate::api::tokens::estimate_tokens(self.out_chars) };
        if self.continued.is_some() {
            self.count_continuation(&ticket, "failed");
        }
        let mut ticket = ticket;
        ticket.note(crate::quality::Signals::NONE.with(crate::quality::Signal::Continued));
        ticket.failed(e);
        let Some(cont) = self.continuation.as_ref() else { return false };
        let Some(resumed) = cont.resume(index + 1, self.partial.as_str()).await else {
            cont.ctx.metrics.continued(&cont.plan.name, &from, "none", "none", "none");
            tracing::warn!(model = %from, "No model could continue the stream; it ends with the error.");
            return false;
        };
        let to = resumed.ticket.target().name.clone();
        tracing::info!(from = %from, to = %to, mode = resumed.mode.label(), "Stream continued on the next model.");
        let c = self.continued.get_or_insert_with(|| Continued {
            models: vec![from],
            before: Tokens::default(),
            seam: None,
            resent_space: None,
        });
        c.models.push(to);
        c.before.input += broken.input;
        c.before.output += broken.output;
        c.seam = (resumed.mode == Mode::Instruct).then(Seam::default);
        c.resent_space = (resumed.mode == Mode::Prefill(crate::api::continuation::Prefill::Anthropic))
            .then(|| {
                let partial = self.partial.as_str();
                partial[partial.trim_end().len()..].to_string()
            })
            .filter(|ws| !ws.is_empty());
        self.ticket = Some(resumed.ticket);
        self.head = resumed.head.into();
        self.rest = resumed.rest;
        self.metered = false;
        self.out_chars = 0;
        self.saw_finish = false;
        true
    }
}

impl State {
    /// How long the upstream may be silent now: `timeouts.idle`, or after a
    /// finish reason (only a usage chunk and `[DONE]` may follow) at most
    /// [`FINISH_GRACE`].
    pub(super) fn quiet(&self) -> Duration {
        if self.saw_finish {
            self.idle.min(FINISH_GRACE)
        } else {
            self.idle
        }
    }
}

impl Drop for State {
    fn drop(&mut self) {
        // Unsettled here means the client went away: the ticket and the
        // finish record an abandoned attempt and a disconnect as they drop
        // — unless the server cut off a client that stopped reading: then
        // the request is an error (not the model's: the attempt stays
        // abandoned).
        if let Some(ticket) = self.ticket.take() {
            self.meter_estimate(ticket.target());
        }
        let Some(link) = self.link.take() else { return };
        link.unbound();
        if let (Some(cut), Some(finish)) = (link.was_cut(), self.finish.take()) {
            tracing::warn!(reason = cut.label(), "Stream ended: its client stopped reading.");
            finish.settle(RequestOutcome::Error);
        }
    }
}
