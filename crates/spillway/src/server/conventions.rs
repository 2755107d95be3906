//! What every response carries, whatever route served it (issue 19 §3):
//! the request's id, CORS, and the back-off hints of an error.
//!
//! The server's front door ([`super::Front`]) calls [`enter`] before any
//! handler and [`leave`] on the response: the request id is the client's
//! `x-request-id` (or a new one), put into the request's extensions as
//! [`RequestNotes`] for the handlers, named by the `request` span that
//! every log line about the request sits in (also while a streamed body
//! is being sent), and returned as `x-request-id` on every response. An
//! error response gets `x-spillway-attempts` (upstream calls made; 0 when
//! it failed before the runner) and a 503 the `Retry-After` the handler
//! noted. With `server.cors` set, a preflight (`OPTIONS` with `Origin`) is
//! answered here with 204, and responses to allowed origins carry
//! `Access-Control-Allow-Origin` and the headers a browser may read.

use crate::client_link::ClientLink;
use crate::config::CorsConfig;
use crate::telemetry::{RequestId, RequestNotes};
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;
use hyper::body::{Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The request id, as clients send it and get it back.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
const X_ATTEMPTS: HeaderName = HeaderName::from_static("x-spillway-attempts");
/// What a browser may read of a cross-origin answer.
const EXPOSE: &str = "x-request-id, request-id, retry-after, x-spillway-cascade, x-spillway-model, \
x-spillway-tier, x-spillway-attempts, x-spillway-load-profile, x-spillway-handoff-id, x-spillway-escalated, \
x-spillway-upstream-request-id, x-spillway-rank, x-spillway-quality, x-ratelimit-limit-requests, \
x-ratelimit-remaining-requests, x-ratelimit-reset-requests, x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens, \
x-ratelimit-reset-tokens";

/// A request at the front door: its notes, and what [`leave`] needs.
pub(super) struct Entered {
    pub notes: Arc<RequestNotes>,
    pub span: tracing::Span,
    /// The `Origin` it came from, when CORS lets that origin in.
    allowed_origin: Option<HeaderValue>,
}

/// Names the request and answers a CORS preflight (`Err`: the response);
/// the notes (with `link`, the connection it came on) go to the handler
/// with the request: as an argument to the chat handler, in the request's
/// extensions through the router ([`carry`]).
pub(super) fn enter<B>(
    req: &mut http::Request<B>,
    cors: Option<&CorsConfig>,
    link: Option<Arc<ClientLink>>,
) -> Result<Entered, Box<Response>> {
    let id = RequestId::from_client(crate::api::headers::find(req.headers(), &X_REQUEST_ID).map(HeaderValue::as_bytes));
    let notes = RequestNotes::on(id, link);
    let allowed_origin = cors.and_then(|c| allowed(c, req.headers()));
    if let Some(c) = cors.filter(|_| is_preflight(req)) {
        return Err(Box::new(preflight(c, req.headers(), allowed_origin, &notes)));
    }
    // `key` and `user` are filled in once a virtual key is identified.
    let span = tracing::info_span!(
        "request",
        request_id = %notes.id,
        key = tracing::field::Empty,
        user = tracing::field::Empty
    );
    Ok(Entered { notes, span, allowed_origin })
}

/// Puts a request's notes into its extensions, where the router's handlers
/// find them ([`notes`]).
pub(super) fn carry<B>(req: &mut http::Request<B>, entered: &Entered) {
    req.extensions_mut().insert(entered.notes.clone());
}

/// The notes the front door put into a request (a fresh set for a request
/// that did not pass it: `spillway drill`'s in-process calls).
pub fn notes<B>(req: &http::Request<B>) -> Arc<RequestNotes> {
    req.extensions().get::<Arc<RequestNotes>>().cloned().unwrap_or_else(|| RequestNotes::new(RequestId::generate()))
}

/// Adds the request id, an error's hints and CORS to a response, with
/// the headers of a chat answer (`laid`) laid out as lines after them; a
/// streamed body is polled inside the request's span.
pub(super) fn leave(
    mut resp: Response,
    laid: Option<super::answer_headers::AnswerHeaders>,
    entered: Entered,
) -> super::http1::Answer {
    let Entered { notes, span, allowed_origin } = entered;
    // The id as a line: a map built for it alone cost more than the line
    // (a request id is visible ASCII, checked where it is made).
    let mut lines = Vec::with_capacity(if laid.is_some() { 320 } else { 64 });
    if let Some(laid) = &laid {
        laid.write_lines(&mut lines);
    }
    lines.extend_from_slice(b"x-request-id: ");
    lines.extend_from_slice(notes.id.as_str().as_bytes());
    lines.extend_from_slice(b"\r\n");
    let status = resp.status();
    if let Some(journal) = notes.journal() {
        journal.status(status.as_u16(), None);
    }
    if status.is_client_error() || status.is_server_error() {
        let h = resp.headers_mut();
        if !h.contains_key(X_ATTEMPTS) {
            h.insert(X_ATTEMPTS, HeaderValue::from(notes.attempts()));
        }
        let backs_off = status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS;
        if let Some(s) = notes.retry_after_s().filter(|_| backs_off) {
            h.insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
    }
    for (name, value) in notes.rate_headers() {
        if let Ok(v) = HeaderValue::from_str(value) {
            resp.headers_mut().insert(HeaderName::from_static(name), v);
        }
    }
    if let Some(origin) = allowed_origin {
        let h = resp.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSE));
        h.append(header::VARY, HeaderValue::from_static("origin"));
    }
    let streamed = match &laid {
        Some(laid) => laid.streamed,
        None => {
            resp.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
        }
    };
    if streamed {
        resp = resp.map(|inner| Body::new(InSpan { inner, span }));
    }
    super::http1::Answer { response: resp, lines }
}

fn is_preflight<B>(req: &http::Request<B>) -> bool {
    req.method() == Method::OPTIONS && req.headers().contains_key(header::ORIGIN)
}

/// The request's `Origin`, when the config lets it in.
fn allowed(cors: &CorsConfig, headers: &HeaderMap) -> Option<HeaderValue> {
    let origin = headers.get(header::ORIGIN)?;
    let text = origin.to_str().ok()?;
    if cors.any_origin {
        return Some(HeaderValue::from_static("*"));
    }
    cors.allow_origins.iter().any(|o| o.eq_ignore_ascii_case(text)).then(|| origin.clone())
}

/// `OPTIONS` with `Origin`: 204, with the allowances when the origin is
/// allowed and without them when it is not (the browser then refuses).
fn preflight(
    cors: &CorsConfig,
    headers: &HeaderMap,
    allowed_origin: Option<HeaderValue>,
    notes: &RequestNotes,
) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(notes.id.as_str()) {
        h.insert(X_REQUEST_ID, v);
    }
    h.insert(
        header::VARY,
        HeaderValue::from_static("origin, access-control-request-method, access-control-request-headers"),
    );
    let Some(origin) = allowed_origin else {
        return r;
    };
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    // DELETE: `DELETE /v1/responses/{id}`.
    h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, DELETE, OPTIONS"));
    let requested = headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS);
    let allow_headers = if cors.allow_headers.split(", ").any(|h| h == "*") {
        // `*` is not honoured with credentials; echo what was asked.
        requested.cloned().unwrap_or_else(|| HeaderValue::from_static("*"))
    } else {
        let mut list = cors.allow_headers.clone();
        for name in requested.and_then(|v| v.to_str().ok()).unwrap_or_default().split(',') {
            let name = name.trim().to_ascii_lowercase();
            let listed = || list.split(", ").any(|h| h == name);
            if cors.allow_header_prefixes.iter().any(|p| name.starts_with(p.as_str())) && !listed() {
                list.push_str(", ");
                list.push_str(&name);
            }
        }
        HeaderValue::from_str(&list).unwrap_or_else(|_| HeaderValue::from_static("content-type"))
    };
    h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, allow_headers);
    h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from(cors.max_age.as_secs()));
    r
}

/// A streamed body polled (and dropped) inside its request's span, so the
/// log lines of a stream's end — settlement, a cut, a client that left —
/// carry the request id too.
struct InSpan {
    inner: Body,
    span: tracing::Span,
}

impl hyper::body::Body for InSpan {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let _entered = this.span.enter();
        Pin::new(&mut this.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for InSpan {
    fn drop(&mut self) {
        let _entered = self.span.enter();
        drop(std::mem::replace(&mut self.inner, Body::empty()));
    }
}
