//! What one request's walk through its cascade keeps while it runs: the
//! deadline, the attempt log, how many upstream calls were made, and what
//! the answer's JSON must look like.

use super::context::Context;
use super::json::JsonPlan;
use super::plan::CascadePlan;
use crate::api::error::AttemptSummary;
use crate::api::ChatRequest;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::time::Instant;

/// One request's walk.
pub struct Walk<'a> {
    pub ctx: Context<'a>,
    pub plan: &'a Arc<CascadePlan>,
    pub req: &'a ChatRequest,
    /// `timeouts.total` from the request's start.
    pub deadline: Instant,
    /// Upstream calls made (retries and hedges included).
    pub calls: AtomicU32,
    /// Every attempt and skip, in order. (A lock because a hedged attempt
    /// and the gate of its companion record from one task, interleaved;
    /// never held across an await.)
    pub log: Mutex<Vec<AttemptSummary>>,
    /// After a context-length rejection: only models with a larger known
    /// context are worth trying.
    pub min_context: AtomicU64,
    /// Targets of unknown context that refused the prompt as too long:
    /// with the ones whose known context is too small, they tell a prompt
    /// that no model of the cascade can take (a 400, not an outage).
    pub refused_context: AtomicU32,
    /// What the answer's JSON must look like, when the request asks for JSON.
    pub json: Option<JsonPlan>,
}

impl Walk<'_> {
    /// Adds an entry to the attempt log.
    pub fn note(&self, model: &str, reason: String) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(AttemptSummary { model: model.to_string(), reason });
    }
}
