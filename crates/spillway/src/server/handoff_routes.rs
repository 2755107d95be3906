//! The handoff queue over HTTP (SPEC §5, §8).
//!
//! Client side: `GET /v1/handoff/{id}` answers an item's status and, once a
//! person answered, the answer — only to the client key that sent the
//! request (any other key gets the same 404 as an unknown id, so ids cannot
//! be probed). Admin side (behind the admin token): `GET
//! /admin/handoff?status=open|answered` lists items with their messages and
//! attempts; `POST /admin/handoff/{id}/answer` with `{"text": …}` answers one.

use super::{auth, AppState};
use crate::api::ApiError;
use crate::handoff::{self, Answered, Status};
use crate::tenancy::admit::Caller;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// `GET /v1/handoff/{id}`.
pub fn client_routes() -> Router<Arc<AppState>> {
    Router::new().route("/v1/handoff/{id}", get(client_get))
}

/// The admin routes (mounted behind the admin token).
pub fn admin_routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/admin/handoff", get(list))
        .route("/admin/handoff/{id}/answer", post(answer))
        .route("/admin/handoff/{id}/close", post(close))
}

fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = json!({"error": {"message": message.into(), "type": code, "code": code, "param": null}});
    (status, Json(body)).into_response()
}

fn unavailable(e: &handoff::HandoffError) -> Response {
    tracing::warn!(error = %e, "The handoff store is unavailable.");
    error(StatusCode::SERVICE_UNAVAILABLE, "handoff_unavailable", "the handoff queue is unavailable; retry shortly")
}

fn not_found(id: &str) -> Response {
    error(StatusCode::NOT_FOUND, "not_found", format!("no handoff item `{id}`"))
}

async fn client_get(State(state): State<Arc<AppState>>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let gw = state.gateway.load_full();
    let caller = match auth::identify(&gw, auth::bearer(&headers)) {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    let q = match gw.shared.handoff.queue(&gw.config.state).await {
        Ok(q) => q,
        Err(e) => return unavailable(&e),
    };
    // An item queued while clients needed no key is readable by anyone
    // holding its id; one queued with a key only by that key.
    let item = match q.get(&id).await {
        Ok(Some(item)) => item,
        Ok(None) => return not_found(&id),
        Err(e) => return unavailable(&e),
    };
    let readable = match (item.client_key_id.as_deref(), &caller) {
        (None, _) => true,
        (Some(owner), Caller::Key(k)) => owner == handoff::key_id::key_owner(&k.id),
        (Some(owner), Caller::Plain(key)) => q.owns(owner, key.expose()).await,
        (Some(_), Caller::Anyone) => false,
    };
    if readable {
        Json(handoff::client_view(&item)).into_response()
    } else {
        not_found(&id)
    }
}

/// `?status=open|answered`.
#[derive(Debug, Deserialize)]
struct ListQuery {
    status: Option<String>,
}

async fn list(State(state): State<Arc<AppState>>, Query(query): Query<ListQuery>) -> Response {
    let status = match query.status.as_deref() {
        None | Some("" | "all") => None,
        Some(s) => match Status::parse(s) {
            Some(s) => Some(s),
            None => {
                return ApiError::InvalidField {
                    param: "status".into(),
                    message: "`status` must be `open` or `answered`".into(),
                }
                .into_response()
            }
        },
    };
    let gw = state.gateway.load_full();
    let q = match gw.shared.handoff.queue(&gw.config.state).await {
        Ok(q) => q,
        Err(e) => return unavailable(&e),
    };
    match q.list(status).await {
        Ok(items) => Json(json!({"object": "list", "data": items})).into_response(),
        Err(e) => unavailable(&e),
    }
}

/// `POST /admin/handoff/{id}/close`: done without an answer (spam, a
/// duplicate, solved elsewhere); the client's poll says `closed`.
async fn close(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    settle(&state, &id, handoff::CLOSE).await
}

async fn answer(State(state): State<Arc<AppState>>, Path(id): Path<String>, body: Bytes) -> Response {
    let text = match serde_json::from_slice::<Value>(&body) {
        Ok(v) => match v.get("text").and_then(Value::as_str).map(str::trim) {
            Some(t) if !t.is_empty() => t.to_string(),
            _ => {
                return ApiError::InvalidField {
                    param: "text".into(),
                    message: "`text` must be a non-empty string".into(),
                }
                .into_response()
            }
        },
        Err(e) => return ApiError::InvalidJson(e.to_string()).into_response(),
    };
    settle(&state, &id, &text).await
}

/// Answers (or, with [`handoff::CLOSE`], closes) an item once.
async fn settle(state: &AppState, id: &str, text: &str) -> Response {
    let gw = state.gateway.load_full();
    let q = match gw.shared.handoff.queue(&gw.config.state).await {
        Ok(q) => q,
        Err(e) => return unavailable(&e),
    };
    match q.answer(id, text, crate::health::clock::now_ms()).await {
        Ok(Answered::Done(item)) => {
            handoff::refresh_depth(&gw.metrics, q.as_ref()).await;
            let how = if item.closed { "closed without an answer" } else { "answered" };
            tracing::info!(id = %item.id, "A handoff item was {how}.");
            Json(item).into_response()
        }
        Ok(Answered::AlreadyAnswered(_)) => {
            error(StatusCode::CONFLICT, "already_answered", format!("handoff item `{id}` is already answered"))
        }
        Ok(Answered::Missing) => not_found(id),
        Err(e) => unavailable(&e),
    }
}
