//! `/admin/keys`: virtual keys made, read, changed and revoked at run time
//! (behind the admin token). A made key's secret (`sk-spw-…`) is in the
//! 201 answer and nowhere else: only its SHA-256 is stored. Keys of the
//! config file are listed too (`"source": "config"`) but changed only there.

use super::AppState;
use crate::config::{KeySpec, StateConfig};
use crate::tenancy::store::{BudgetRecord, KeyRecord, UserRecord};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// The routes (mounted behind the admin token).
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/admin/keys", get(list).post(create))
        .route("/admin/keys/{id}", get(show).patch(change).delete(revoke))
}

fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = json!({"error": {"message": message.into(), "type": code, "code": code, "param": null}});
    (status, Json(body)).into_response()
}

fn unavailable(e: &str) -> Response {
    tracing::warn!(error = %e, "The key store is unavailable.");
    error(StatusCode::SERVICE_UNAVAILABLE, "store_unavailable", "the key store is unavailable; retry shortly")
}

/// A key's settings as `POST` and `PATCH` take them.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyBody {
    name: Option<String>,
    cascades: Option<Vec<String>>,
    rpm: Option<u64>,
    tpm: Option<u64>,
    max_parallel: Option<u64>,
    budget: Option<BudgetRecord>,
    per_user: Option<UserRecord>,
    expires_at: Option<String>,
    #[serde(default)]
    metadata: IndexMap<String, String>,
    on_store_down: Option<String>,
}

/// `body` checked and turned into a record with `id`, `secret_sha256` and `created_ms`.
fn record(
    gw: &crate::gateway::Gateway,
    body: KeyBody,
    id: String,
    sha: String,
    created_ms: u64,
) -> Result<KeyRecord, String> {
    let name = body.name.unwrap_or_else(|| id.clone());
    if name.chars().count() > 100 {
        return Err("`name` is longer than 100 characters".into());
    }
    for c in body.cascades.iter().flatten() {
        if !gw.cascades.contains_key(c) && !c.contains('/') {
            return Err(format!("`cascades`: no cascade named `{c}`"));
        }
    }
    for (field, v) in [("rpm", body.rpm), ("tpm", body.tpm), ("max_parallel", body.max_parallel)] {
        if v == Some(0) {
            return Err(format!("`{field}` must be greater than 0 (leave it out for no limit)"));
        }
    }
    let check_budget = |b: Option<&BudgetRecord>, at: &str| -> Result<(), String> {
        let Some(b) = b else { return Ok(()) };
        if !(b.usd.is_finite() && b.usd >= 0.0) {
            return Err(format!("`{at}.usd` must be 0 or more"));
        }
        if crate::config::BudgetPeriod::parse(&b.per).is_none() {
            return Err(format!("`{at}.per` must be `day`, `month` or `total`"));
        }
        Ok(())
    };
    check_budget(body.budget.as_ref(), "budget")?;
    check_budget(body.per_user.as_ref().and_then(|u| u.budget.as_ref()), "per_user.budget")?;
    if let Some(u) = &body.per_user {
        if u.rpm == Some(0) || u.tpm == Some(0) {
            return Err("`per_user` limits must be greater than 0".into());
        }
    }
    let expires_at_ms = match body.expires_at.as_deref() {
        Some(t) => Some(crate::config::compile::keys::parse_instant(t).map_err(|e| format!("`expires_at`: {e}"))?),
        None => None,
    };
    if !matches!(body.on_store_down.as_deref(), None | Some("allow" | "deny")) {
        return Err("`on_store_down` must be `allow` or `deny`".into());
    }
    Ok(KeyRecord {
        id,
        name,
        secret_sha256: sha,
        cascades: body.cascades,
        rpm: body.rpm,
        tpm: body.tpm,
        max_parallel: body.max_parallel,
        budget: body.budget,
        per_user: body.per_user,
        expires_at_ms,
        metadata: body.metadata,
        on_store_down: body.on_store_down,
        created_ms,
    })
}

/// Random hex from the OS (a fast PRNG only if the OS source fails).
fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if getrandom::fill(&mut buf).is_err() {
        buf.iter_mut().for_each(|b| *b = fastrand::u8(..));
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// `YYYY-MM-DDTHH:MM:SSZ` of Unix ms.
fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let (y, m, d) = crate::health::clock::civil_day(secs / 86_400);
    let t = secs % 86_400;
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", t / 3600, t / 60 % 60, t % 60)
}

fn budget_view(b: Option<crate::config::KeyBudget>) -> Value {
    b.map_or(Value::Null, |b| json!({"usd": b.usd, "per": b.per.as_str()}))
}

/// What the admin API shows of a key: never its secret or its hash.
fn view(k: &KeySpec, source: &str) -> Value {
    json!({
        "id": k.id,
        "name": k.name,
        "source": source,
        "cascades": k.cascades,
        "rpm": k.limits.rpm,
        "tpm": k.limits.tpm,
        "max_parallel": k.limits.max_parallel,
        "budget": budget_view(k.limits.budget),
        "per_user": {"rpm": k.per_user.rpm, "tpm": k.per_user.tpm, "budget": budget_view(k.per_user.budget)},
        "expires_at": k.expires_at_ms.map(rfc3339),
        "metadata": k.metadata,
        "on_store_down": k.on_store_down.as_str(),
    })
}

/// Every key: the config's, then the runtime ones.
fn all_keys(gw: &crate::gateway::Gateway) -> Vec<(Arc<KeySpec>, &'static str)> {
    let mut out: Vec<(Arc<KeySpec>, &'static str)> =
        gw.config.keys.iter().map(|k| (Arc::new(k.clone()), "config")).collect();
    out.extend(gw.shared.tenancy.registry.records().iter().map(|r| (Arc::new(r.spec()), "api")));
    out
}

async fn list(State(state): State<Arc<AppState>>) -> Response {
    let gw = state.gateway.load_full();
    let mut keys = Vec::new();
    for (k, src) in all_keys(&gw) {
        let mut v = view(&k, src);
        let (usage, revoked) = usage(&gw, &k).await;
        v["usage"] = usage;
        v["revoked"] = json!(revoked);
        keys.push(v);
    }
    Json(json!({"keys": keys})).into_response()
}

/// A key's usage in its period, and whether it was revoked.
async fn usage(gw: &crate::gateway::Gateway, key: &KeySpec) -> (Value, bool) {
    let (u, revoked) = gw.shared.tenancy.usage(&gw.config.state, key).await;
    let spent = u.spent_micro as f64 / 1e6;
    let v = json!({
        "period_start": period_start(key, u.period),
        "requests": u.requests,
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cost_usd": spent,
        "reserved_usd": u.reserved_micro as f64 / 1e6,
        "in_flight": u.in_flight,
        "budget_used": key.limits.budget.filter(|b| b.usd > 0.0).map(|b| spent / b.usd),
    });
    (v, revoked)
}

/// The period's start as text: the day, the month's first day, or none for `total`.
fn period_start(k: &KeySpec, period: u64) -> Value {
    match k.limits.budget.map_or(crate::config::BudgetPeriod::Month, |b| b.per) {
        crate::config::BudgetPeriod::Day => json!(crate::usage::day_text(period)),
        crate::config::BudgetPeriod::Month => json!(format!("{:04}-{:02}-01", period / 12, period % 12 + 1)),
        crate::config::BudgetPeriod::Total => Value::Null,
    }
}

async fn show(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    let gw = state.gateway.load_full();
    let Some((key, source)) = all_keys(&gw).into_iter().find(|(k, _)| k.id == id) else {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no key `{}`", id.chars().take(64).collect::<String>()),
        );
    };
    let mut v = view(&key, source);
    let (u, revoked) = usage(&gw, &key).await;
    v["usage"] = u;
    v["revoked"] = json!(revoked);
    Json(v).into_response()
}

fn parse(body: &Bytes) -> Result<KeyBody, String> {
    if body.is_empty() {
        return Ok(KeyBody::default());
    }
    serde_json::from_slice(body).map_err(|e| e.to_string())
}

async fn create(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let gw = state.gateway.load_full();
    let body = match parse(&body) {
        Ok(b) => b,
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid_request_error", e),
    };
    let id = format!("key_{}", random_hex(6));
    let secret = format!("sk-spw-{}", random_hex(24));
    let now = crate::health::clock::now_ms();
    let record = match record(&gw, body, id, crate::secret::sha256_hex(&secret), now) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid_request_error", e),
    };
    if let Err(e) = gw.shared.tenancy.registry.put(&gw.config.state, record.clone()).await {
        return unavailable(&e);
    }
    tracing::info!(key = %record.id, "A key was made through the admin API.");
    let mut v = view(&record.spec(), "api");
    v["key"] = json!(secret);
    (StatusCode::CREATED, Json(v)).into_response()
}

/// A record as the body that would make it (for `PATCH`'s merge).
fn as_body(r: &KeyRecord) -> Value {
    json!({
        "name": r.name, "cascades": r.cascades, "rpm": r.rpm, "tpm": r.tpm, "max_parallel": r.max_parallel,
        "budget": r.budget, "per_user": r.per_user, "expires_at": r.expires_at_ms.map(rfc3339),
        "metadata": r.metadata, "on_store_down": r.on_store_down,
    })
}

fn config_key(id: &str) -> Response {
    error(StatusCode::CONFLICT, "config_key", format!("key `{id}` is defined in the config file: change it there"))
}

async fn change(State(state): State<Arc<AppState>>, Path(id): Path<String>, body: Bytes) -> Response {
    let gw = state.gateway.load_full();
    if gw.config.keys.iter().any(|k| k.id == id) {
        return config_key(&id);
    }
    let Some(old) = gw.shared.tenancy.registry.records().into_iter().find(|r| r.id == id) else {
        return error(StatusCode::NOT_FOUND, "not_found", "no such key");
    };
    let patch: Value = match serde_json::from_slice(&body) {
        Ok(Value::Object(p)) => Value::Object(p),
        _ => return error(StatusCode::BAD_REQUEST, "invalid_request_error", "expected a JSON object"),
    };
    // A field given replaces the old one; `null` removes it.
    let mut merged = as_body(&old);
    if let (Some(m), Some(p)) = (merged.as_object_mut(), patch.as_object()) {
        for (k, v) in p {
            m.insert(k.clone(), v.clone());
        }
        m.retain(|_, v| !v.is_null());
    }
    let body: KeyBody = match serde_json::from_value(merged) {
        Ok(b) => b,
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid_request_error", e.to_string()),
    };
    let record = match record(&gw, body, old.id.clone(), old.secret_sha256.clone(), old.created_ms) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid_request_error", e),
    };
    if let Err(e) = gw.shared.tenancy.registry.put(&gw.config.state, record.clone()).await {
        return unavailable(&e);
    }
    Json(view(&record.spec(), "api")).into_response()
}

async fn revoke(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    let gw = state.gateway.load_full();
    if gw.config.keys.iter().any(|k| k.id == id) {
        return config_key(&id);
    }
    match revoke_key(&gw.shared.tenancy, &gw.config.state, &id).await {
        Ok(true) => Json(json!({"id": id, "revoked": true})).into_response(),
        Ok(false) => error(StatusCode::NOT_FOUND, "not_found", "no such key"),
        Err(e) => unavailable(&e),
    }
}

/// Revokes key `id`: its mark in the shared counters first (every
/// instance's next admission refuses it), then the stored record.
async fn revoke_key(t: &crate::tenancy::Tenancy, state: &StateConfig, id: &str) -> Result<bool, String> {
    if let Some(shared) = t.shared(state) {
        shared.set_revoked(id, true).await?;
    }
    let found = t.registry.remove(state, id).await?;
    tracing::info!(key = %id, "A key was revoked through the admin API.");
    Ok(found)
}
