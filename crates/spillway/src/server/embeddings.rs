//! `POST /v1/embeddings` (SPEC §5): an embeddings request through an
//! embedding cascade.
//!
//! The same intake as chat (client key, bounded body, concurrency slot),
//! then the request validated ([`EmbeddingRequest::parse`]), the cascade
//! resolved among embedding cascades (`model`: its name, `auto` for the
//! first, or a `provider/model` ref), the daily budget, and the embedding
//! runner ([`cascade::embed::run`]). After it, here as for chat: the
//! tokens and their cost, the fallback-share counters, and the error when
//! no model answered (there is no handoff for embeddings: a person cannot
//! write vectors). The answer carries the same `x-spillway-*` headers.

use super::answer_headers::AnswerHeaders;
use super::auth::bearer;
use super::chat::{admit, Admitted};
use super::AppState;
use crate::api::embeddings::{encode, EmbeddingRequest};
use crate::api::ApiError;
use crate::cascade::{self, NoAnswer, RequestOutcome};
use crate::usage::Tokens;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The route.
pub async fn embeddings(State(state): State<Arc<AppState>>, request: Request) -> Response {
    match embed(state, request).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn embed(state: Arc<AppState>, request: Request) -> Result<Response, ApiError> {
    let Admitted { gw, body, caller, who, permit, notes, .. } = admit(state, request, bearer).await?;
    let mut req = EmbeddingRequest::parse(&body)?;
    req.caller = caller;
    req.request_id = Some(notes.id.clone());
    req.journal = notes.journal().cloned();
    if let Some(j) = &req.journal {
        let user = who.user_header.clone().or_else(|| req.user.clone());
        j.caller(who.key.as_ref().map(|k| k.id.clone()), user.map(|u| u.chars().take(256).collect()));
    }
    let plan = gw
        .resolve_embedding(&req.model)
        .ok_or_else(|| super::kinds::unresolved(&gw, &req.model, crate::config::CascadeKind::Embedding))?;
    if let (Some(asked), Some(most)) = (req.dimensions, cascade::embed::known_dimension(&plan)) {
        if asked > most {
            return Err(ApiError::InvalidField {
                param: "dimensions".into(),
                message: format!(
                    "`{}` returns vectors of {most} values; `dimensions` can only shorten them",
                    plan.name
                ),
            });
        }
    }
    let now = crate::health::clock::now_ms();
    let plan = gw.shared.usage.budget_plan(&gw.config, &gw.shared.discovery, plan, now);
    let tab = match &who.key {
        Some(key) => {
            super::keyed::allowed(key, &plan.name, &req.model)?;
            let user = who.user_header.clone().or_else(|| req.user.clone());
            let (tokens, usd) = super::keyed::embedding_reservation(&gw, &plan, req.input.tokens());
            Some(super::keyed::admit_tokens(&gw, key, user, tokens, usd, &notes).await?)
        }
        None => None,
    };
    if let Some(j) = &req.journal {
        j.request(&plan.name, &req.model, false, "embeddings");
    }
    let done = match cascade::embed::run(gw.runner(), &plan, &req).await {
        Ok(done) => done,
        Err(un) => {
            un.finish.settle(RequestOutcome::Error);
            notes.set_attempts(un.calls);
            return Err(match un.why {
                NoAnswer::Rejected(e) | NoAnswer::Invalid(e) => e,
                NoAnswer::TimedOut => ApiError::Timeout,
                NoAnswer::AllFailed => {
                    gw.shared.alerts.cascade_dead(&plan.name);
                    notes.set_retry_after(plan.back_in(now));
                    ApiError::AllModelsFailed { cascade: plan.name.clone(), attempts: un.attempts }
                }
            });
        }
    };
    drop(permit);
    let Some(target) = plan.targets.get(done.index) else {
        return Err(ApiError::AllModelsFailed { cascade: plan.name.clone(), attempts: Vec::new() });
    };
    let prompt_tokens = done.vectors.prompt_tokens.unwrap_or_else(|| req.input.tokens());
    // Cost and fallback share as for a whole chat answer (`usage::observe`).
    gw.shared.alerts.traffic.record_model(&plan.name, &target.name, target.rank > 1, now);
    gw.shared.alerts.cascade_answered(&plan.name);
    let books = crate::usage::Books { handles: Some(&target.metrics.usage), ..(&*gw).into() };
    let tokens = Tokens { input: prompt_tokens, output: 0 };
    let cost = gw.shared.usage.record(books, &plan.name, &target.name, Some(tokens), now);
    if let Some(j) = &req.journal {
        j.usage(tokens.input, 0, cost);
        let tier = target.tier.as_str();
        let served =
            crate::journal::Served { model: &target.name, tier, rank: Some(target.rank), ..Default::default() };
        j.served(served);
    }
    if let Some(tab) = tab {
        super::keyed::add_usage(&gw, &tab, &target.name, prompt_tokens, 0);
    }
    let bytes = encode(&target.name, &done.vectors.data, req.base64, prompt_tokens);
    let mut r = Response::new(Body::from(bytes));
    let laid = AnswerHeaders {
        streamed: false,
        quality: None,
        cascade: plan.name.clone(),
        model: target.name.clone(),
        tier: target.tier,
        rank: Some(target.rank),
        attempts: done.calls,
        load_profile: None,
        handoff_id: None,
        escalated: false,
        upstream_request_id: done.vectors.upstream_request_id,
    };
    laid.into_map(r.headers_mut());
    Ok(r)
}
