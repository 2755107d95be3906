//! The admin API (SPEC §5): `Authorization: Bearer <server.admin_token>`;
//! without a configured token every admin route answers 404, as if absent.

use super::AppState;
use crate::api::ApiError;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::sync::Arc;

/// The admin routes, behind the token check.
pub fn router(state: Arc<AppState>) -> Router<Arc<AppState>> {
    Router::new()
        .merge(crate::server::admin_state::routes())
        .merge(crate::server::admin_load::routes())
        .merge(crate::server::admin_keys::routes())
        .merge(crate::server::admin_discovery::routes())
        .merge(crate::server::handoff_routes::admin_routes())
        .layer(axum::middleware::from_fn_with_state(state, require_token))
}

async fn require_token(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let gw = state.gateway.load();
    let Some(token) = &gw.config.server.admin_token else {
        return ApiError::NotFound.into_response();
    };
    match super::auth::bearer(request.headers()) {
        Some(given) if super::auth::same(given, token.expose()) => next.run(request).await,
        _ => ApiError::Unauthorized.into_response(),
    }
}
