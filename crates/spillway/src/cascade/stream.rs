//! Forwarding a stream after its first token: chunk by chunk, never
//! buffered — and, when it breaks, continued on the next model.
//!
//! Each upstream chunk is stamped (stable id, `model` = the model ref that
//! started the answer) and written as soon as it arrives. The forwarder
//! owns the attempt's [`Ticket`] and the request's [`Finish`], and settles
//! both where the stream ends: a clean end (`[DONE]`, or the upstream's
//! finish reason when it leaves `[DONE]` out) is an answered attempt and an
//! `ok` request.
//!
//! A failure after the first byte — an upstream error, a cut stream,
//! silence longer than `timeouts.idle`, an end without a finish reason —
//! fails the attempt (breaker, metrics). Then, when the cascade lets it
//! (`continue_streams`, on by default) and the answer so far is plain text
//! of one choice, the next model that can continue is sent the request plus
//! the partial answer ([`super::continuation`]) and the client's stream goes
//! on from its first token: no repeated text (what an instructed
//! continuation repeats of the partial answer — its end, or all of it again
//! from its first word or a sentence's start — is dropped: [`Seam`]), no
//! missing text, the final chunk naming
//! every model that answered (`spillway.models`) and its usage the sum of
//! every attempt's. When no model can continue, the stream ends with the
//! error event of the original failure and the request is an `error`.
//! `timeouts.total` bounds the whole stream, continuations included.
//!
//! When the client disconnects, hyper drops this stream, which drops the
//! upstream response (cancelling the upstream request), abandons the
//! ticket (not counted against the model) and records a disconnect. A
//! client that stops reading is cut off by the server (`server::client_io`,
//! at `timeouts.total` or `server.client_write_timeout`, since a full
//! socket stops hyper from polling this stream): the same drop, but the
//! request is settled as an error ([`Forward::bind`]).
//!
//! What healthy streams pay for being continuable: the text of choice 0 is
//! appended to one string as it passes.

use super::continuation::{Continuation, Mode};
use super::gap::Gap;
use super::plan::Target;
use super::seam::Seam;
use super::settle::{Finish, RequestOutcome, Ticket};
use super::whole::FINISH_GRACE;
use crate::api::completion::Tokens;
use crate::api::sse;
use crate::api::wire::{self, Stamp};
use crate::client_link::ClientLink;
use crate::outcome::{AttemptError, Failure};
use crate::providers::{ChunkStream, StreamItem};
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::convert::Infallible;
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

/// A stream ready to forward; the handler may attach a [`Meter`] and a
/// [`Continuation`] first.
pub struct Forward {
    state: State,
}

struct State {
    head: VecDeque<StreamItem>,
    rest: ChunkStream,
    /// The timer of the gaps between `rest`'s items.
    gap: Gap,
    stamp: Stamp,
    idle: Duration,
    /// `timeouts.total` from the request's start: it bounds the whole
    /// stream, not only its first token (a trickle under `idle` ends too).
    deadline: Instant,
    include_usage: bool,
    saw_finish: bool,
    done: bool,
    ticket: Option<Ticket>,
    finish: Option<Finish>,
    meter: Option<Meter>,
    /// This attempt's usage has been metered (from its usage chunk).
    metered: bool,
    prompt_tokens: u64,
    /// Characters of content and tool-call arguments this attempt sent.
    out_chars: usize,
    /// What the client has of the answer: choice 0's text so far.
    partial: String,
    /// The answer can still be continued (one choice, text only, not too long).
    continuable: bool,
    /// It called a tool, or declared a refusal (for the quality judge).
    tool_called: bool,
    refused: bool,
    continuation: Option<Continuation>,
    /// Continued at least once: chunks take the general path from then on.
    continued: Option<Continued>,
    /// The client connection the stream is written to: it holds the
    /// deadline while the client's socket is full, and says whether the
    /// server cut the client off.
    link: Option<Arc<ClientLink>>,
    /// The request's journal: finish reasons and (when recorded) the text.
    journal: Option<Arc<crate::journal::Journal>>,
}

/// What a continued stream keeps.
struct Continued {
    /// Every model that answered part of it, in order.
    models: Vec<String>,
    /// Usage of the attempts before the current one (estimates: a broken
    /// attempt sends no usage).
    before: Tokens,
    /// An instructed continuation's first text, held (a bounded amount)
    /// or dropped until it is clear how much of it repeats the partial
    /// answer ([`Seam`]).
    seam: Option<Seam>,
    /// Whitespace cut off the partial answer for an Anthropic prefill: the
    /// client has it already, so the continuation's first text drops it if
    /// the model sends it again.
    resent_space: Option<String>,
}

impl State {
    /// Settles the attempt and the request: answered, or failed with `e`.
    fn end(&mut self, failed: Option<&AttemptError>) {
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
        let mode = super::continuation::mode_of(ticket.target()).map_or("none", Mode::label);
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

    fn meter_usage(&mut self, tokens: Tokens) {
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
    fn judge(&self, ticket: &mut Ticket) {
        if !ticket.judging() {
            return;
        }
        let whole_text = self.continued.is_none() && (self.continuable || self.tool_called);
        let signals = if whole_text {
            ticket.judge_text(&self.partial, self.tool_called, self.refused)
        } else {
            ticket.judge_text("", true, self.refused)
        };
        if !signals.is_empty() {
            tracing::info!(model = %ticket.target().name, quality = %signals.labels(), "The streamed answer counted as bad for its quality.");
        }
    }

    /// Keeps choice 0's text for a continuation.
    fn keep(&mut self, text: &str, other_choice: bool, tool_call: bool) {
        self.tool_called |= tool_call;
        if other_choice || tool_call || self.partial.len() + text.len() > MAX_PARTIAL {
            self.continuable = false;
        }
        if self.continuable {
            self.partial.push_str(text);
        }
    }

    /// After `e` broke the stream: the next model that continues it, if the
    /// answer can be continued and one can. The broken attempt is settled.
    async fn try_continue(&mut self, e: &AttemptError) -> bool {
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
        let Some(resumed) = cont.resume(index + 1, &self.partial).await else {
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
            .then(|| self.partial[self.partial.trim_end().len()..].to_string())
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
    fn quiet(&self) -> Duration {
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

/// Characters of content and tool-call arguments in a chunk's deltas, and
/// whether it has a tool call or a choice other than 0.
fn delta_facts(v: &Value) -> (usize, bool, bool) {
    let Some(choices) = v.get("choices").and_then(Value::as_array) else { return (0, false, false) };
    let text = |x: Option<&Value>| x.and_then(Value::as_str).map_or(0, |t| t.chars().count());
    let (mut chars, mut tool, mut other) = (0, false, false);
    for c in choices {
        other |= c.get("index").and_then(Value::as_u64).is_some_and(|i| i != 0);
        let Some(d) = c.get("delta") else { continue };
        if let Some(calls) = d.get("tool_calls").and_then(Value::as_array) {
            tool |= !calls.is_empty();
            chars += calls.iter().map(|c| text(c.get("function").and_then(|f| f.get("arguments")))).sum::<usize>();
        }
        chars += text(d.get("content"));
    }
    (chars, tool, other)
}

/// A chunk that refuses: a `refusal` delta or a `content_filter` finish.
fn refuses(v: &Value) -> bool {
    v.pointer("/choices/0/delta/refusal").and_then(Value::as_str).is_some_and(|r| !r.is_empty())
        || v.pointer("/choices/0/finish_reason").and_then(Value::as_str) == Some("content_filter")
}

fn content_of(v: &Value) -> &str {
    v.pointer("/choices/0/delta/content").and_then(Value::as_str).unwrap_or_default()
}

/// Encodes an error event for a stream that failed after its first byte.
pub fn error_event(e: &AttemptError) -> Bytes {
    let body = serde_json::json!({"error": {
        "message": format!("the upstream failed mid-stream: {e}"),
        "type": "upstream_error",
        "code": e.failure.reason(),
        "param": null,
    }});
    sse::encode_json(&body)
}

impl Forward {
    /// A peeked upstream stream (`head` holds what was read up to the first
    /// token) with the attempt's ticket and the request's finish.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        head: Vec<StreamItem>,
        rest: ChunkStream,
        stamp: Stamp,
        idle: Duration,
        deadline: Instant,
        include_usage: bool,
        prompt_tokens: u64,
        ticket: Ticket,
        finish: Finish,
    ) -> Self {
        let journal = ticket.journal().cloned();
        let state = State {
            journal,
            head: head.into(),
            rest,
            stamp,
            idle,
            deadline,
            include_usage,
            saw_finish: false,
            done: false,
            ticket: Some(ticket),
            finish: Some(finish),
            meter: None,
            metered: false,
            prompt_tokens,
            out_chars: 0,
            partial: String::new(),
            continuable: true,
            tool_called: false,
            refused: false,
            continuation: None,
            continued: None,
            gap: Gap::new(),
            link: None,
        };
        Self { state }
    }

    /// Counts the stream's tokens with `meter` (see [`Meter`]).
    pub fn meter(&mut self, meter: Meter) {
        self.state.meter = Some(meter);
    }

    /// Writes the stream to the client connection `link`: its deadline
    /// holds while the client's socket is full ([`ClientLink`]).
    pub fn bind(&mut self, link: Arc<ClientLink>) {
        link.bound(self.state.deadline);
        self.state.link = Some(link);
    }

    /// Lets the stream continue on the next model of `plan` when it breaks
    /// (`req` is the request it answers; the deadline stays the request's).
    pub fn continue_with(
        &mut self,
        ctx: super::context::Owned,
        plan: std::sync::Arc<super::plan::CascadePlan>,
        req: crate::api::ChatRequest,
    ) {
        let deadline = self.state.deadline;
        self.state.continuation = Some(Continuation { ctx, plan, req, deadline });
    }

    /// The client's SSE bytes.
    pub fn into_stream(self) -> BoxStream<'static, Result<Bytes, Infallible>> {
        // Boxed: the unfold moves its state into each item's future.
        futures_util::stream::unfold(Box::new(self.state), |mut st| async move {
            if st.done {
                return None;
            }
            let bytes = next_event(&mut st).await;
            Some((Ok(bytes), st))
        })
        .boxed()
    }
}

/// The next bytes for the client; settles the stream when it ends.
async fn next_event(st: &mut State) -> Bytes {
    loop {
        let (deadline, quiet) = (st.deadline, st.quiet());
        let next = match st.head.pop_front() {
            Some(item) => Some(Ok(item)),
            None => match st.gap.next(&mut st.rest, || deadline.min(Instant::now() + quiet)).await {
                Ok(item) => item,
                // Finished but no [DONE]: the answer is complete.
                Err(_) if st.saw_finish => None,
                Err(_) if Instant::now() >= st.deadline => {
                    Some(Err(AttemptError::new(Failure::Timeout, "the stream ran past timeouts.total")))
                }
                Err(_) => {
                    Some(Err(AttemptError::new(Failure::Timeout, "the stream stalled longer than timeouts.idle")))
                }
            },
        };
        let failure = match next {
            // A continued stream's chunks take the general path: they are
            // re-stamped, stripped of a second role, seamed and summed.
            Some(Ok(StreamItem::Raw(r))) if st.continued.is_some() => {
                if let Some(bytes) = chunk_event(st, r.into_value()) {
                    return bytes;
                }
                continue;
            }
            Some(Ok(StreamItem::Chunk(v))) => {
                if let Some(bytes) = chunk_event(st, v) {
                    return bytes;
                }
                continue;
            }
            Some(Ok(StreamItem::Raw(r))) => {
                st.out_chars += r.content_chars();
                st.refused |= r.has_refusal() || r.finish_reason() == Some("content_filter");
                st.keep(r.content(), r.other_choice(), false);
                if let Some(j) = &st.journal {
                    j.answer(r.content());
                    if let Some(reason) = r.finish_reason() {
                        j.finish_reason(reason);
                    }
                }
                if let Some(tokens) = r.tokens() {
                    st.meter_usage(tokens);
                }
                if !st.include_usage && r.is_usage_chunk() {
                    continue;
                }
                st.saw_finish |= r.finishes();
                return r.encode(&st.stamp);
            }
            Some(Ok(StreamItem::Done)) => {
                if let Some(bytes) = flush_seam(st) {
                    st.head.push_front(StreamItem::Done);
                    return bytes;
                }
                st.end(None);
                return sse::done();
            }
            // The upstream finished its choice but left out [DONE] (it
            // closed the body, kept it open in silence, or broke it).
            None if st.saw_finish => {
                st.end(None);
                return sse::done();
            }
            Some(Err(e)) if st.saw_finish => {
                tracing::debug!(reason = %e, "The stream broke after its finish reason; the answer is complete.");
                st.end(None);
                return sse::done();
            }
            Some(Ok(StreamItem::Skipped)) => continue,
            None => AttemptError::new(Failure::BrokenBody, "the stream ended without a finish signal"),
            Some(Err(e)) => e,
        };
        if st.try_continue(&failure).await {
            continue;
        }
        st.end(Some(&failure));
        return error_event(&failure);
    }
}

/// A chunk on the general path; `None` when nothing of it goes out.
fn chunk_event(st: &mut State, mut v: Value) -> Option<Bytes> {
    let (chars, tool, other) = delta_facts(&v);
    st.out_chars += chars;
    if let Some(usage) = v.get("usage").filter(|u| u.is_object()) {
        st.meter_usage(Tokens::of(usage));
    }
    if let Some(c) = st.continued.as_mut() {
        continued_chunk(c, &st.partial, &mut v);
    }
    let sent = content_of(&v).to_string();
    st.refused |= refuses(&v);
    st.keep(&sent, other, tool);
    if let Some(j) = &st.journal {
        j.answer(&sent);
        if let Some(reason) = v.pointer("/choices/0/finish_reason").and_then(Value::as_str) {
            j.finish_reason(reason);
        }
    }
    if !st.include_usage && wire::is_usage_chunk(&v) {
        return None;
    }
    if st.continued.is_some() && is_empty_chunk(&v) {
        return None;
    }
    st.saw_finish |= wire::chunk_finishes(&v);
    wire::chunk(&mut v, &st.stamp);
    Some(sse::encode_json(&v))
}

/// A continued answer's chunk: no second `role`, the seam held and cut,
/// usage summed with the attempts before, the models named at the end.
fn continued_chunk(c: &mut Continued, partial: &str, v: &mut Value) {
    if let Some(delta) = v.pointer_mut("/choices/0/delta").and_then(Value::as_object_mut) {
        delta.remove("role");
        if let Some(Value::String(text)) =
            delta.get_mut("content").filter(|t| t.as_str().is_some_and(|t| !t.is_empty()))
        {
            if let Some(ws) = c.resent_space.take() {
                if let Some(rest) = text.strip_prefix(ws.as_str()) {
                    *text = rest.to_string();
                }
            }
        }
        if let Some(seam) = c.seam.as_mut() {
            let text = delta.remove("content").and_then(|t| t.as_str().map(str::to_owned)).unwrap_or_default();
            let finishing = v.pointer("/choices/0/finish_reason").is_some_and(|f| !f.is_null());
            let out = seam.feed(partial, &text);
            if let Some(out) = out.or_else(|| finishing.then(|| seam.finish(partial))) {
                c.seam = None;
                if let Some(delta) = v.pointer_mut("/choices/0/delta").and_then(Value::as_object_mut) {
                    delta.insert("content".into(), Value::String(out));
                }
            }
        }
    }
    if let Some(usage) = v.get_mut("usage").and_then(Value::as_object_mut) {
        let add = |u: &mut serde_json::Map<String, Value>, k: &str, n: u64| {
            let now = u.get(k).and_then(Value::as_u64).unwrap_or(0);
            u.insert(k.into(), json!(now + n));
        };
        add(usage, "prompt_tokens", c.before.input);
        add(usage, "completion_tokens", c.before.output);
        let total = usage.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0)
            + usage.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0);
        usage.insert("total_tokens".into(), json!(total));
    }
    if wire::chunk_finishes(v) || wire::is_usage_chunk(v) {
        if let Some(obj) = v.as_object_mut() {
            obj.insert("spillway".into(), json!({"models": c.models, "continued": true}));
        }
    }
}

/// The seam's held text at the end of a stream, as a last content chunk.
fn flush_seam(st: &mut State) -> Option<Bytes> {
    let c = st.continued.as_mut()?;
    let text = c.seam.take()?.finish(&st.partial);
    if text.is_empty() {
        return None;
    }
    st.partial.push_str(&text);
    let mut v = json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    wire::chunk(&mut v, &st.stamp);
    Some(sse::encode_json(&v))
}

/// A chunk with nothing left for the client (a continuation's role chunk,
/// a delta whose text is held at the seam).
fn is_empty_chunk(v: &Value) -> bool {
    let Some(choices) = v.get("choices").and_then(Value::as_array) else { return false };
    v.get("usage").is_none_or(Value::is_null)
        && !choices.is_empty()
        && choices.iter().all(|c| {
            c.get("finish_reason").is_none_or(Value::is_null)
                && c.get("delta")
                    .and_then(Value::as_object)
                    .is_none_or(|d| d.iter().all(|(_, x)| x.is_null() || x.as_str() == Some("")))
        })
}
