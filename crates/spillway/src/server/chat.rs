//! The chat handler (`POST /v1/chat/completions`, SPEC §5): everything
//! around the runner.
//!
//! Before it: the client key, the body (bounded in size), the concurrency
//! slot, validation, the cascade (`model`), escalation and the daily
//! budget. Then the runner ([`cascade::run`]) walks the cascade. After it,
//! and only here: the handoff when no model answered, cost and the
//! fallback-share counters, and the request's outcome for the unanswered
//! case (an answered request settles itself: whole answers in the runner,
//! streams where they end).
//!
//! The other chat-shaped entry points (`responses.rs`, `messages.rs`) reuse
//! the parts: [`admit`] (key, body, slot), [`serve`] (everything from the
//! cascade to cost) and [`respond_with`] (the answer in their format, with
//! the same headers); `embeddings.rs` reuses [`admit`] and the answer's headers
//! ([`super::answer_headers`]).

use super::answer_headers::AnswerHeaders;
use super::auth;
pub(super) use super::keyed::Who;
use super::AppState;
use crate::api::{ApiError, ChatRequest};
use crate::cascade::{self, CascadePlan, NoAnswer, RequestOutcome, Served, ServedBody, Unanswered};
use crate::gateway::Gateway;
use crate::telemetry::RequestNotes;
use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Holds one slot of `max_concurrent_requests`.
pub(super) struct Permit(Arc<AppState>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Where an entry point finds the client's key in the request headers.
pub(super) type KeyFrom = fn(&http::HeaderMap) -> Option<&str>;

/// A request let in: the gateway it runs on, its body, who sent it, and
/// the concurrency slot it holds.
pub(super) struct Admitted {
    pub gw: Arc<Gateway>,
    pub body: Bytes,
    /// The client key that sent it, when clients have keys (handoff items
    /// are owned by an id derived from it).
    pub caller: Option<crate::secret::Secret>,
    /// `x-spillway-escalate: true`.
    pub escalate: bool,
    /// The virtual key that sent it, and its `x-spillway-user`.
    pub who: Who,
    pub permit: Permit,
    /// The request's id and what its error response will carry.
    pub notes: Arc<RequestNotes>,
}

/// `POST /v1/chat/completions`. The server calls it directly, without the
/// router (see `server::Front`); the router serves the same handler to
/// anything that goes through it (and `spillway drill` calls it in-process).
pub async fn chat<B>(state: Arc<AppState>, request: http::Request<B>) -> Response
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let notes = super::conventions::notes(&request);
    match chat_noted(state, request, notes).await {
        (mut r, Some(laid)) => {
            laid.into_map(r.headers_mut());
            r
        }
        (r, None) => r,
    }
}

/// [`chat`] with the request's notes handed over by the server (not put
/// into the request's extensions and looked up again), and an answer's
/// headers handed back to be laid out by the server (`None` for an error,
/// whose headers are in its response).
pub(super) async fn chat_noted<B>(
    state: Arc<AppState>,
    request: http::Request<B>,
    notes: Arc<RequestNotes>,
) -> (Response, Option<AnswerHeaders>)
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    match chat_inner(state, request, notes).await {
        Ok((r, laid)) => (r, Some(laid)),
        Err(e) => (e.into_response(), None),
    }
}

async fn chat_inner<B>(
    state: Arc<AppState>,
    request: http::Request<B>,
    notes: Arc<RequestNotes>,
) -> Result<(Response, AnswerHeaders), ApiError>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let Admitted { gw, body, caller, escalate, who, permit, notes } =
        admit_noted(state, request, auth::bearer, notes).await?;
    // The prompt's facts only for a gateway whose cascades judge answers.
    let judged = gw.config.cascades.values().any(|c| c.quality.is_some());
    let mut req = ChatRequest::parse_judged(body, judged)?;
    req.caller = caller;
    let served = serve(&gw, req, escalate, &notes, &who).await?;
    Ok(respond(served, permit))
}

/// What every client entry point does before reading its own format: the
/// client key (found by `key_from`), the body (bounded in size and time),
/// then a concurrency slot.
pub(super) async fn admit<B>(
    state: Arc<AppState>,
    request: http::Request<B>,
    key_from: KeyFrom,
) -> Result<Admitted, ApiError>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let notes = super::conventions::notes(&request);
    admit_noted(state, request, key_from, notes).await
}

/// [`admit`] with the request's notes at hand.
async fn admit_noted<B>(
    state: Arc<AppState>,
    request: http::Request<B>,
    key_from: KeyFrom,
    notes: Arc<RequestNotes>,
) -> Result<Admitted, ApiError>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let gw = state.gateway.load_full();
    let server = &gw.config.server;
    let escalate = crate::escalation::rules::forced(request.headers());
    if let Some(journal) = gw.shared.telemetry.begin(notes.id.as_str(), request.uri().path(), request.headers()) {
        notes.set_journal(journal);
    }
    let identified = auth::identify(&gw, key_from(request.headers()))?;
    let caller = identified.plain().cloned();
    let who = Who {
        key: identified.key().cloned(),
        user_header: crate::api::headers::find(request.headers(), &super::keyed::X_SPILLWAY_USER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    };
    // The body first, bounded in size and time, and only then a slot: a
    // client trickling its body must not hold one of
    // `max_concurrent_requests` while others wait.
    let limit = server.max_body_bytes;
    let declared = crate::api::headers::find(request.headers(), &header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(ApiError::BodyTooLarge(limit));
    }
    let mut read = std::pin::pin!(crate::providers::http::read_to_end(request.into_body(), limit));
    // The server hands over a body it has read already: looked at once
    // before a timer is made for it (a timer costs a clock read and a
    // handle on the runtime's, made and dropped on every request).
    let read = match futures_util::poll!(read.as_mut()) {
        std::task::Poll::Ready(read) => Ok(read),
        std::task::Poll::Pending => tokio::time::timeout(server.body_read_timeout, read).await,
    };
    let body = match read {
        Err(_) => return Err(ApiError::BodyTimeout(server.body_read_timeout)),
        Ok(Err(crate::providers::http::ReadError::TooLarge)) => return Err(ApiError::BodyTooLarge(limit)),
        // The server reads a body before the handler runs, within the same
        // bounds; what stopped it comes as the body's error.
        Ok(Err(crate::providers::http::ReadError::Body(e))) => {
            return Err(match body_failure(&e) {
                Some(super::http1::BodyError::TimedOut) => ApiError::BodyTimeout(server.body_read_timeout),
                Some(super::http1::BodyError::TooLarge) => ApiError::BodyTooLarge(limit),
                _ => ApiError::BodyUnreadable,
            })
        }
        // A lone surrogate escape (half an emoji from a cut JavaScript
        // string) is read as U+FFFD on every entry point alike.
        Ok(Ok(bytes)) => crate::api::surrogates::mend(bytes),
    };
    if state.in_flight.fetch_add(1, Ordering::AcqRel) >= server.max_concurrent_requests {
        state.in_flight.fetch_sub(1, Ordering::AcqRel);
        return Err(ApiError::Overloaded);
    }
    let permit = Permit(state.clone());
    Ok(Admitted { gw, body, caller, escalate, who, permit, notes })
}

/// The chat core every chat-shaped entry point runs once it has a
/// [`ChatRequest`] (chat completions, and the Responses and Messages APIs
/// translated to it): the cascade, escalation, the daily budget, the
/// runner, and after it the handoff, cost and fallback share. An error
/// leaves in `notes` the upstream calls made and, when every model failed,
/// when the soonest of them will be let back.
pub(super) async fn serve(
    gw: &Arc<Gateway>,
    mut req: ChatRequest,
    escalate: bool,
    notes: &RequestNotes,
    who: &Who,
) -> Result<Served, ApiError> {
    req.request_id = Some(notes.id.clone());
    req.journal = notes.journal().cloned();
    if let Some(j) = &req.journal {
        journal_request(j, &req, who);
    }
    let plan = gw
        .resolve(&req.model)
        .ok_or_else(|| super::kinds::unresolved(gw, &req.model, crate::config::CascadeKind::Chat))?;
    if let Some(key) = &who.key {
        req.key_id = Some(key.id.clone());
        req.end_user = crate::tenancy::admit::end_user(who.user_header.as_deref(), req.body_user.as_deref());
        super::keyed::allowed(key, &plan.name, &req.model)?;
    }
    let (plan, escalated) =
        crate::escalation::rules::choose(&gw.config.escalation, &gw.cascades, &gw.metrics, plan, &req, escalate);
    let now = crate::health::clock::now_ms();
    let plan = gw.shared.usage.budget_plan(&gw.config, &gw.shared.discovery, plan, now);
    let (plan, load_relief) = super::keyed::fair_plan(gw, plan, who, &req, now);
    req.load_relief = load_relief;
    // The key's share, reserved before the runner and settled when the
    // answer ends (the tab drops: here, or with the stream's meter).
    let tab = match &who.key {
        Some(key) => Some(super::keyed::admit(gw, key, who, &req, &plan, notes).await?),
        None => None,
    };
    if let Some(j) = &req.journal {
        j.request(&plan.name, &req.model, req.stream, "chat");
    }
    let mut served = match cascade::run(gw.runner(), &plan, &req).await {
        Ok(served) => served,
        Err(unanswered) => match Box::pin(unanswered_request(gw, &plan, &req, unanswered, notes)).await {
            Ok(served) => served,
            Err(e) => {
                if let Some(j) = &req.journal {
                    j.status(e.status().as_u16(), Some(e.to_string()));
                }
                return Err(e);
            }
        },
    };
    served.escalated = escalated;
    let journal = req.journal.as_deref();
    if let Some(j) = journal {
        j.served(crate::journal::Served {
            model: &served.model,
            tier: served.tier.as_str(),
            rank: served.rank,
            load_profile: served.load_profile.as_deref(),
            handoff_id: served.handoff_id.as_deref(),
            escalated,
        });
    }
    crate::usage::observe((&**gw).into(), &gw.shared.usage, &plan, &served, now, journal);
    if let Some(tab) = &tab {
        super::keyed::whole_usage(gw, tab, &served);
    }
    if let ServedBody::Forward(f) = &mut served.body {
        f.meter(super::keyed::meter(gw, gw.books().meter(&plan.name, req.journal.clone()), tab));
        if let Some(link) = notes.link() {
            f.bind(link.clone());
        }
        if plan.continue_streams && plan.targets.len() > 1 {
            f.continue_with(gw.runner_owned(), plan.clone(), req);
        }
    }
    Ok(served)
}

/// Who sent the request and (when content is recorded) its messages, for
/// its journal: the virtual key's id (none for `server.api_keys` and
/// open gateways) and the end user — `x-spillway-user`, else the body's
/// `user`, `safety_identifier` or Anthropic `metadata.user_id`.
fn journal_request(journal: &crate::journal::Journal, req: &ChatRequest, who: &Who) {
    let user = req
        .end_user
        .clone()
        .or_else(|| crate::tenancy::admit::end_user(who.user_header.as_deref(), req.body_user.as_deref()))
        .or_else(|| req.user.clone());
    journal.caller(who.key.as_ref().map(|k| k.id.clone()), user);
    journal.prompt(|| req.body().get("messages").map(ToString::to_string));
}

/// No model answered: the handoff when the cascade has one, else the error
/// — and the request's outcome either way.
async fn unanswered_request(
    gw: &Gateway,
    plan: &CascadePlan,
    req: &ChatRequest,
    un: Unanswered,
    notes: &RequestNotes,
) -> Result<Served, ApiError> {
    let Unanswered { why, attempts, calls, finish } = un;
    notes.set_attempts(calls);
    let timed_out = match why {
        NoAnswer::Rejected(e) | NoAnswer::Invalid(e) => {
            finish.settle(RequestOutcome::Error);
            return Err(e);
        }
        NoAnswer::TimedOut => true,
        NoAnswer::AllFailed => false,
    };
    // Past `timeouts.total` the models may only be slow, not dead.
    if !timed_out {
        gw.shared.alerts.cascade_dead(&plan.name);
    }
    if plan.handoff {
        // The last tier, also after the deadline: a person answers instead.
        match crate::handoff::queue(gw.handoff(), plan, req, &attempts, calls).await {
            Ok(served) => {
                finish.settle(RequestOutcome::Handoff);
                return Ok(served);
            }
            Err(e) => {
                tracing::error!(cascade = %plan.name, error = %e, "Cannot queue a request for a person; answering 503.");
                finish.settle(RequestOutcome::Error);
                notes.set_retry_after(plan.back_in(crate::health::clock::now_ms()));
                return Err(ApiError::AllModelsFailed { cascade: plan.name.clone(), attempts });
            }
        }
    }
    finish.settle(RequestOutcome::Error);
    if timed_out {
        return Err(ApiError::Timeout);
    }
    notes.set_retry_after(plan.back_in(crate::health::clock::now_ms()));
    Err(ApiError::AllModelsFailed { cascade: plan.name.clone(), attempts })
}

/// The SSE events of a streamed answer.
pub(super) type Events = BoxStream<'static, Result<Bytes, Infallible>>;

/// An answer's body on its way out: a whole JSON body, or SSE events.
pub(super) enum Answer {
    Whole(Bytes),
    Events(Events),
}

/// The chat completion as the client asked for it: the whole body, or its
/// events as they arrive; its headers not laid out yet.
fn respond(served: Served, permit: Permit) -> (Response, AnswerHeaders) {
    respond_laid(served, permit, |answer| answer)
}

/// A served chat answer in another entry point's format: `translate`
/// turns a whole `chat.completion` body into that format's JSON body, or
/// the chat SSE stream (chunks, the error event, `[DONE]`) into that
/// format's event stream, as it passes. The headers are the same for all.
pub(super) fn respond_with(served: Served, permit: Permit, translate: impl FnOnce(Answer) -> Answer) -> Response {
    let (mut r, laid) = respond_laid(served, permit, translate);
    laid.into_map(r.headers_mut());
    r
}

/// [`respond_with`], its headers handed back to be laid out by the caller.
fn respond_laid(served: Served, permit: Permit, translate: impl FnOnce(Answer) -> Answer) -> (Response, AnswerHeaders) {
    let Served {
        cascade,
        model,
        tier,
        rank,
        attempts,
        load_profile,
        handoff_id,
        escalated,
        body,
        upstream_request_id,
        quality,
        ..
    } = served;
    let mut laid = AnswerHeaders {
        streamed: false,
        quality: None,
        cascade,
        model,
        tier,
        rank,
        attempts,
        load_profile,
        handoff_id,
        escalated,
        upstream_request_id,
    };
    let stream = match body {
        ServedBody::Complete(c) => {
            drop(permit);
            // Its exact size (shrunk in place): a `Bytes` made from a vector
            // with room to spare allocates a shared header besides.
            let bytes = Bytes::from(c.to_bytes().into_boxed_slice());
            let bytes = match translate(Answer::Whole(bytes)) {
                Answer::Whole(b) => b,
                // A whole answer stays whole; no translation makes it a stream.
                Answer::Events(_) => Bytes::new(),
            };
            laid.quality = (!quality.is_empty()).then(|| quality.labels());
            return (Response::new(Body::from(bytes)), laid);
        }
        ServedBody::Forward(f) => f.into_stream(),
        ServedBody::Canned(s) => s,
    };
    let stream = match translate(Answer::Events(stream)) {
        Answer::Events(s) => s,
        Answer::Whole(b) => futures_util::stream::once(async move { Ok(b) }).boxed(),
    };
    // The permit lives as long as the stream does.
    let s = stream.map(move |chunk| {
        let _held = &permit;
        chunk
    });
    laid.streamed = true;
    (Response::new(Body::from_stream(s)), laid)
}

/// What stopped the server reading a request's body, if it was that: the
/// error itself, or inside the one the router's body wraps it in.
fn body_failure(e: &(dyn std::error::Error + 'static)) -> Option<super::http1::BodyError> {
    std::iter::successors(Some(e), |e| e.source()).find_map(|e| e.downcast_ref().copied())
}
