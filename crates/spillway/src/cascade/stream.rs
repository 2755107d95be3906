//! Forwarding a stream after its first token: chunk by chunk, never
//! buffered.
//!
//! Each upstream chunk is stamped (stable id, `model` = the model ref) and
//! written as soon as it arrives. Past this point fallback is impossible: a
//! failure — an upstream error, a cut stream, silence longer than
//! `timeouts.idle` — ends the stream with an OpenAI-style error event. When
//! the client disconnects, hyper drops this stream, which drops the upstream
//! response and so cancels the upstream request.

use super::{error_event, AttemptError, Failure};
use crate::api::sse;
use crate::api::wire::{self, Stamp};
use crate::metrics::CascadeMetrics;
use crate::providers::{ChunkStream, InFlight, StreamItem};
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use serde_json::Value;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::time::{timeout, Duration, Instant};

/// Held for the life of a forwarded stream; records its end.
pub struct StreamEnd {
    /// When the request started.
    pub started: Instant,
    /// Where to record the duration.
    pub duration: Arc<CascadeMetrics>,
    /// The provider's bulkhead slot, released when the stream ends.
    pub _slot: Option<InFlight>,
}

impl Drop for StreamEnd {
    fn drop(&mut self) {
        self.duration
            .duration
            .observe(self.started.elapsed().as_secs_f64());
    }
}

struct State {
    head: VecDeque<Value>,
    rest: ChunkStream,
    stamp: Stamp,
    idle: Duration,
    include_usage: bool,
    saw_finish: bool,
    done: bool,
    _end: StreamEnd,
}

/// Turns a peeked upstream stream into the client's SSE bytes.
pub fn forward(
    head: Vec<Value>,
    rest: ChunkStream,
    stamp: Stamp,
    idle: Duration,
    include_usage: bool,
    end: StreamEnd,
) -> BoxStream<'static, Result<Bytes, Infallible>> {
    let state = State {
        head: head.into(),
        rest,
        stamp,
        idle,
        include_usage,
        saw_finish: false,
        done: false,
        _end: end,
    };
    futures_util::stream::unfold(state, |mut st| async move {
        if st.done {
            return None;
        }
        loop {
            let next = match st.head.pop_front() {
                Some(v) => Some(Ok(StreamItem::Chunk(v))),
                None => match timeout(st.idle, st.rest.next()).await {
                    Ok(item) => item,
                    Err(_) => Some(Err(AttemptError::new(Failure::Timeout, "the stream stalled longer than timeouts.idle"))),
                },
            };
            match next {
                Some(Ok(StreamItem::Chunk(mut v))) => {
                    if !st.include_usage && wire::is_usage_chunk(&v) {
                        continue;
                    }
                    st.saw_finish |= wire::chunk_finishes(&v);
                    wire::chunk(&mut v, &st.stamp);
                    return Some((Ok(sse::encode_json(&v)), st));
                }
                Some(Ok(StreamItem::Done)) => {
                    st.done = true;
                    return Some((Ok(sse::done()), st));
                }
                None if st.saw_finish => {
                    // The upstream finished its choice but left out [DONE].
                    st.done = true;
                    return Some((Ok(sse::done()), st));
                }
                None => {
                    st.done = true;
                    let e = AttemptError::new(Failure::BrokenBody, "the stream ended without a finish signal");
                    tracing::warn!(model = %st.stamp.model, reason = %e, "Stream failed after its first byte.");
                    return Some((Ok(error_event(&e)), st));
                }
                Some(Err(e)) => {
                    st.done = true;
                    tracing::warn!(model = %st.stamp.model, reason = %e, "Stream failed after its first byte.");
                    return Some((Ok(error_event(&e)), st));
                }
            }
        }
    })
    .boxed()
}
