//! `POST /v1/feedback`: a client rates an answer it got, by the request's
//! id (`x-request-id`, the one it sent or the one it was given):
//! `{"request_id": "...", "rating": "good" | "bad"}`. The rating feeds the
//! answering model's quality window (`health::quality`) like an answer
//! does: `bad` with the `feedback` signal, `good` with none. Only answers
//! of cascades with `quality:` can be rated, each once, while it is among
//! the last [`crate::health::feedback::RECENT`] judged answers; an unknown
//! or already rated id is a 404.
//!
//! A rating is tied to who made the request: the virtual key (`keys:`)
//! that sent it, the `server.api_keys` key, or anyone when clients need
//! no key. Another caller gets the same 404 as for an unknown id (whether
//! an id exists is not told), and the answer stays for its own caller;
//! the admin token (`server.admin_token`) may rate any answer.

use super::{auth, AppState};
use crate::api::ApiError;
use crate::health::feedback::Owner;
use crate::quality::{Signal, Signals};
use crate::tenancy::admit::Caller;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// The route.
pub fn routes() -> Router<Arc<AppState>> {
    // A rating is a few dozen bytes: the body is bounded here (the router
    // leaves body limits to each handler).
    Router::new().route("/v1/feedback", post(feedback)).layer(axum::extract::DefaultBodyLimit::max(4096))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rating {
    request_id: String,
    rating: String,
}

async fn feedback(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    match rate(&state, &headers, &body) {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

fn rate(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Result<serde_json::Value, ApiError> {
    let gw = state.gateway.load_full();
    let token = auth::bearer(headers);
    let admin = gw.config.server.admin_token.as_ref().is_some_and(|t| token.is_some_and(|g| auth::same(g, t.expose())));
    let caller = if admin { None } else { Some(auth::identify(&gw, token)?) };
    let r: Rating = serde_json::from_slice(body).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    let signals = match r.rating.as_str() {
        "bad" => Signals::NONE.with(Signal::Feedback),
        "good" => Signals::NONE,
        _ => {
            return Err(ApiError::InvalidField {
                param: "rating".into(),
                message: "`rating` must be `good` or `bad`".into(),
            })
        }
    };
    let judged = gw
        .health
        .recent
        .take(&r.request_id, |j| caller.as_ref().is_none_or(|c| owns(c, &j.owner)))
        .ok_or(ApiError::NotFound)?;
    if !signals.is_empty() {
        judged.metrics.quality(signals);
    }
    judged.model.record_quality(signals, &judged.rule, &gw.health.events);
    tracing::info!(model = %judged.model.key, rating = %r.rating, "Feedback on an answer.");
    Ok(json!({"request_id": r.request_id, "model": judged.model.key, "rating": r.rating}))
}

/// Whether `caller` made the request `owner` names.
fn owns(caller: &Caller, owner: &Owner) -> bool {
    match (caller, owner) {
        (Caller::Anyone, Owner::Anyone) => true,
        (Caller::Plain(given), Owner::Plain(made)) => auth::same(given.expose(), made.expose()),
        (Caller::Key(k), Owner::Key(id)) => k.id == *id,
        _ => false,
    }
}
