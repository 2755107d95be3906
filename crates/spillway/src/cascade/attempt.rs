//! One attempt against one target, up to its first token; retries of
//! connect errors; and hedging (a second model started when the first is
//! slow to produce a token, the first token winning).

use super::gate::{self, Pass};
use super::{prepare, Target, Walk};
use crate::api::completion::Completion;
use crate::api::wire::Stamp;
use crate::gateway::CascadePlan;
use crate::outcome::{AttemptError, Failure};
use crate::providers::{AttemptRequest, ChunkStream, Reply, StreamItem, UpstreamHints};
use futures_util::StreamExt;
use std::future::Future;
use std::sync::atomic::Ordering;
use tokio::time::{timeout_at, Duration, Instant};

/// What a successful attempt produced, before it becomes a response.
pub enum Answer {
    /// A whole completion, validated.
    Complete(Completion),
    /// A stream, peeked up to and including its first token.
    Stream {
        /// The chunks read so far.
        head: Vec<StreamItem>,
        /// The rest.
        rest: ChunkStream,
    },
}

/// A successful attempt.
pub struct Attempted<'a> {
    /// Who answered.
    pub target: &'a Target,
    /// What.
    pub answer: Answer,
    /// Its gate pass (held while a stream is forwarded).
    pub pass: Pass,
    /// The load profile applied.
    pub load_profile: Option<String>,
    /// Time to first token (or to the whole answer).
    pub ttft: Duration,
    /// The answer said the quota is used up until then.
    pub exhausted: Option<Duration>,
}

/// A failed attempt with its pass (dropped after judging).
pub struct Failed {
    /// Why.
    pub error: AttemptError,
    /// The gate pass.
    pub pass: Pass,
}

/// The outcome of one attempt, or of a hedged pair.
pub struct Outcome<'a> {
    /// The answer, if any attempt produced one.
    pub winner: Option<Attempted<'a>>,
    /// Failed attempts, in the order they ended.
    pub failures: Vec<(&'a Target, Failed)>,
}

/// Runs one attempt with its connect-error retries.
pub async fn run<'a>(walk: &Walk<'_>, target: &'a Target, pass: Pass) -> Outcome<'a> {
    let retries = walk.gw.config.health.retries;
    let mut tries = 0u32;
    loop {
        tries += 1;
        walk.calls.fetch_add(1, Ordering::Relaxed);
        match once(walk, target).await {
            Ok((answer, load_profile, ttft, exhausted)) => {
                let win = Attempted { target, answer, pass, load_profile, ttft, exhausted };
                return Outcome { winner: Some(win), failures: Vec::new() };
            }
            Err(e) if e.failure.is_retryable() && tries <= retries.max && Instant::now() < walk.deadline => {
                tracing::debug!(model = %target.name, reason = %e, "Retrying after a connect error.");
                tokio::time::sleep(backoff(retries.backoff, retries.jitter, tries)).await;
            }
            Err(error) => return Outcome { winner: None, failures: vec![(target, Failed { error, pass })] },
        }
    }
}

/// Exponential backoff with jitter; jitter 0 makes it exact (tests).
fn backoff(base: Duration, jitter: f64, attempt: u32) -> Duration {
    let exp = base.saturating_mul(1 << attempt.saturating_sub(1).min(6));
    exp + exp.mul_f64(jitter * fastrand::f64())
}

type Success = (Answer, Option<String>, Duration, Option<Duration>);

/// One upstream call, up to its first token.
async fn once(walk: &Walk<'_>, target: &Target) -> Result<Success, AttemptError> {
    let started = Instant::now();
    let first_token = walk.gw.config.health.timeouts.first_token;
    let token_deadline = walk.deadline.min(started + first_token);
    let mut prepared = prepare::prepare(walk.gw, target, walk.req);
    if let Some(plan) = walk.json.as_ref().filter(|_| !target.provider.config.native_json) {
        if plan.instruction.is_some() {
            super::json::instruct(prepared.body.to_mut(), plan);
        }
    }
    let hints = UpstreamHints::default();
    let request = AttemptRequest {
        model_id: &target.model_ref.model,
        body: prepared.body,
        stream: walk.req.stream,
        include_usage: walk.req.include_usage,
        hints: &hints,
    };
    // Pinned here and awaited through a reference: handed to `timeout_at`
    // by value, the call's future would take its size twice in this state.
    let call = target.provider.call(request);
    tokio::pin!(call);
    let reply = match timeout_at(token_deadline, call).await {
        Ok(r) => r?,
        Err(_) => return Err(AttemptError::new(Failure::Timeout, "no response before the first-token deadline")),
    };
    let reply = prepare::observe(walk.gw, target, reply);
    let answer = match reply {
        Reply::Complete(mut c) => {
            if let Err(why) = c.stamp(Stamp::new(target.name.clone())) {
                return Err(AttemptError::new(Failure::BrokenBody, why));
            }
            if !c.has_answer() {
                return Err(AttemptError::new(Failure::Empty, "no content and no tool calls"));
            }
            if let Some(plan) = &walk.json {
                let mut v = c.into_value().map_err(|why| AttemptError::new(Failure::BrokenBody, why))?;
                super::json::check_completion(&mut v, plan, target)?;
                c = v.into();
            }
            Answer::Complete(c)
        }
        Reply::Stream(s) => {
            let (head, rest) = peek(s, token_deadline).await?;
            match walk.json.as_ref().filter(|p| p.buffers_streams()) {
                // Validate first, then stream (SPEC §7).
                Some(plan) => {
                    let head = head.into_iter().filter_map(StreamItem::into_value).collect();
                    let chunks = super::json::buffered(head, rest, walk.deadline, plan, target).await?;
                    let chunks = chunks.into_iter().map(StreamItem::Chunk).collect();
                    let done: ChunkStream = futures_util::stream::iter([Ok(StreamItem::Done)]).boxed();
                    Answer::Stream { head: chunks, rest: done }
                }
                None => Answer::Stream { head, rest },
            }
        }
    };
    Ok((answer, prepared.load_profile, started.elapsed(), hints.exhausted_for()))
}

/// Reads a stream until its first real token; everything before it (role
/// chunks, keep-alives) is kept to be sent first.
pub async fn peek(mut s: ChunkStream, deadline: Instant) -> Result<(Vec<StreamItem>, ChunkStream), AttemptError> {
    let mut head = Vec::new();
    let mut finished = false;
    loop {
        match timeout_at(deadline, s.next()).await {
            Err(_) => return Err(AttemptError::new(Failure::Timeout, "no first token before the deadline")),
            Ok(None) if finished => {
                return Err(AttemptError::new(Failure::Empty, "the stream finished without content"))
            }
            Ok(None) => return Err(AttemptError::new(Failure::BrokenBody, "the stream ended before its first token")),
            Ok(Some(Err(e))) => return Err(e),
            Ok(Some(Ok(StreamItem::Done))) => {
                return Err(AttemptError::new(Failure::Empty, "the stream finished without content"))
            }
            Ok(Some(Ok(chunk))) => {
                if chunk.has_token() {
                    head.push(chunk);
                    return Ok((head, s));
                }
                finished |= chunk.finishes();
                head.push(chunk);
            }
        }
    }
}

/// Runs `primary` (the attempt on target `i`); if it has no first token
/// after `after`, also starts the next admitted target. The first token
/// wins; the loser is dropped — its request cancelled, not counted as a
/// failure. Returns the outcome and the index of the hedge target, if one
/// was started.
pub async fn hedged<'a, F>(
    walk: &Walk<'_>,
    plan: &'a CascadePlan,
    i: usize,
    primary: F,
    after: Duration,
) -> (Outcome<'a>, Option<usize>)
where
    F: Future<Output = Outcome<'a>>,
{
    tokio::pin!(primary);
    tokio::select! {
        out = &mut primary => return (out, None),
        () = tokio::time::sleep(after) => {}
    }
    let Some((j, pass)) = gate::next_admitted(walk, &plan.targets, i + 1) else {
        return (primary.await, None);
    };
    tracing::debug!(slow = %plan.targets[i].name, hedge = %plan.targets[j].name, "Hedging a slow first token.");
    let secondary = run(walk, &plan.targets[j], pass);
    tokio::pin!(secondary);
    let merged = tokio::select! {
        a = &mut primary => if a.winner.is_some() { a } else { merge(a, secondary.await) },
        b = &mut secondary => if b.winner.is_some() { b } else { merge(b, primary.await) },
    };
    (merged, Some(j))
}

fn merge<'a>(first: Outcome<'a>, second: Outcome<'a>) -> Outcome<'a> {
    let mut failures = first.failures;
    failures.extend(second.failures);
    Outcome { winner: second.winner, failures }
}
