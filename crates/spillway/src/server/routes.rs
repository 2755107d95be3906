//! Routes and handlers of the client API (SPEC §5).
//!
//! `POST /v1/chat/completions` is served by [`super::chat`]; the rest are
//! small read-only endpoints.

use super::{auth, AppState};
use crate::api::ApiError;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;
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

async fn chat_route(State(state): State<Arc<AppState>>, request: Request) -> Response {
    super::chat::chat(state, request).await
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
