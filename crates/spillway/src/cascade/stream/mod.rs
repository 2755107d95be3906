//! Forwarding a stream after its first token: chunk by chunk, never
//! buffered — and, when it breaks, continued on the next model.
//!
//! Each upstream chunk is stamped (stable id, `model` = the model ref that
//! started the answer) and written as soon as it arrives; every event one
//! upstream read brought goes out in one frame ([`frame`]). The forwarder
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
//!
//! The state and its settlement are in [`state`]; the framing of events in
//! [`frame`].

mod frame;
mod state;
#[cfg(test)]
mod tests;

pub use frame::error_event;
pub use state::Meter;

use super::continuation::Continuation;
use super::settle::{Finish, Ticket};
use crate::api::wire::Stamp;
use crate::client_link::ClientLink;
use crate::providers::{ChunkStream, StreamItem};
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use state::State;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::time::{Duration, Instant};

/// A stream ready to forward; the handler may attach a [`Meter`] and a
/// [`Continuation`] first.
pub struct Forward {
    /// Boxed once, where it is made: the frames' unfold takes the box as
    /// it is (moved by value, the state was copied whole twice more).
    state: Box<State>,
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
        let mut state = Box::new(State::new(head.into(), rest, stamp, idle, deadline, include_usage));
        state.journal = ticket.journal().cloned();
        state.prompt_tokens = prompt_tokens;
        state.ticket = Some(ticket);
        state.finish = Some(finish);
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

    /// The client's SSE bytes, a frame per upstream read.
    pub fn into_stream(self) -> BoxStream<'static, Result<Bytes, Infallible>> {
        // Boxed: the unfold moves its state into each frame's future.
        futures_util::stream::unfold(self.state, |mut st| async move {
            if st.done {
                return None;
            }
            // hyper's connection writes a response's chunks out when the
            // body has nothing ready: after a frame cut short (events still
            // ready behind it), one turn lets it send the frame now — the
            // first byte does not wait for the backlog to be gathered.
            if std::mem::take(&mut st.cut_short) {
                tokio::task::yield_now().await;
            }
            let bytes = frame::next_frame(&mut st).await;
            Some((Ok(bytes), st))
        })
        .boxed()
    }
}
