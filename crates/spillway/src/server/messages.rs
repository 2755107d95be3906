//! `POST /v1/messages` (SPEC §5): the Anthropic Messages API through the
//! same chat core as `/v1/chat/completions`, so Anthropic SDKs and coding
//! agents that speak it can use any cascade; and `POST
//! /v1/messages/count_tokens`, which such agents call first.
//!
//! The client's key comes as `x-api-key` or `Authorization: Bearer` (the
//! SDK sends whichever it was given); `anthropic-version` is required, as
//! Anthropic requires it (any version is accepted: the translation does
//! not depend on it). Then the request is translated into a chat request
//! (`api::messages::to_chat`), [`chat::serve`] runs it like any chat
//! request, and the answer goes back as a `message` or as Anthropic's
//! stream events, re-framed as the chat stream passes. Every error,
//! from the intake's 401 to the runner's 503, is in Anthropic's shape.

use super::auth::bearer;
use super::chat::{self, admit, respond_with, Admitted, Answer};
use super::AppState;
use crate::api::messages::{error, from_completion, to_chat, Events};
use crate::api::reframe::reframe;
use crate::api::{ApiError, ChatRequest};
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

const REQUEST_ID: HeaderName = HeaderName::from_static("request-id");

/// The client key of an Anthropic client: `x-api-key`, else Bearer.
pub fn api_key(headers: &HeaderMap) -> Option<&str> {
    headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(str::trim).or_else(|| bearer(headers))
}

/// An error as Anthropic clients expect it, with a `request-id` (the
/// request's id, as `x-request-id` carries it).
pub(super) fn anthropic_error(e: &ApiError, id: &str) -> Response {
    let mut r = (e.status(), axum::Json(error::body(e, id))).into_response();
    if let Ok(v) = HeaderValue::from_str(id) {
        r.headers_mut().insert(REQUEST_ID, v);
    }
    if matches!(e, ApiError::Overloaded | ApiError::ShuttingDown) {
        r.headers_mut().insert(axum::http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

fn check_version(headers: &HeaderMap) -> Result<(), ApiError> {
    if headers.get("anthropic-version").is_none() {
        return Err(ApiError::InvalidField {
            param: "anthropic-version".into(),
            message: "anthropic-version: header is required (e.g. 2023-06-01)".into(),
        });
    }
    Ok(())
}

/// The route.
pub async fn messages(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let id = super::conventions::notes(&request).id.clone();
    match respond(state, request).await {
        Ok(r) => r,
        Err(e) => anthropic_error(&e, id.as_str()),
    }
}

async fn respond(state: Arc<AppState>, request: Request) -> Result<Response, ApiError> {
    check_version(request.headers())?;
    let Admitted { gw, body, caller, escalate, who, permit, notes } = admit(state, request, api_key).await?;
    let mut req = ChatRequest::from_map(to_chat(&body, false)?)?;
    req.caller = caller;
    let input_tokens = req.prompt_tokens;
    let served = chat::serve(&gw, req, escalate, &notes, &who).await?;
    let model = served.model.clone();
    let mut r = respond_with(served, permit, move |answer| match answer {
        Answer::Whole(bytes) => {
            let chat: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            Answer::Whole(Bytes::from(from_completion(&chat, &model).to_string()))
        }
        Answer::Events(events) => Answer::Events(reframe(events, Events::new(&model, input_tokens))),
    });
    if let Ok(v) = HeaderValue::from_str(notes.id.as_str()) {
        r.headers_mut().insert(REQUEST_ID, v);
    }
    Ok(r)
}

/// `POST /v1/messages/count_tokens`: the prompt's size as the gateway
/// estimates it (four characters a token: the answering model is not known
/// before the cascade runs, nor is its tokenizer).
pub async fn count_tokens(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let id = super::conventions::notes(&request).id.clone();
    let counted = async {
        check_version(request.headers())?;
        let Admitted { body, .. } = admit(state, request, api_key).await?;
        let req = ChatRequest::from_map(to_chat(&body, true)?)?;
        Ok::<_, ApiError>(axum::Json(serde_json::json!({"input_tokens": req.prompt_tokens})).into_response())
    };
    match counted.await {
        Ok(r) => r,
        Err(e) => anthropic_error(&e, id.as_str()),
    }
}
