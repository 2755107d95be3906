//! `GET /ui`: the operator console (SPEC §5, §8) — one static page that
//! shows the cascades with their health, the load profiles and the handoff
//! queue, and lets a person revive a model or answer a queued request.
//!
//! The page holds no data: its script asks for the admin token and calls
//! the admin API with it, so the page itself needs no credentials (a
//! browser cannot send a bearer token when navigating). Like the admin
//! API, it is off (404) when `server.admin_token` is not set.

use super::AppState;
use crate::api::ApiError;
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The page, embedded in the binary.
const PAGE: &str = include_str!("ui.html");

/// Scripts and styles are inline, calls go to this origin only, and
/// nothing may frame the page.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; \
                   img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Serves the console, or 404 when the admin API is off.
pub async fn page(State(state): State<Arc<AppState>>) -> Response {
    if state.gateway.load().config.server.admin_token.is_none() {
        return ApiError::NotFound.into_response();
    }
    let mut r = Response::new(axum::body::Body::from(PAGE));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    r
}
