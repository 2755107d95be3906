//! Routes and handlers of the client API (SPEC §5).
//!
//! `POST /v1/chat/completions` is served by [`super::chat`] (and usually
//! reaches it before the router, see `server::Front`); the Responses and
//! Messages APIs by [`super::responses`] and [`super::messages`], which
//! translate to the same chat core; `POST /v1/embeddings` by
//! [`super::embeddings`]; the rest are small read-only endpoints. Anything
//! else is an OpenAI-shaped 404 that names the routes.

use super::{auth, AppState};
use crate::api::ApiError;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;
use std::sync::Arc;

/// Builds the router.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_route))
        .route("/v1/completions", post(super::completions::completions))
        .route("/v1/responses", post(super::responses::responses))
        .route("/v1/messages", post(super::messages::messages))
        .route("/v1/messages/count_tokens", post(super::messages::count_tokens))
        .route("/v1/embeddings", post(super::embeddings::embeddings))
        .route("/v1/models", get(models))
        .route("/v1/models/{*id}", get(model))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        // LiteLLM's health routes, for what was pointed at a LiteLLM proxy.
        .route("/health", get(readyz))
        .route("/health/readiness", get(readyz))
        .route("/health/liveliness", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        .route("/ui", get(super::ui::page))
        .merge(super::admin::router(state.clone()))
        .merge(super::handoff_routes::client_routes())
        .merge(super::stored_routes::routes())
        .merge(super::feedback::routes())
        // After every route is added: it applies to the routes present.
        .method_not_allowed_fallback(wrong_method)
        .fallback(no_route)
        // The handler enforces `max_body_bytes` itself (413 in OpenAI shape).
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

async fn chat_route(State(state): State<Arc<AppState>>, request: Request) -> Response {
    super::chat::chat(state, request).await
}

/// Unknown method or path: a 404 in OpenAI's shape naming the routes.
async fn no_route(method: Method, uri: Uri) -> ApiError {
    let path: String = uri.path().chars().take(200).collect();
    ApiError::NoRoute(format!("{method} {path}"))
}

/// A known path with a method it does not serve: a 405 in the shape of
/// the path's API (Anthropic's under `/v1/messages`, else OpenAI's). The
/// router adds the `allow` header that lists the path's methods.
async fn wrong_method(method: Method, uri: Uri, request: Request) -> Response {
    let path: String = uri.path().chars().take(200).collect();
    let e = ApiError::MethodNotAllowed { method: method.to_string(), path: path.clone() };
    if path.starts_with("/v1/messages") {
        let id = super::conventions::notes(&request).id.clone();
        return super::messages::anthropic_error(&e, id.as_str());
    }
    e.into_response()
}

/// Client keys, where clients have them: Bearer, or `x-api-key` (what
/// Anthropic clients send; they list models too).
fn check_key(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let gw = state.gateway.load();
    let key = auth::bearer(headers).or_else(|| super::messages::api_key(headers));
    auth::identify(&gw, key).map(|_| ())
}

/// Every model object `/v1/models` lists: each cascade (with the model
/// refs in it), then each model ref once.
fn model_list(gw: &crate::gateway::Gateway) -> Vec<serde_json::Value> {
    let created = crate::api::wire::now_unix();
    let mut data = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (name, plan) in &gw.cascades {
        let refs: Vec<&str> = plan.targets.iter().map(|t| t.name.as_str()).collect();
        data.push(json!({"id": name, "object": "model", "created": created, "owned_by": "spillway",
            "spillway_kind": plan.kind.as_str(), "spillway_models": refs}));
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
    data
}

async fn models(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Result<Response, ApiError> {
    check_key(&state, &headers)?;
    let gw = state.gateway.load_full();
    Ok(axum::Json(json!({"object": "list", "data": model_list(&gw)})).into_response())
}

/// `GET /v1/models/{id}`: one cascade or model ref of the listing (`id`
/// may hold a `/`), else 404 `model_not_found`.
async fn model(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    check_key(&state, &headers)?;
    let gw = state.gateway.load_full();
    let found = model_list(&gw).into_iter().find(|m| m["id"].as_str() == Some(id.as_str()));
    match found {
        Some(m) => Ok(axum::Json(m).into_response()),
        None => Err(ApiError::ModelNotFound(id.chars().take(200).collect())),
    }
}

async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    let gw = state.gateway.load();
    if state.draining.load(std::sync::atomic::Ordering::Acquire) {
        // SIGTERM: out of the load balancer first, then the listener closes.
        let body = json!({"status": "draining", "cascades": gw.cascades.len(), "state": gw.shared.state.view()});
        return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    }
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
    gw.handoff_depth().await;
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
