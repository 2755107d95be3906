//! `POST /v1/completions`: the legacy Completions API through the chat
//! core (`api::legacy` translates; [`chat::serve`] does the rest, as
//! for the Responses and Messages APIs). The answer is a
//! `text_completion`, or its stream.

use super::auth::bearer;
use super::chat::{self, admit, respond_with, Admitted, Answer};
use super::AppState;
use crate::api::legacy::{from_completion, to_chat, Legacy};
use crate::api::reframe::reframe;
use crate::api::{ApiError, ChatRequest};
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The route.
pub async fn completions(State(state): State<Arc<AppState>>, request: Request) -> Response {
    match respond(state, request).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn respond(state: Arc<AppState>, request: Request) -> Result<Response, ApiError> {
    let Admitted { gw, body, caller, escalate, who, permit, notes } = admit(state, request, bearer).await?;
    let (chat_body, echo) = to_chat(&body)?;
    let mut req = ChatRequest::from_map(chat_body)?;
    req.caller = caller;
    let served = chat::serve(&gw, req, escalate, &notes, &who).await?;
    Ok(respond_with(served, permit, move |answer| match answer {
        Answer::Whole(bytes) => {
            let chat: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            Answer::Whole(Bytes::from(from_completion(&chat, &echo).to_string()))
        }
        Answer::Events(events) => Answer::Events(reframe(events, Legacy::new(echo))),
    }))
}
