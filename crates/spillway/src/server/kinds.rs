//! A request's `model` that resolves to nothing: a cascade of the other
//! kind (`model: embeddings` on chat, a chat cascade on `/v1/embeddings`)
//! is the client's mistake, so a 400 that names the cascade's kind and the
//! cascades that fit; anything else the 404 `model_not_found`.

use crate::api::ApiError;
use crate::config::CascadeKind;
use crate::gateway::Gateway;

/// The kind with its article, as the message reads it.
fn with_article(kind: CascadeKind) -> &'static str {
    match kind {
        CascadeKind::Chat => "a chat",
        CascadeKind::Embedding => "an embedding",
    }
}

/// The error for a `model` that `gw` cannot resolve to a `wanted` cascade.
pub(super) fn unresolved(gw: &Gateway, model: &str, wanted: CascadeKind) -> ApiError {
    match gw.cascades.get(model) {
        Some(plan) if plan.kind != wanted => {
            let fits: Vec<&str> =
                gw.cascades.iter().filter(|(_, p)| p.kind == wanted).map(|(n, _)| n.as_str()).collect();
            let fits = if fits.is_empty() { "none is configured".to_string() } else { fits.join(", ") };
            ApiError::WrongKind {
                cascade: model.chars().take(200).collect(),
                kind: with_article(plan.kind),
                wanted: with_article(wanted),
                fits,
            }
        }
        _ => ApiError::ModelNotFound(model.chars().take(200).collect()),
    }
}
