//! Forwarding a stream after its first token: chunk by chunk, never
//! buffered.
//!
//! Each upstream chunk is stamped (stable id, `model` = the model ref) and
//! written as soon as it arrives. The forwarder owns the attempt's
//! [`Ticket`] and the request's [`Finish`], and settles both where the
//! stream ends: a clean end (`[DONE]`, or the upstream's finish reason
//! when it leaves `[DONE]` out) is an answered attempt and an `ok`
//! request; a failure — an upstream error, a cut stream, silence longer
//! than `timeouts.idle` — ends the stream with an OpenAI-style error event,
//! fails the attempt (breaker, metrics) and makes the request an `error`.
//! `timeouts.total` bounds the whole stream: past it the stream ends with
//! the timeout error event.
//! When the client disconnects, hyper drops this stream, which drops the
//! upstream response (cancelling the upstream request), abandons the
//! ticket (not counted against the model) and records a disconnect.

use super::settle::{Finish, RequestOutcome, Ticket};
use crate::api::completion::Tokens;
use crate::api::sse;
use crate::api::wire::{self, Stamp};
use crate::outcome::{AttemptError, Failure};
use crate::providers::{ChunkStream, StreamItem};
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use std::collections::VecDeque;
use std::convert::Infallible;
use tokio::time::{timeout_at, Duration, Instant};

/// Told the stream's token counts once: from its usage chunk when one
/// passes, else an estimate when the stream ends (so cost and budgets see
/// streamed answers whose client did not ask for usage).
pub type Meter = Box<dyn FnOnce(Tokens) + Send>;

/// A stream ready to forward; the handler may attach a [`Meter`] first.
pub struct Forward {
    state: State,
}

struct State {
    head: VecDeque<StreamItem>,
    rest: ChunkStream,
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
    prompt_tokens: u64,
    /// Characters of content and tool-call arguments forwarded so far.
    out_chars: usize,
}

impl State {
    /// Settles the attempt and the request: answered, or failed with `e`.
    fn end(&mut self, failed: Option<&AttemptError>) {
        self.done = true;
        if let Some(ticket) = self.ticket.take() {
            match failed {
                None => ticket.answered(),
                Some(e) => {
                    tracing::warn!(model = %ticket.target().name, reason = %e, "Stream failed after its first byte.");
                    ticket.failed(e);
                }
            }
        }
        if let Some(finish) = self.finish.take() {
            finish.settle(if failed.is_some() { RequestOutcome::Error } else { RequestOutcome::Ok });
        }
        self.meter_estimate();
    }

    fn meter_estimate(&mut self) {
        if let Some(meter) = self.meter.take() {
            meter(Tokens { input: self.prompt_tokens, output: crate::api::tokens::estimate_tokens(self.out_chars) });
        }
    }
}

impl Drop for State {
    fn drop(&mut self) {
        // Unsettled here means the client went away: the ticket and the
        // finish record an abandoned attempt and a disconnect as they drop.
        self.meter_estimate();
    }
}

/// Characters of content and tool-call arguments in a chunk's deltas.
fn delta_chars(v: &serde_json::Value) -> usize {
    let Some(choices) = v.get("choices").and_then(serde_json::Value::as_array) else { return 0 };
    let text = |x: Option<&serde_json::Value>| x.and_then(serde_json::Value::as_str).map_or(0, |t| t.chars().count());
    choices
        .iter()
        .filter_map(|c| c.get("delta"))
        .map(|d| {
            let calls = d.get("tool_calls").and_then(serde_json::Value::as_array).map_or(0, |calls| {
                calls.iter().map(|c| text(c.get("function").and_then(|f| f.get("arguments")))).sum()
            });
            text(d.get("content")) + calls
        })
        .sum()
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
        let state = State {
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
            prompt_tokens,
            out_chars: 0,
        };
        Self { state }
    }

    /// Counts the stream's tokens with `meter` (see [`Meter`]).
    pub fn meter(&mut self, meter: Meter) {
        self.state.meter = Some(meter);
    }

    /// The client's SSE bytes.
    pub fn into_stream(self) -> BoxStream<'static, Result<Bytes, Infallible>> {
        futures_util::stream::unfold(self.state, |mut st| async move {
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
        let next = match st.head.pop_front() {
            Some(item) => Some(Ok(item)),
            None => match timeout_at(st.deadline.min(Instant::now() + st.idle), st.rest.next()).await {
                Ok(item) => item,
                Err(_) if Instant::now() >= st.deadline => {
                    Some(Err(AttemptError::new(Failure::Timeout, "the stream ran past timeouts.total")))
                }
                Err(_) => {
                    Some(Err(AttemptError::new(Failure::Timeout, "the stream stalled longer than timeouts.idle")))
                }
            },
        };
        match next {
            Some(Ok(StreamItem::Chunk(mut v))) => {
                st.out_chars += delta_chars(&v);
                if let Some(usage) = v.get("usage").filter(|u| u.is_object()) {
                    if let Some(meter) = st.meter.take() {
                        meter(Tokens::of(usage));
                    }
                }
                if !st.include_usage && wire::is_usage_chunk(&v) {
                    continue;
                }
                st.saw_finish |= wire::chunk_finishes(&v);
                wire::chunk(&mut v, &st.stamp);
                return sse::encode_json(&v);
            }
            Some(Ok(StreamItem::Raw(r))) => {
                st.out_chars += r.content_chars();
                if let Some(tokens) = r.tokens() {
                    if let Some(meter) = st.meter.take() {
                        meter(tokens);
                    }
                }
                if !st.include_usage && r.is_usage_chunk() {
                    continue;
                }
                st.saw_finish |= r.finishes();
                return r.encode(&st.stamp);
            }
            Some(Ok(StreamItem::Done)) => {
                st.end(None);
                return sse::done();
            }
            // The upstream finished its choice but left out [DONE].
            None if st.saw_finish => {
                st.end(None);
                return sse::done();
            }
            None => {
                let e = AttemptError::new(Failure::BrokenBody, "the stream ended without a finish signal");
                st.end(Some(&e));
                return error_event(&e);
            }
            Some(Err(e)) => {
                st.end(Some(&e));
                return error_event(&e);
            }
        }
    }
}
