//! The stored responses over HTTP: `GET /v1/responses/{id}` (the response
//! object as the client got it), `DELETE /v1/responses/{id}`, and
//! `GET /v1/responses/{id}/input_items` (the items it was asked with, each
//! with its id; `limit` 1–100, default 20, `order` `asc` or `desc`,
//! default `desc`, `after` an item id).
//!
//! Only the client key that stored a response finds it: any other key
//! gets the same 404 as an unknown id, so ids cannot be probed.

use super::{auth, AppState};
use crate::api::ApiError;
use crate::secret::Secret;
use crate::stored::turn::Turn;
use crate::stored::Record;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// The routes.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/v1/responses/{id}", get(read).delete(delete))
        .route("/v1/responses/{id}/input_items", get(input_items))
}

/// The caller: a plain key, a virtual key's id, or neither when clients
/// need no key (401 without a valid one).
fn caller(state: &AppState, headers: &HeaderMap) -> Result<(Option<Secret>, Option<String>), ApiError> {
    let gw = state.gateway.load();
    let who = auth::identify(&gw, auth::bearer(headers))?;
    Ok((who.plain().cloned(), who.key().map(|k| k.id.clone())))
}

/// The caller's stored response `id`, or the 404 of an unknown one.
async fn find(state: &AppState, headers: &HeaderMap, id: &str) -> Result<(Turn, Record), ApiError> {
    let (caller, key_id) = caller(state, headers)?;
    let gw = state.gateway.load_full();
    let missing = || ApiError::ResponseNotFound(id.chars().take(200).collect());
    if !gw.config.responses.store {
        return Err(missing());
    }
    let turn = Turn::open(super::responses::stores(&gw), caller.as_ref(), key_id.as_deref())
        .await
        .map_err(|e| crate::stored::turn::unavailable(&e))?;
    let (shelf, owner) = turn.parts();
    let record = crate::stored::get(shelf, owner, id)
        .await
        .map_err(|e| crate::stored::turn::unavailable(&e))?
        .ok_or_else(missing)?;
    Ok((turn, record))
}

async fn read(State(state): State<Arc<AppState>>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    match find(&state, &headers, &id).await {
        Ok((_, record)) => Json(record.response).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn delete(State(state): State<Arc<AppState>>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let deleted = async {
        let (turn, record) = find(&state, &headers, &id).await?;
        let (shelf, owner) = turn.parts();
        crate::stored::delete(shelf, owner, &record.id).await.map_err(|e| crate::stored::turn::unavailable(&e))
    };
    match deleted.await {
        Ok(_) => Json(json!({"id": id, "object": "response", "deleted": true})).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `input_items`' query.
#[derive(Debug, Deserialize)]
struct Page {
    limit: Option<String>,
    order: Option<String>,
    after: Option<String>,
}

fn invalid(param: &str, message: &str) -> ApiError {
    ApiError::InvalidField { param: param.into(), message: message.into() }
}

/// One page of `items` as OpenAI lists them.
fn page(items: &[Value], q: &Page) -> Result<Value, ApiError> {
    let limit = match q.limit.as_deref() {
        None => 20,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=100).contains(&n) => n,
            _ => return Err(invalid("limit", "`limit` must be an integer from 1 to 100")),
        },
    };
    let mut ordered: Vec<&Value> = items.iter().collect();
    match q.order.as_deref() {
        None | Some("desc") => ordered.reverse(),
        Some("asc") => {}
        Some(_) => return Err(invalid("order", "`order` must be `asc` or `desc`")),
    }
    if let Some(after) = q.after.as_deref() {
        let at = ordered.iter().position(|i| i.get("id").and_then(Value::as_str) == Some(after));
        let Some(at) = at else { return Err(invalid("after", "`after` names no item of this response")) };
        ordered.drain(..=at);
    }
    let has_more = ordered.len() > limit;
    ordered.truncate(limit);
    let id_of = |i: Option<&&Value>| i.and_then(|v| v.get("id")).cloned().unwrap_or(Value::Null);
    Ok(json!({"object": "list", "data": ordered, "first_id": id_of(ordered.first()),
        "last_id": id_of(ordered.last()), "has_more": has_more}))
}

async fn input_items(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<Page>,
) -> Response {
    let listed = async {
        let (_, record) = find(&state, &headers, &id).await?;
        page(&record.input, &q)
    };
    match listed.await {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(limit: Option<&str>, order: Option<&str>, after: Option<&str>) -> Page {
        Page { limit: limit.map(Into::into), order: order.map(Into::into), after: after.map(Into::into) }
    }

    #[test]
    fn pages_newest_first_by_default() {
        let items: Vec<Value> = (1..=5).map(|i| json!({"id": format!("msg_{i}")})).collect();
        let p = page(&items, &q(Some("2"), None, None)).unwrap();
        assert_eq!(
            (p["first_id"].as_str(), p["last_id"].as_str(), p["has_more"].as_bool()),
            (Some("msg_5"), Some("msg_4"), Some(true))
        );
        let p = page(&items, &q(None, Some("asc"), Some("msg_3"))).unwrap();
        assert_eq!(p["data"].as_array().unwrap().len(), 2);
        assert_eq!(p["has_more"], false);
        assert!(page(&items, &q(Some("0"), None, None)).is_err());
        assert!(page(&items, &q(None, Some("up"), None)).is_err());
    }
}
