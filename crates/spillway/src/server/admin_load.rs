//! `PUT /admin/load/{provider}` (set an `emulated` load, SPEC §9) and
//! `GET /admin/load` (every monitored provider's load and profile).
//!
//! Setting a load publishes it at once, through the same hysteresis
//! selector a monitor uses, so a drill sees the profile change on the next
//! request. `{"load": null}` makes the load unknown again (first profile).

use super::AppState;
use crate::api::ApiError;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::Arc;

/// Routes of this file (mounted behind the admin token).
pub fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/admin/load", get(list)).route("/admin/load/{provider}", put(set))
}

async fn list(State(state): State<Arc<AppState>>) -> Json<Value> {
    Json(json!({ "providers": state.gateway.load().load.snapshot() }))
}

async fn set(State(state): State<Arc<AppState>>, Path(provider): Path<String>, body: Bytes) -> Response {
    let load = match parse(&body) {
        Ok(l) => l,
        Err(e) => return e.into_response(),
    };
    let gw = state.gateway.load();
    let Some(monitored) = gw.load.get(&provider) else {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("provider `{provider}` does not exist or has no `load` section"),
        );
    };
    match monitored.set_emulated(load) {
        Ok(()) => Json(monitored.snapshot()).into_response(),
        Err(e) => error(StatusCode::CONFLICT, "not_emulated", e.to_string()),
    }
}

/// `{"load": <0..1 or null>}`.
fn parse(body: &[u8]) -> Result<Option<f64>, ApiError> {
    let invalid = |message: &str| ApiError::InvalidField { param: "load".into(), message: message.into() };
    let value: Value = serde_json::from_slice(body).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    match value.get("load") {
        None => Err(invalid("missing field `load` (a number from 0 to 1, or null)")),
        Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(l) if (0.0..=1.0).contains(&l) => Ok(Some(l)),
            _ => Err(invalid("`load` must be a number from 0 to 1, or null")),
        },
    }
}

/// An OpenAI-shaped error for the cases [`ApiError`] has no variant for.
fn error(status: StatusCode, code: &str, message: String) -> Response {
    let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}});
    (status, Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_loads_and_rejects_the_rest() {
        assert_eq!(parse(br#"{"load": 0.93}"#).unwrap(), Some(0.93));
        assert_eq!(parse(br#"{"load": 1}"#).unwrap(), Some(1.0));
        assert_eq!(parse(br#"{"load": null}"#).unwrap(), None);
        for bad in [&br#"{"load": 1.5}"#[..], br#"{"load": "high"}"#, br#"{}"#, b"[1]"] {
            assert!(matches!(parse(bad), Err(ApiError::InvalidField { .. })), "{bad:?}");
        }
        assert!(matches!(parse(b"nope"), Err(ApiError::InvalidJson(_))));
    }
}
