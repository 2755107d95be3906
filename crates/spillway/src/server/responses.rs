//! `POST /v1/responses` (SPEC §5): the OpenAI Responses API through the
//! same chat core as `/v1/chat/completions`.
//!
//! The same intake (client key, bounded body, concurrency slot); what the
//! request takes from stored responses (`previous_response_id`,
//! `item_reference`) put in place from the store (`stored::turn`); the
//! request translated into a chat request (`api::responses::to_chat_map`)
//! and validated as one; then [`chat::serve`] — cascade, escalation,
//! budget, runner, handoff, cost — exactly as for chat. The answer goes
//! back as a `response` object, or the chat stream re-framed as the
//! Responses event stream as it passes (`api::reframe`); unless the client
//! said `store: false` (or `responses.store` is off) it is stored before
//! the client has all of it — a whole body before it is sent, a stream
//! before its `response.completed` — so the next turn can refer to it at
//! once. Errors keep OpenAI's shape.

use super::auth::bearer;
use super::chat::{self, admit, respond_with, Admitted, Answer};
use super::AppState;
use crate::api::reframe::reframe;
use crate::api::responses::history;
use crate::api::responses::{from_completion, to_chat_map, Events, Shell};
use crate::api::{ApiError, ChatRequest};
use crate::gateway::Gateway;
use crate::stored::turn::{Keeper, Stores, Turn};
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};

/// The route.
pub async fn responses(State(state): State<Arc<AppState>>, request: Request) -> Response {
    match respond(state, request).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

/// The stores of `gw`.
pub(super) fn stores(gw: &Gateway) -> Stores<'_> {
    Stores {
        archive: &gw.shared.responses,
        desk: &gw.shared.handoff,
        state: &gw.config.state,
        config: &gw.config.responses,
    }
}

async fn respond(state: Arc<AppState>, request: Request) -> Result<Response, ApiError> {
    let Admitted { gw, body, caller, escalate, who, permit, notes } = admit(state, request, bearer).await?;
    let body = history::parse(&body)?;
    let refs = history::references(&body)?;
    let keeps = gw.config.responses.store;
    let wants_store = keeps && !history::store_refused(&body);
    // The store is opened only when this request reads or writes it.
    let turn = if keeps && (wants_store || !refs.is_empty()) {
        match Turn::open(stores(&gw), caller.as_ref(), who.key.as_ref().map(|k| k.id.as_str())).await {
            Ok(t) => Some(t),
            Err(e) if refs.is_empty() => {
                // Answer anyway; only storing it is off.
                tracing::warn!(error = %e, "The response store is unavailable; answering without storing.");
                None
            }
            Err(e) => return Err(crate::stored::turn::unavailable(&e)),
        }
    } else {
        None
    };
    let (body, own) = match &turn {
        Some(t) => t.expand(body, &refs).await?,
        None => (body, Vec::new()),
    };
    let (chat_body, mut echo) = to_chat_map(body)?;
    let stored = wants_store && turn.is_some();
    echo.previous_response_id = refs.previous.clone().map_or(Value::Null, Value::String);
    echo.store = stored;
    let mut req = ChatRequest::from_map(chat_body)?;
    req.caller = caller;
    let served = chat::serve(&gw, req, escalate, &notes, &who).await?;
    let mut shell = Shell::new(&served.model, echo, crate::api::wire::now_unix());
    let keeper = match turn.filter(|_| stored) {
        Some(t) => {
            shell.id = crate::stored::new_id();
            Some(t.keeper(shell.id.clone(), refs.previous, own))
        }
        None => None,
    };
    // A whole answer's object and its keeper, to store before the body goes out.
    let slot: Arc<Mutex<Option<(Value, Keeper)>>> = Arc::default();
    let whole = slot.clone();
    let response = respond_with(served, permit, move |answer| match answer {
        Answer::Whole(bytes) => {
            let chat: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            let obj = from_completion(&chat, &shell);
            let text = obj.to_string();
            if let Some(k) = keeper {
                *whole.lock().unwrap_or_else(PoisonError::into_inner) = Some((obj, k));
            }
            Answer::Whole(Bytes::from(text))
        }
        Answer::Events(chat_events) => match keeper {
            None => Answer::Events(reframe(chat_events, Events::new(shell))),
            Some(k) => {
                let (done, finished) = tokio::sync::oneshot::channel();
                let frames = Events::new(shell).on_done(Box::new(move |obj| {
                    let _ = done.send(obj);
                }));
                Answer::Events(keep_before_the_end(reframe(chat_events, frames), finished, k))
            }
        },
    });
    let kept = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some((obj, keeper)) = kept {
        keeper.keep(obj).await;
    }
    Ok(response)
}

/// The Responses event stream `events`, which stores the finished response
/// (handed over by `finished`) before it lets the next event out — so the
/// client reads `response.completed` only once the response is stored.
fn keep_before_the_end(
    events: chat::Events,
    finished: tokio::sync::oneshot::Receiver<Value>,
    keeper: Keeper,
) -> chat::Events {
    futures_util::stream::unfold(
        (events, Some(finished), Some(keeper)),
        |(mut events, mut finished, mut keeper)| async move {
            let item = events.next().await?;
            if let Some(rx) = finished.as_mut() {
                match rx.try_recv() {
                    Ok(obj) => {
                        finished = None;
                        if let Some(k) = keeper.take() {
                            k.keep(obj).await;
                        }
                    }
                    Err(tokio::sync::oneshot::error::TryRecvError::Closed) => finished = None,
                    Err(tokio::sync::oneshot::error::TryRecvError::Empty) => {}
                }
            }
            Some((item, (events, finished, keeper)))
        },
    )
    .boxed()
}
