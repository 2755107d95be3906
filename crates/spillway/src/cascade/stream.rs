//! Forwarding a stream after its first token: chunk by chunk, never
//! buffered.
//!
//! Each upstream chunk is stamped (stable id, `model` = the model ref) and
//! written as soon as it arrives. Past this point fallback is impossible: a
//! failure — an upstream error, a cut stream, silence longer than
//! `timeouts.idle` — ends the stream with an OpenAI-style error event and
//! counts against the model. When the client disconnects, hyper drops this
//! stream, which drops the upstream response and so cancels the upstream
//! request.

use super::error_event;
use super::gate::Pass;
use crate::api::sse;
use crate::api::wire::{self, Stamp};
use crate::config::BreakerConfig;
use crate::health::{HealthEvent, ModelHealth};
use crate::metrics::CascadeMetrics;
use crate::outcome::{AttemptError, Failure};
use crate::providers::{ChunkStream, StreamItem};
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::time::{timeout, Duration, Instant};

/// Held for the life of a forwarded stream; records its end.
pub struct StreamEnd {
    /// When the request started.
    pub started: Instant,
    /// Where to record the duration.
    pub metrics: Arc<CascadeMetrics>,
    /// The answering model's health: a failure after the first byte still
    /// counts against it.
    pub health: Arc<ModelHealth>,
    /// Breaker rules.
    pub breaker: BreakerConfig,
    /// Operator events.
    pub events: tokio::sync::broadcast::Sender<HealthEvent>,
    /// The gate pass (bulkhead slot), released when the stream ends.
    pub _pass: Pass,
    /// Records the answer's cost from its usage chunk (taken at the first);
    /// when no chunk brought usage, from an estimate when the stream ends.
    pub meter: Option<crate::usage::Meter>,
    /// The prompt's estimated size, for that estimate.
    pub prompt_tokens: u64,
    /// Characters of content and tool-call arguments forwarded so far.
    pub out_chars: usize,
}

impl StreamEnd {
    fn failed(&self, e: &AttemptError) {
        tracing::warn!(model = %self.health.key, reason = %e, "Stream failed after its first byte.");
        if e.failure.is_breaker_failure() {
            self.health.failure(&self.breaker, &self.events);
        }
    }
}

impl Drop for StreamEnd {
    fn drop(&mut self) {
        self.metrics.duration.observe(self.started.elapsed().as_secs_f64());
        // No usage came (the client did not ask for it, or the upstream
        // never sends it): count an estimate, four characters a token, so
        // cost and budgets do not miss streamed answers.
        if let Some(meter) = self.meter.take() {
            let output = self.out_chars.div_ceil(4) as u64;
            meter.tokens(crate::api::completion::Tokens { input: self.prompt_tokens, output });
        }
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

struct State {
    head: VecDeque<StreamItem>,
    rest: ChunkStream,
    stamp: Stamp,
    idle: Duration,
    include_usage: bool,
    saw_finish: bool,
    done: bool,
    end: StreamEnd,
}

/// Turns a peeked upstream stream into the client's SSE bytes.
pub fn forward(
    head: Vec<StreamItem>,
    rest: ChunkStream,
    stamp: Stamp,
    idle: Duration,
    include_usage: bool,
    end: StreamEnd,
) -> BoxStream<'static, Result<Bytes, Infallible>> {
    let state = State { head: head.into(), rest, stamp, idle, include_usage, saw_finish: false, done: false, end };
    futures_util::stream::unfold(state, |mut st| async move {
        if st.done {
            return None;
        }
        loop {
            let next = match st.head.pop_front() {
                Some(item) => Some(Ok(item)),
                None => match timeout(st.idle, st.rest.next()).await {
                    Ok(item) => item,
                    Err(_) => {
                        Some(Err(AttemptError::new(Failure::Timeout, "the stream stalled longer than timeouts.idle")))
                    }
                },
            };
            match next {
                Some(Ok(StreamItem::Chunk(mut v))) => {
                    st.end.out_chars += delta_chars(&v);
                    if let Some(usage) = v.get("usage").filter(|u| u.is_object()) {
                        if let Some(meter) = st.end.meter.take() {
                            meter.usage(usage);
                        }
                    }
                    if !st.include_usage && wire::is_usage_chunk(&v) {
                        continue;
                    }
                    st.saw_finish |= wire::chunk_finishes(&v);
                    wire::chunk(&mut v, &st.stamp);
                    return Some((Ok(sse::encode_json(&v)), st));
                }
                Some(Ok(StreamItem::Raw(r))) => {
                    st.end.out_chars += r.content_chars();
                    if let Some(tokens) = r.tokens() {
                        if let Some(meter) = st.end.meter.take() {
                            meter.tokens(tokens);
                        }
                    }
                    if !st.include_usage && r.is_usage_chunk() {
                        continue;
                    }
                    st.saw_finish |= r.finishes();
                    return Some((Ok(r.encode(&st.stamp)), st));
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
                    st.end.failed(&e);
                    return Some((Ok(error_event(&e)), st));
                }
                Some(Err(e)) => {
                    st.done = true;
                    st.end.failed(&e);
                    return Some((Ok(error_event(&e)), st));
                }
            }
        }
    })
    .boxed()
}
