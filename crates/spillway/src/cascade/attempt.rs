//! One attempt against one target, up to its first token; retries of
//! connect errors; and hedging (a second model started when the first is
//! slow to produce a token, the first token winning).

use super::gate;
use super::pass::Pass;
use super::plan::{CascadePlan, Target};
use super::prepare;
use super::settle::{Rules, Ticket};
use super::walk::Walk;
use crate::api::completion::Completion;
use crate::api::continuation::Mode;
use crate::api::wire::Stamp;
use crate::metrics::SkippedLabels;
use crate::outcome::{AttemptError, Failure};
use crate::providers::{AttemptRequest, ChunkStream, Provider, Reply, StreamItem, UpstreamHints};
use crate::quality::Signals;
use futures_util::StreamExt;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::time::{timeout_at, Duration, Instant};

/// What a successful attempt produced, before it becomes a response.
pub enum Answer {
    /// A whole completion, validated.
    Complete(Completion),
    /// A stream, peeked up to and including its first token.
    Stream {
        /// The chunks read so far.
        head: Vec<StreamItem>,
        rest: ChunkStream,
    },
}

/// A successful attempt, not settled yet: a whole answer is settled by
/// the runner, a stream by the forwarder when it ends.
pub struct Attempted<'a> {
    pub target: &'a Target,
    pub answer: Answer,
    pub ticket: Ticket,
    /// The load profile applied to the request.
    pub load_profile: Option<String>,
    /// The id the upstream gave its answer, when it sent one.
    pub upstream_request_id: Option<String>,
}

/// What an attempt learned besides its answer.
pub struct Learned {
    /// The load profile applied to the request.
    pub load_profile: Option<String>,
    /// The upstream's own id of the call.
    pub upstream_request_id: Option<String>,
}

/// The outcome of one attempt, or of a hedged pair. Failures are settled
/// already; the runner only reads them (log, next target or not).
pub struct Outcome<'a> {
    pub winner: Option<Attempted<'a>>,
    /// Failed attempts, in the order they ended.
    pub failures: Vec<(&'a Target, AttemptError)>,
}

/// Runs one attempt on `plan.targets[index]`, and its retries of the same
/// model: after a connect error or reset (`retries.max`), a 429 with a
/// short `Retry-After` or a status in `retries.on_status` (once).
///
/// Every call is an attempt of its own: a failed call is settled before
/// the retry (the breaker, dead marks, metrics and `/admin/state` see each
/// call), and the retry passes the gates again — so a half-open probe is
/// one call (the failure re-opens the breaker and the retry is refused),
/// and a model fails towards its breaker as often as it is called.
pub async fn run<'a>(walk: &Walk<'a>, index: usize, pass: Pass) -> Outcome<'a> {
    let plan: &'a CascadePlan = walk.plan;
    let target = &plan.targets[index];
    let rules = Rules { breaker: walk.ctx.rules.breaker, dead_ttl: walk.ctx.rules.dead_ttl };
    let mut ticket = Ticket::new(walk.plan, index, walk.ctx.health, rules, pass, walk.req.journal.as_ref());
    let retries = walk.ctx.rules.retries;
    let mut tries = 0u32;
    // A 429 with a short Retry-After or a listed 5xx: the same model once more.
    let mut retried_status = false;
    let mut failures = Vec::new();
    loop {
        tries += 1;
        walk.calls.fetch_add(1, Ordering::Relaxed);
        let error = match once(walk, target, &mut ticket, None).await {
            Ok((answer, Learned { load_profile, upstream_request_id })) => {
                let win = Attempted { target, answer, ticket, load_profile, upstream_request_id };
                return Outcome { winner: Some(win), failures };
            }
            Err(error) => error,
        };
        let wait = if error.failure.is_retryable() && tries <= retries.max {
            Some(backoff(retries.backoff, retries.jitter, tries))
        } else if !retried_status {
            same_model_wait(&error.failure, &retries).inspect(|_| retried_status = true)
        } else {
            None
        };
        ticket.failed(&error);
        let Some(wait) = wait.filter(|w| Instant::now() + *w < walk.deadline) else {
            log_failed(walk, index, &error, next_step(walk, index, &error));
            failures.push((target, error));
            return Outcome { winner: None, failures };
        };
        log_failed(walk, index, &error, "retrying the same model");
        failures.push((target, error));
        tokio::time::sleep(wait).await;
        let Some(pass) = gate::readmit(&walk.ctx, target) else {
            tracing::debug!(model = %target.name, "Not retried: its gates closed after the failed call.");
            return Outcome { winner: None, failures };
        };
        ticket = Ticket::new(walk.plan, index, walk.ctx.health, rules, pass, walk.req.journal.as_ref());
    }
}

/// One line per failed call at the default level (the request's id is on
/// its span): an operator sees every failover without `/admin/state`.
fn log_failed(walk: &Walk<'_>, index: usize, error: &AttemptError, next: &str) {
    let model = &walk.plan.targets[index].name;
    let reason = error.failure.reason();
    tracing::info!(cascade = %walk.plan.name, model = %model, reason, detail = %error, next, "Attempt failed.");
}

/// What the walk does after `error` on `plan.targets[index]`, for the log.
fn next_step(walk: &Walk<'_>, index: usize, error: &AttemptError) -> &'static str {
    let last = index + 1 >= walk.plan.targets.len();
    match error.failure {
        Failure::InvalidRequest { .. } => "returning the upstream's error to the client",
        Failure::ContextLength if !last => "trying a model with a larger context",
        _ if Instant::now() >= walk.deadline => "none: the request's total deadline has passed",
        _ if last => "none: no model left in the cascade",
        _ => "trying the next model",
    }
}

/// How long to wait before retrying the same model after `failure`, when
/// the rules say to: a 429 whose `Retry-After` is within
/// `wait_retry_after_up_to` (that long), or a status in `on_status`
/// (`backoff`, with jitter).
fn same_model_wait(failure: &Failure, retries: &crate::config::RetryConfig) -> Option<Duration> {
    match failure {
        Failure::RateLimited { retry_after: Some(after) }
            if !retries.wait_retry_after_up_to.is_zero() && *after <= retries.wait_retry_after_up_to =>
        {
            Some(*after)
        }
        Failure::Upstream { status: Some(status) } if retries.retries_status(*status) => {
            Some(backoff(retries.backoff, retries.jitter, 1))
        }
        _ => None,
    }
}

/// Exponential backoff with jitter; jitter 0 makes it exact (tests).
fn backoff(base: Duration, jitter: f64, attempt: u32) -> Duration {
    let exp = base.saturating_mul(1 << attempt.saturating_sub(1).min(6));
    exp + exp.mul_f64(jitter * fastrand::f64())
}

/// One upstream call, up to its first token (for a whole answer, or a
/// JSON answer that must be validated first: up to its checked end).
///
/// `continuing`: the partial answer another model broke off, and how this
/// model is to continue it (see `cascade::continuation`).
pub async fn once(
    walk: &Walk<'_>,
    target: &Target,
    ticket: &mut Ticket,
    continuing: Option<(&str, Mode)>,
) -> Result<(Answer, Learned), AttemptError> {
    // (Every call has a ticket made just before it.)
    let started = ticket.started();
    ticket.judge_for(|| {
        let json = walk.json.as_ref().is_some_and(|p| p.content.is_some());
        let offers_tools = walk.json.as_ref().is_some_and(|p| !p.tools.is_empty());
        super::settle::Asked {
            request_id: walk.req.request_id.clone(),
            prompt: walk.req.prompt,
            json,
            // A buffered (JSON) stream's calls are checked before they are sent.
            tools: walk.json.as_ref().filter(|p| !p.buffers_streams() && offers_tools).map(|p| p.tools.clone()),
            shape: crate::quality::shape::Shape::of(walk.req.prompt, json, offers_tools),
            owner: match (&walk.req.key_id, &walk.req.caller) {
                (Some(id), _) => crate::health::feedback::Owner::Key(id.clone()),
                (None, Some(plain)) => crate::health::feedback::Owner::Plain(plain.clone()),
                (None, None) => crate::health::feedback::Owner::Anyone,
            },
        }
    });
    let token_deadline = walk.deadline.min(started + first_token(walk, target));
    let mut prepared = prepare::prepare(&walk.ctx, target, walk.req);
    ticket.load_profile(prepared.load_profile.as_deref());
    if let Some(plan) = walk.json.as_ref().filter(|_| !target.provider.config.native_json) {
        if plan.instruction.is_some() {
            super::json::instruct(prepared.body.to_mut(), plan);
        }
    }
    if let Some((partial, mode)) = continuing {
        mode.apply(prepared.body.to_mut(), partial);
    }
    // A whole answer read as a stream (`cascade::whole`).
    let assemble = super::whole::reads_as_stream(target, walk.req);
    if assemble {
        prepared.body.as_stream();
    }
    let hints = UpstreamHints::default();
    let trace = ticket.journal().and_then(|j| j.trace());
    let traceparent = ticket.traceparent();
    let request = AttemptRequest {
        model_id: &target.model_ref.model,
        body: prepared.body,
        stream: walk.req.stream || assemble,
        include_usage: walk.req.include_usage || assemble,
        accept_whole: assemble,
        hints: &hints,
        request_id: walk.req.request_id.as_ref().map(crate::telemetry::RequestId::as_str),
        traceparent: traceparent.as_deref(),
        tracestate: trace.as_ref().and_then(|t| t.tracestate.as_deref()),
    };
    // Pinned here and awaited through a reference: handed to `timeout_at`
    // by value, the call's future would take its size twice in this state.
    let call = target.provider.call(request);
    tokio::pin!(call);
    let reply = match timeout_at(token_deadline, call).await {
        Ok(r) => r?,
        Err(_) => return Err(AttemptError::new(Failure::Timeout, "no response before the first-token deadline")),
    };
    let mut marked = false;
    let reply = match prepare::observe(walk.ctx.load, target, reply) {
        Reply::Stream(s) if assemble => {
            let (head, rest) = peek(skipping(s, walk, target), token_deadline).await?;
            // The TTFT sample is the first token's, as for a stream.
            ticket.first_token(hints.exhausted_for());
            note_quota(target, &hints);
            marked = true;
            let idle = walk.ctx.rules.timeouts.idle;
            Reply::Complete(super::whole::assemble(head, rest, idle, walk.deadline).await?)
        }
        Reply::Stream(s) => Reply::Stream(skipping(s, walk, target)),
        whole => whole,
    };
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
                let mut signals = Signals::NONE;
                let checked = super::json::check_completion(&mut v, plan, target, &mut signals);
                ticket.note(signals);
                checked?;
                c = v.into();
            }
            Answer::Complete(c)
        }
        Reply::Stream(s) => {
            let (head, rest) = peek(s, token_deadline).await?;
            match walk.json.as_ref().filter(|p| p.buffers_streams()) {
                // Validate first, then stream (SPEC §7).
                Some(plan) => {
                    let mut signals = Signals::NONE;
                    let chunks = super::json::buffered(head, rest, walk.deadline, plan, target, &mut signals).await;
                    ticket.note(signals);
                    let chunks = chunks?;
                    let chunks = chunks.into_iter().map(StreamItem::Chunk).collect();
                    let done: ChunkStream = futures_util::stream::iter([Ok(StreamItem::Done)]).boxed();
                    Answer::Stream { head: chunks, rest: done }
                }
                None => Answer::Stream { head, rest },
            }
        }
    };
    if !marked {
        ticket.first_token(hints.exhausted_for());
        note_quota(target, &hints);
    }
    let upstream_request_id = hints.upstream_id().map(str::to_string);
    Ok((answer, Learned { load_profile: prepared.load_profile, upstream_request_id }))
}

/// Keeps the share of its quota an answer said is left, for fair shares.
fn note_quota(target: &Target, hints: &UpstreamHints) {
    if let Some(q) = hints.quota_left() {
        target.health.set_quota_left(q, crate::health::clock::now_ms());
    }
}

/// How long `target` has for its first token: its provider's `first_token`
/// or `health.timeouts.first_token` — but when nothing after it can be
/// tried, `last_model_first_token` (default `total`): there a deadline
/// would turn a slow answer into an error with nowhere to fail over to
/// (incident 004), while the load profile shortens the answers instead.
fn first_token(walk: &Walk<'_>, target: &Target) -> Duration {
    let timeouts = &walk.ctx.rules.timeouts;
    let own = target.provider.config.first_token.unwrap_or(timeouts.first_token);
    if gate::any_after(walk, target) {
        own
    } else {
        own.max(timeouts.last_model_first_token)
    }
}

/// Drops the events the adapter's decoder could not read
/// ([`StreamItem::Skipped`]), counting each in
/// `spillway_stream_events_skipped_total{cascade, provider}`; one more than
/// `health.streams.max_skipped_events` fails the stream as a broken body.
/// A stream's error passes the provider's redactor here
/// ([`crate::providers::Provider::redact`]): every stream is read through
/// this layer. What healthy streams pay: one poll layer (a plain struct:
/// no future per item) and three `Arc` clones.
fn skipping(s: ChunkStream, walk: &Walk<'_>, target: &Target) -> ChunkStream {
    Box::pin(Skipping {
        inner: s,
        max: walk.ctx.rules.streams.max_skipped_events,
        family: walk.ctx.metrics.stream_events_skipped.clone(),
        plan: Arc::clone(walk.plan),
        provider: Arc::clone(&target.provider),
        skipped: 0,
    })
}

/// The stream [`skipping`] returns.
struct Skipping {
    inner: ChunkStream,
    max: u32,
    family: Family<SkippedLabels, Counter>,
    plan: Arc<CascadePlan>,
    provider: Arc<Provider>,
    skipped: u32,
}

impl futures_util::Stream for Skipping {
    type Item = Result<StreamItem, AttemptError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let st = self.get_mut();
        loop {
            match std::task::ready!(st.inner.as_mut().poll_next(cx)) {
                Some(Ok(StreamItem::Skipped)) => {
                    st.skipped += 1;
                    let labels =
                        SkippedLabels { cascade: st.plan.name.clone(), provider: st.provider.config.name.clone() };
                    st.family.get_or_create(&labels).inc();
                    if st.skipped > st.max {
                        let why = format!(
                            "{} stream events could not be read (more than health.streams.max_skipped_events)",
                            st.skipped
                        );
                        return Poll::Ready(Some(Err(AttemptError::new(Failure::BrokenBody, why))));
                    }
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(st.provider.redact(e)))),
                other => return Poll::Ready(other),
            }
        }
    }
}

/// Reads a stream until its first real token; everything before it (role
/// chunks, keep-alives) is kept to be sent first.
pub async fn peek(mut s: ChunkStream, deadline: Instant) -> Result<(Vec<StreamItem>, ChunkStream), AttemptError> {
    let mut head = Vec::new();
    let mut finished = false;
    let mut gap = super::gap::Gap::new();
    loop {
        match gap.next(&mut s, || deadline).await {
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
/// wins; the loser is dropped — its request cancelled, its ticket
/// abandoned (not counted). Returns the outcome and the index of the hedge target, if one
/// was started.
pub async fn hedged<'a, F>(walk: &Walk<'a>, i: usize, primary: F, after: Duration) -> (Outcome<'a>, Option<usize>)
where
    F: Future<Output = Outcome<'a>>,
{
    tokio::pin!(primary);
    tokio::select! {
        out = &mut primary => return (out, None),
        () = tokio::time::sleep(after) => {}
    }
    let targets = &walk.plan.targets;
    let Some((j, pass)) = gate::next_admitted(walk, targets, i + 1) else {
        return (primary.await, None);
    };
    tracing::debug!(slow = %targets[i].name, hedge = %targets[j].name, "Hedging a slow first token.");
    let secondary = run(walk, j, pass);
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
