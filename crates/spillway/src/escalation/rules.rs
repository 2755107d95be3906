//! Applying `escalation:` rules (SPEC §8): before the runner starts, a
//! request for a cascade that has a rule `{from, to, when: frustrated}` is
//! switched to `to` when the user is frustrated ([`super::detect`]) or the
//! client sent `x-spillway-escalate: true`. The detector only runs for
//! cascades that have a rule, so other requests pay nothing.

use crate::api::ChatRequest;
use crate::cascade::CascadePlan;
use crate::config::EscalationRule;
use crate::metrics::EscalationLabels;
use crate::metrics::Metrics;
use axum::http::HeaderMap;
use indexmap::IndexMap;
use std::sync::Arc;

/// `x-spillway-escalate`, parsed once (a name given as text is parsed again
/// on every look-up).
const X_SPILLWAY_ESCALATE: http::HeaderName = http::HeaderName::from_static("x-spillway-escalate");

/// Whether the client forces escalation (`x-spillway-escalate: true`).
pub fn forced(headers: &HeaderMap) -> bool {
    crate::api::headers::find(headers, &X_SPILLWAY_ESCALATE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The plan to run and whether it was escalated. Counts
/// `spillway_escalations_total{from, to, reason}`.
pub fn choose(
    rules: &[EscalationRule],
    cascades: &IndexMap<String, Arc<CascadePlan>>,
    metrics: &Metrics,
    plan: Arc<CascadePlan>,
    req: &ChatRequest,
    forced: bool,
) -> (Arc<CascadePlan>, bool) {
    let Some(rule) = rules.iter().find(|r| r.from == plan.name) else { return (plan, false) };
    let Some(to) = cascades.get(&rule.to) else { return (plan, false) };
    let reason = if forced {
        "header"
    } else {
        let messages = req.body().get("messages").and_then(|m| m.as_array()).map(Vec::as_slice).unwrap_or_default();
        if !super::detect(messages).is_frustrated() {
            return (plan, false);
        }
        "frustrated"
    };
    metrics.escalations.get_or_create(&EscalationLabels { from: plan.name.clone(), to: to.name.clone(), reason }).inc();
    tracing::info!(from = %plan.name, to = %to.name, reason, "Request escalated.");
    (to.clone(), true)
}
