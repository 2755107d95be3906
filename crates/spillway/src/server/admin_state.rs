//! `GET /admin/state` and `POST /admin/models/{provider}/{model}/revive`.
//!
//! The state view is what an operator needs in one look: every cascade
//! with its models in order, and per model whether it is alive, dead until
//! when and why, its breaker state and trip reason, and its TTFT.

use super::AppState;
use crate::api::ApiError;
use crate::gateway::Gateway;
use crate::health::breaker::State;
use crate::health::clock::now_ms;
use axum::extract::{Path, State as AxumState};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::sync::Arc;

/// Routes of this file.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/admin/state", get(state)).route("/admin/models/{*model_ref}", post(revive))
}

/// The health of one model ref as JSON.
pub fn model_view(gw: &Gateway, model_ref: &str) -> Value {
    let now = now_ms();
    let provider = model_ref.split('/').next().unwrap_or_default();
    let p = gw.health.provider(provider);
    let h = gw.health.model(model_ref);
    let dead = p
        .dead
        .get(now)
        .or_else(|| model_ref.ends_with(":free").then(|| p.free_dead.get(now)).flatten())
        .or_else(|| h.dead.get(now));
    let breaker = match h.breaker_state() {
        State::Closed => json!({"state": "closed"}),
        State::Open { until_ms, reason } => json!({
            "state": "open",
            "reason": reason.to_string(),
            "until_unix_ms": until_ms,
            "seconds_left": until_ms.saturating_sub(now) / 1000,
        }),
        State::HalfOpen { probing, reason } => {
            json!({"state": "half_open", "probing": probing, "reason": reason.to_string()})
        }
    };
    let model_id = model_ref.split_once('/').map(|(_, m)| m).unwrap_or_default();
    let [valid, repaired, invalid] = crate::cascade::json::counts(&gw.metrics, provider, model_id);
    let json_counts = json!({"valid": valid, "repaired": repaired, "invalid": invalid});
    json!({
        "model": model_ref,
        "alive": dead.is_none() && matches!(h.breaker_state(), State::Closed | State::HalfOpen { .. }),
        "dead": dead.map(|m| json!({
            "reason": m.reason.as_str(),
            "until_unix_ms": m.until_ms,
            "seconds_left": m.until_ms.saturating_sub(now) / 1000,
        })),
        "breaker": breaker,
        "ttft_ms": h.ttft_ms().map(|t| (t * 10.0).round() / 10.0),
        "json": json_counts,
    })
}

/// A model's quality in a cascade with `quality:`: its window (answers,
/// bad share, share of each signal seen) and its demotion, if any.
fn quality_view(q: &crate::health::quality::QualityHealth, rule: &crate::config::QualityConfig, now: u64) -> Value {
    let view = q.view(Some(rule));
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    let signals: serde_json::Map<String, Value> =
        view.signals.iter().map(|(k, v)| ((*k).to_string(), json!(round(*v)))).collect();
    let demoted = view.demoted_until_ms.map(|until| {
        json!({
            "reason": view.demoted_for,
            "until_unix_ms": until,
            "seconds_left": until.saturating_sub(now) / 1000,
            "probation": now >= until,
            "probes": view.probes,
        })
    });
    json!({"answers": view.answers, "bad_share": round(view.bad_share), "signals": signals, "demoted": demoted})
}

async fn state(AxumState(state): AxumState<Arc<AppState>>) -> Json<Value> {
    let gw = state.gateway.load_full();
    let round = gw.shared.discovery.current();
    let cascades: Vec<Value> = gw
        .cascades
        .values()
        .map(|plan| {
            let built = round.cascades.get(&plan.name);
            let models: Vec<Value> = plan
                .targets
                .iter()
                .map(|t| {
                    let mut v = model_view(&gw, &t.name);
                    v["tier"] = json!(t.tier.as_str());
                    // Why discovery put it there (discovered cascades only).
                    if let Some(e) = built.and_then(|b| b.entries.iter().find(|e| e.model_ref == t.name)) {
                        v["reason"] = json!(e.reason.to_string());
                    }
                    v["in_flight"] = json!(t.provider.in_flight());
                    let (attempts, failures) = t.metrics.attempt_counts();
                    v["attempts"] = json!(attempts);
                    v["failures"] = json!(failures);
                    v["served"] = json!(t.metrics.served_count());
                    v["rank"] = json!(t.rank);
                    v["last_error"] =
                        t.health.last_error().map_or(Value::Null, |(at, text)| json!({"at_unix_ms": at, "text": text}));
                    if let Some(rule) = &t.quality {
                        v["quality"] = quality_view(&t.health.quality, rule, now_ms());
                    }
                    v
                })
                .collect();
            // Shares of the answers since start: by model (whatever rank it
            // stood at), by tier and by rank, each counted as such — a
            // re-ranking moves a model, it does not reset its answers.
            let served: u64 = models.iter().filter_map(|m| m["served"].as_u64()).sum();
            let share_of = |n: u64, total: u64| {
                if total == 0 {
                    Value::Null
                } else {
                    json!((n as f64 / total as f64 * 1000.0).round() / 1000.0)
                }
            };
            let share = |n: u64| share_of(n, served);
            // Tiers and ranks over every answer since start, those of models
            // that have since left the cascade included; listed when the
            // cascade has a model there now or had answers there.
            let (by_tier, by_rank) = gw.metrics.tallies.shares(&plan.name);
            let answered: u64 = by_rank.iter().map(|(_, n)| n).sum();
            let tier_shares: serde_json::Map<String, Value> = by_tier
                .into_iter()
                .filter(|(t, n)| *n > 0 || plan.targets.iter().any(|x| x.tier.as_str() == *t))
                .map(|(t, n)| (t.into(), share_of(n, answered)))
                .collect();
            let rank_shares: serde_json::Map<String, Value> = by_rank
                .into_iter()
                .filter(|(r, n)| *n > 0 || plan.targets.iter().any(|x| crate::metrics::rank_label(x.rank) == *r))
                .map(|(r, n)| (r.into(), share_of(n, answered)))
                .collect();
            let models: Vec<Value> = models
                .into_iter()
                .map(|mut m| {
                    m["share"] = share(m["served"].as_u64().unwrap_or(0));
                    m
                })
                .collect();
            // Models discovery left out that the operator may have meant in:
            // preferred ones, and any left out for an unknown price or context.
            let left_out: Vec<Value> = built
                .map(|b| b.left_out.as_slice())
                .unwrap_or_default()
                .iter()
                .map(|l| {
                    json!({
                        "model": l.model_ref, "preferred": l.preferred, "unknown": l.is_unknown(),
                        "why": l.why.to_string(), "text": l.to_string(),
                    })
                })
                .collect();
            let notes = built.map(|b| b.notes.clone()).unwrap_or_default();
            let budget = gw.config.cascades.get(&plan.name).and_then(|c| c.daily_budget_usd);
            let spent = gw.shared.usage.spent_today(&plan.name, now_ms());
            json!({
                "name": plan.name,
                "models": models,
                "served": served,
                "tier_shares": tier_shares,
                "rank_shares": rank_shares,
                "spent_today_usd": (spent * 1e6).round() / 1e6,
                "daily_budget_usd": budget,
                "left_out": left_out,
                "notes": notes,
            })
        })
        .collect();
    let depth = gw.handoff_depth().await;
    Json(json!({
        "cascades": cascades,
        "state": gw.shared.state.view(),
        "in_flight_requests": state.in_flight.load(std::sync::atomic::Ordering::Relaxed),
        "load": gw.load.snapshot(),
        "handoff_queue_depth": depth,
    }))
}

/// `POST /admin/models/{provider}/{model}/revive`: the model id may itself
/// contain `/`, so the path is taken whole and the suffix stripped.
async fn revive(AxumState(state): AxumState<Arc<AppState>>, Path(path): Path<String>) -> Result<Json<Value>, ApiError> {
    let Some(model_ref) = path.strip_suffix("/revive") else {
        return Err(ApiError::NotFound);
    };
    let gw = state.gateway.load_full();
    if crate::config::ModelRef::parse(model_ref).is_none() {
        return Err(ApiError::InvalidField {
            param: "model".into(),
            message: "expected /admin/models/{provider}/{model}/revive".into(),
        });
    }
    let provider = model_ref.split('/').next().unwrap_or_default();
    if !gw.providers.contains_key(provider) {
        return Err(ApiError::ModelNotFound(model_ref.to_string()));
    }
    gw.health.model(model_ref).revive();
    gw.health.revive_provider(provider);
    tracing::info!(model = model_ref, "Model revived by an operator.");
    Ok(Json(model_view(&gw, model_ref)))
}
