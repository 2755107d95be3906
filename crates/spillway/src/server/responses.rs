//! `POST /v1/responses` (SPEC §5): the OpenAI Responses API through the
//! same chat core as `/v1/chat/completions`.
//!
//! The same intake (client key, bounded body, concurrency slot); the
//! request translated into a chat request (`api::responses::to_chat`) and
//! validated as one; then [`chat::serve`] — cascade, escalation, budget,
//! runner, handoff, cost — exactly as for chat. The answer goes back as a
//! `response` object, or the chat stream re-framed as the Responses event
//! stream as it passes (`api::reframe`). Errors keep OpenAI's shape.

use super::auth::bearer;
use super::chat::{self, admit, respond_with, Admitted, Answer};
use super::AppState;
use crate::api::reframe::reframe;
use crate::api::responses::{from_completion, to_chat, Events, Shell};
use crate::api::{ApiError, ChatRequest};
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The route.
pub async fn responses(State(state): State<Arc<AppState>>, request: Request) -> Response {
    match respond(state, request).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn respond(state: Arc<AppState>, request: Request) -> Result<Response, ApiError> {
    let Admitted { gw, body, caller, escalate, permit, notes } = admit(state, request, bearer).await?;
    let (chat_body, echo) = to_chat(&body)?;
    let mut req = ChatRequest::from_map(chat_body)?;
    req.caller = caller;
    let served = chat::serve(&gw, req, escalate, &notes).await?;
    let shell = Shell::new(&served.model, echo, crate::api::wire::now_unix());
    Ok(respond_with(served, permit, move |answer| match answer {
        Answer::Whole(bytes) => {
            let chat: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            Answer::Whole(Bytes::from(from_completion(&chat, &shell).to_string()))
        }
        Answer::Events(events) => Answer::Events(reframe(events, Events::new(shell))),
    }))
}
