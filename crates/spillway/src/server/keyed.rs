//! Virtual keys on the request path: the cascades a key may use, its
//! admission (limits, budget, the rate-limit headers and the 429s), and the
//! real usage its reservation is settled with — whole answers here,
//! streams through their meter (every attempt, continued or cut).

use crate::api::{ApiError, ChatRequest};
use crate::cascade::{CascadePlan, Served, ServedBody};
use crate::config::KeySpec;
use crate::gateway::Gateway;
use crate::telemetry::RequestNotes;
use crate::tenancy::admit::{end_user, rate_headers, reservation};
use crate::tenancy::tally::{Ask, Refusal, Standing};
use crate::tenancy::{Denied, Tab};
use axum::http::HeaderName;
use std::time::Duration;

/// A virtual key's request: the key and the end user its header names
/// (the body's `user` is read once the body is parsed).
#[derive(Debug, Clone, Default)]
pub(super) struct Who {
    pub key: Option<std::sync::Arc<KeySpec>>,
    pub user_header: Option<String>,
}

/// The end user of a keyed request, when the body does not name one.
pub const X_SPILLWAY_USER: HeaderName = HeaderName::from_static("x-spillway-user");

/// The caller fair shares count (`tenancy::fair`): the key's end user, the
/// key, or an end user without keys; `None` for a request that names none.
fn fair_caller(who: &Who, req: &ChatRequest) -> Option<String> {
    let user = req.end_user.clone().or_else(|| end_user(who.user_header.as_deref(), req.body_user.as_deref()));
    match (&who.key, user) {
        (Some(k), Some(u)) => Some(format!("{}/{u}", k.id)),
        (Some(k), None) => Some(k.id.clone()),
        (None, Some(u)) => Some(format!("-/{u}")),
        (None, None) => None,
    }
}

/// The plan after fair shares of a free quota (`tenancy::fair::plan`), and
/// the providers on which the caller runs a lighter load profile
/// (`tenancy::fair::load_relief`, for `ChatRequest::load_relief`).
pub(super) fn fair_plan(
    gw: &Gateway,
    plan: std::sync::Arc<CascadePlan>,
    who: &Who,
    req: &ChatRequest,
    now_ms: u64,
) -> (std::sync::Arc<CascadePlan>, Vec<String>) {
    if !gw.config.fairness.enabled {
        return (plan, Vec::new());
    }
    let Some(caller) = fair_caller(who, req) else { return (plan, Vec::new()) };
    let tenancy = &gw.shared.tenancy;
    let relief =
        crate::tenancy::fair::load_relief(&tenancy.load_shares, &gw.config, &gw.load, &plan, Some(&caller), now_ms);
    let (plan, diverted) =
        crate::tenancy::fair::plan(&tenancy.shares, &gw.config, &gw.shared.discovery, plan, Some(&caller), now_ms);
    if diverted {
        gw.metrics.keys.diverted(&plan.name);
    }
    (plan, relief)
}

/// 403 unless `key` may use the cascade `plan` (or the ref `model` asked for).
pub(super) fn allowed(key: &KeySpec, plan: &str, model: &str) -> Result<(), ApiError> {
    if crate::tenancy::admit::allows(key, plan) || crate::tenancy::admit::allows(key, model) {
        return Ok(());
    }
    Err(ApiError::KeyNotAllowed(plan.to_string()))
}

/// Admits a request of `key` to `plan`: its tab, or the 429/401/503.
pub(super) async fn admit(
    gw: &Gateway,
    key: &std::sync::Arc<KeySpec>,
    who: &Who,
    req: &ChatRequest,
    plan: &CascadePlan,
    notes: &RequestNotes,
) -> Result<Tab, ApiError> {
    let user = req.end_user.clone().or_else(|| end_user(who.user_header.as_deref(), req.body_user.as_deref()));
    let (tokens, usd) = reservation(&gw.config, &gw.shared.discovery, plan, req.prompt_tokens, req.max_tokens);
    admit_tokens(gw, key, user, tokens, usd, notes).await
}

/// Admits a request of `key` reserving `tokens` and `usd`.
pub(super) async fn admit_tokens(
    gw: &Gateway,
    key: &std::sync::Arc<KeySpec>,
    user: Option<String>,
    tokens: u64,
    usd: f64,
    notes: &RequestNotes,
) -> Result<Tab, ApiError> {
    if let Some(u) = &user {
        tracing::Span::current().record("user", tracing::field::display(u));
    }
    let ask = Ask {
        now_ms: crate::health::clock::now_ms(),
        tokens,
        usd_micro: crate::tenancy::usd_micro(usd),
        lease_ms: u64::try_from(gw.config.health.timeouts.total.as_millis()).unwrap_or(u64::MAX / 4) + 60_000,
    };
    let user_counted = user.is_some() && key.per_user.any();
    match gw.shared.tenancy.admit(&gw.config.state, &gw.shared.alerts, key, user.as_deref(), ask).await {
        Ok((tab, standings)) => {
            gw.metrics.keys.request(&key.id, "admitted", user.as_deref());
            let [ks, us] = standings;
            let counted: &[(&crate::config::Limits, Standing)] =
                if user_counted { &[(&key.limits, ks), (&key.per_user, us)] } else { &[(&key.limits, ks)] };
            notes.set_rate_headers(rate_headers(counted));
            Ok(tab)
        }
        Err(Denied::Refused { subject, refusal, retry_ms, standing }) => {
            gw.metrics.keys.request(&key.id, refusal.label(), None);
            let limits = if subject == 0 { &key.limits } else { &key.per_user };
            notes.set_rate_headers(rate_headers(&[(limits, standing)]));
            if retry_ms > 0 {
                notes.set_retry_after(Duration::from_millis(retry_ms));
            }
            let who = if subject == 0 { format!("key `{}`", key.id) } else { format!("this user of key `{}`", key.id) };
            let wait = if retry_ms > 0 {
                format!(" Please try again in {}.", crate::tenancy::admit::go_duration(retry_ms))
            } else {
                String::new()
            };
            tracing::info!(key = %key.id, limit = refusal.label(), "A key's request was refused by its limits.");
            Err(match refusal {
                Refusal::Budget => {
                    ApiError::QuotaExceeded(format!("{who} has spent its budget for this period.{wait}"))
                }
                Refusal::Parallel => ApiError::RateLimited {
                    dimension: "requests",
                    message: format!("{who} has reached its limit of requests in flight (max_parallel).{wait}"),
                },
                Refusal::Requests => ApiError::RateLimited {
                    dimension: "requests",
                    message: format!("Rate limit reached for {who} on requests per min (RPM).{wait}"),
                },
                Refusal::Tokens => ApiError::RateLimited {
                    dimension: "tokens",
                    message: format!("Rate limit reached for {who} on tokens per min (TPM).{wait}"),
                },
            })
        }
        Err(Denied::Revoked) => Err(ApiError::Unauthorized),
        Err(Denied::StoreDown) => Err(ApiError::LimitsUnavailable),
    }
}

/// The cost of `tokens` on `model_ref` (0 without a known price, as in cost accounting).
fn cost(gw: &Gateway, model_ref: &str, input: u64, output: u64) -> f64 {
    price_of(&gw.config, &gw.shared.discovery, model_ref, input, output)
}

fn price_of(
    config: &crate::config::Config,
    discovery: &crate::discovery::DiscoveryState,
    model_ref: &str,
    input: u64,
    output: u64,
) -> f64 {
    crate::usage::price(config, discovery, model_ref)
        .map_or(0.0, |p| (input as f64 * p.input + output as f64 * p.output) / 1e6)
}

/// What an embeddings request reserves: its input at the cascade's highest input price.
pub(super) fn embedding_reservation(gw: &Gateway, plan: &CascadePlan, input: u64) -> (u64, f64) {
    let most = plan
        .targets
        .iter()
        .filter_map(|t| crate::usage::price(&gw.config, &gw.shared.discovery, &t.name))
        .map(|p| p.input)
        .fold(0.0f64, f64::max);
    (input, input as f64 * most / 1e6)
}

/// One answer's usage onto the tab and the key's metrics.
pub(super) fn add_usage(gw: &Gateway, tab: &Tab, model_ref: &str, input: u64, output: u64) {
    let usd = cost(gw, model_ref, input, output);
    gw.metrics.keys.used(tab.key_id(), input, output, usd);
    tab.add(input, output, usd);
}

/// A whole answer's usage (as `usage::observe` counts it) onto the tab.
pub(super) fn whole_usage(gw: &Gateway, tab: &Tab, served: &Served) {
    let ServedBody::Complete(c) = &served.body else { return };
    if served.handoff_id.is_some() {
        return;
    }
    let t = c.tokens().unwrap_or(crate::usage::Tokens { input: served.prompt_tokens, output: c.completion_tokens() });
    add_usage(gw, tab, &served.model, t.input, t.output);
}

/// A stream's meter that also adds each attempt's usage to the tab; the
/// tab settles when the stream (and with it the meter) is dropped.
pub(super) fn meter(
    gw: &Gateway,
    mut books: crate::cascade::stream::Meter,
    tab: Option<Tab>,
) -> crate::cascade::stream::Meter {
    let Some(tab) = tab else { return books };
    let (config, discovery, metrics) = (gw.config.clone(), gw.shared.discovery.clone(), gw.metrics.clone());
    Box::new(move |target, tokens| {
        books(target, tokens);
        let usd = price_of(&config, &discovery, &target.name, tokens.input, tokens.output);
        metrics.keys.used(tab.key_id(), tokens.input, tokens.output, usd);
        tab.add(tokens.input, tokens.output, usd);
    })
}
