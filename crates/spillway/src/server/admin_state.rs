//! `GET /admin/state` and `POST /admin/models/{provider}/{model}/revive`.

use super::AppState;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::Arc;

/// Routes of this file.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/admin/state", get(state))
}

async fn state(State(state): State<Arc<AppState>>) -> Json<Value> {
    let gw = state.gateway.load();
    let cascades: Vec<Value> = gw
        .cascades
        .values()
        .map(|plan| {
            let models: Vec<Value> = plan
                .targets
                .iter()
                .map(|t| json!({"model": t.name, "tier": t.tier.as_str(), "in_flight": t.provider.in_flight()}))
                .collect();
            json!({"name": plan.name, "models": models})
        })
        .collect();
    Json(json!({"cascades": cascades, "state": {"backend": "memory", "degraded": false}}))
}
