//! Routes and handlers of the client API (SPEC §5).
//!
//! `POST /v1/chat/completions` checks the client key, the concurrency
//! limit and the body size, validates the request, resolves the cascade and
//! hands it to the runner; the answer comes back with the
//! `x-spillway-*` headers. The rest are small read-only endpoints.

use super::{auth, AppState};
use crate::api::{ApiError, ChatRequest};
use crate::cascade::{self, Served, ServedBody};
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures_util::StreamExt;
use serde_json::json;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Builds the router.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_route))
        .route("/v1/models", get(models))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/ui", get(super::ui::page))
        .merge(super::admin::router(state.clone()))
        .merge(super::handoff_routes::client_routes())
        .fallback(|| async { ApiError::NotFound })
        // The handler enforces `max_body_bytes` itself (413 in OpenAI shape).
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

/// Holds one slot of `max_concurrent_requests`.
struct Permit(Arc<AppState>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

async fn chat_route(State(state): State<Arc<AppState>>, request: Request) -> Response {
    chat(state, request).await
}

/// `POST /v1/chat/completions`. The server calls it directly, without the
/// router (see `server::Front`); the route above serves the same handler to
/// anything that goes through the router.
pub(crate) async fn chat<B>(state: Arc<AppState>, request: http::Request<B>) -> Response
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    match chat_inner(state, request).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn chat_inner<B>(state: Arc<AppState>, request: http::Request<B>) -> Result<Response, ApiError>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let gw = state.gateway.load_full();
    let server = &gw.config.server;
    let mut caller = None;
    if !server.api_keys.is_empty() {
        let key = auth::bearer(request.headers()).ok_or(ApiError::Unauthorized)?;
        caller = Some(auth::find(&server.api_keys, key).ok_or(ApiError::Unauthorized)?.clone());
    }
    let escalate = crate::escalation::rules::forced(request.headers());
    if state.in_flight.fetch_add(1, Ordering::AcqRel) >= server.max_concurrent_requests {
        state.in_flight.fetch_sub(1, Ordering::AcqRel);
        return Err(ApiError::Overloaded);
    }
    let permit = Permit(state.clone());
    let limit = server.max_body_bytes;
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(ApiError::BodyTooLarge(limit));
    }
    let bytes = crate::providers::http::read_to_end(request.into_body(), limit)
        .await
        .map_err(|_| ApiError::BodyTooLarge(limit))?;
    let mut req = ChatRequest::parse(bytes)?;
    req.caller = caller;
    let plan = gw.resolve(&req.model).ok_or_else(|| ApiError::ModelNotFound(req.model.clone()))?;
    let (plan, escalated) = crate::escalation::rules::choose(&gw, plan, &req, escalate);
    let plan = gw.shared.usage.budget_plan(&gw, plan, crate::health::clock::now_ms());
    let mut served = cascade::run(&gw, &plan, req).await?;
    served.escalated = escalated;
    crate::usage::observe(&gw, &plan, &served);
    Ok(respond(served, permit))
}

// Checked at compile time (`from_static` in a const), not per response.
const X_CASCADE: HeaderName = HeaderName::from_static("x-spillway-cascade");
const X_MODEL: HeaderName = HeaderName::from_static("x-spillway-model");
const X_TIER: HeaderName = HeaderName::from_static("x-spillway-tier");
const X_ATTEMPTS: HeaderName = HeaderName::from_static("x-spillway-attempts");
const X_LOAD_PROFILE: HeaderName = HeaderName::from_static("x-spillway-load-profile");
const X_HANDOFF_ID: HeaderName = HeaderName::from_static("x-spillway-handoff-id");
const X_ESCALATED: HeaderName = HeaderName::from_static("x-spillway-escalated");
const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");

/// A small count as a header value without allocating.
fn count_value(n: u32) -> HeaderValue {
    const DIGITS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
    usize::try_from(n)
        .ok()
        .and_then(|i| DIGITS.get(i))
        .map_or_else(|| HeaderValue::from(n), |d| HeaderValue::from_static(d))
}

fn header_value(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
}

fn respond(served: Served, permit: Permit) -> Response {
    let Served { cascade, model, tier, attempts, load_profile, handoff_id, escalated, body, .. } = served;
    let mut resp = match body {
        ServedBody::Complete(c) => {
            drop(permit);
            let bytes = c.to_bytes();
            let mut r = Response::new(Body::from(bytes));
            r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            r
        }
        ServedBody::Stream(s) => {
            // The permit lives as long as the stream does.
            let s = s.map(move |chunk| {
                let _held = &permit;
                chunk
            });
            let mut r = Response::new(Body::from_stream(s));
            let h = r.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            h.insert(X_ACCEL_BUFFERING, HeaderValue::from_static("no"));
            r
        }
    };
    let h = resp.headers_mut();
    h.insert(X_CASCADE, header_value(&cascade));
    h.insert(X_MODEL, header_value(&model));
    h.insert(X_TIER, HeaderValue::from_static(tier.as_str()));
    h.insert(X_ATTEMPTS, count_value(attempts));
    if let Some(profile) = load_profile {
        h.insert(X_LOAD_PROFILE, header_value(&profile));
    }
    if let Some(id) = handoff_id {
        h.insert(X_HANDOFF_ID, header_value(&id));
    }
    if escalated {
        h.insert(X_ESCALATED, HeaderValue::from_static("true"));
    }
    resp
}

async fn models(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Result<Response, ApiError> {
    let gw = state.gateway.load_full();
    let keys = &gw.config.server.api_keys;
    if !keys.is_empty() && auth::bearer(&headers).and_then(|k| auth::find(keys, k)).is_none() {
        return Err(ApiError::Unauthorized);
    }
    let created = crate::api::wire::now_unix();
    let mut data = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (name, plan) in &gw.cascades {
        let refs: Vec<&str> = plan.targets.iter().map(|t| t.name.as_str()).collect();
        data.push(
            json!({"id": name, "object": "model", "created": created, "owned_by": "spillway", "spillway_models": refs}),
        );
    }
    for plan in gw.cascades.values() {
        for t in &plan.targets {
            if seen.insert(t.name.clone()) {
                data.push(
                    json!({"id": t.name, "object": "model", "created": created, "owned_by": t.model_ref.provider}),
                );
            }
        }
    }
    Ok(axum::Json(json!({"object": "list", "data": data})).into_response())
}

async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    let gw = state.gateway.load();
    // Degraded (Redis unreachable) still serves from local state: 200, and the body says so.
    let status = if gw.shared.state.degraded() { "degraded" } else { "ready" };
    let body = json!({"status": status, "cascades": gw.cascades.len(), "state": gw.shared.state.view()});
    (StatusCode::OK, axum::Json(body)).into_response()
}

/// `GET /metrics`: the Prometheus text format (0.0.4), or OpenMetrics to a
/// scraper that asks for it (`Accept: application/openmetrics-text`, as
/// Prometheus itself does).
async fn metrics(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let gw = state.gateway.load_full();
    crate::health::registry::export_gauges(&gw.health, &state.metrics);
    crate::handoff::depth(&gw).await;
    let text = state.metrics.render();
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let (body, content_type) = if openmetrics {
        (text, "application/openmetrics-text; version=1.0.0; charset=utf-8")
    } else {
        (crate::metrics::to_prometheus_text(&text), "text/plain; version=0.0.4; charset=utf-8")
    };
    let mut r = Response::new(Body::from(Bytes::from(body)));
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}
