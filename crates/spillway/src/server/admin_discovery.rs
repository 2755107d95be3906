//! `POST /admin/discovery/refresh` (fetch every listing now and rebuild the
//! discovered cascades) and `POST /admin/config/reload` (hot reload, SPEC
//! §4). Both answer when the work is applied, with what changed.

use super::AppState;
use crate::gateway::reload::ReloadError;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::json;
use std::sync::Arc;

/// Routes of this file (mounted behind the admin token).
pub fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/admin/discovery/refresh", post(refresh)).route("/admin/config/reload", post(reload))
}

async fn refresh(State(state): State<Arc<AppState>>) -> Response {
    let report = crate::gateway::refresh::refresh(&state.gateway).await;
    let changes: Vec<String> = report.changes.iter().map(ToString::to_string).collect();
    Json(json!({
        "at_unix_ms": report.at_ms,
        "providers": report.providers,
        "changes": changes,
        "diffs": report.changes,
        "cascades": report.cascades,
    }))
    .into_response()
}

async fn reload(State(state): State<Arc<AppState>>) -> Response {
    match crate::gateway::reload::reload(&state.gateway).await {
        Ok(r) => {
            let changes: Vec<String> = r.changes.iter().map(ToString::to_string).collect();
            Json(json!({
                "status": "reloaded",
                "path": r.path.display().to_string(),
                "changes": changes,
                "changed": r.changed,
                "message": if r.changed.is_empty() {
                    "nothing changed".to_string()
                } else {
                    format!("changed: {}", r.changed.join("; "))
                },
                "needs_restart": r.needs_restart,
            }))
            .into_response()
        }
        Err(e) => {
            let status = match e {
                ReloadError::NoFile => StatusCode::CONFLICT,
                ReloadError::Invalid(_) | ReloadError::Build(_) => StatusCode::UNPROCESSABLE_ENTITY,
            };
            let errors = e.lines();
            let message = format!("config reload rejected; the running config stays: {}", errors.join("; "));
            let body = json!({
                "error": {"message": message, "type": "invalid_request_error", "param": null, "code": "config_rejected"},
                "errors": errors,
            });
            (status, Json(body)).into_response()
        }
    }
}
