//! Cost and budgets (SPEC §8): each answer's usage times its model's price.
//!
//! After a non-streamed answer the route calls [`Ledger::record`]: tokens go
//! to `spillway_tokens_total`, their price (per 1M tokens, from the
//! provider's static models, else from its latest discovery listing) to `spillway_cost_usd_total` and to the
//! cascade's spend for the current UTC day. A model without a known price
//! costs 0, is counted in `spillway_unpriced_answers_total` and warned
//! about once. Before the runner starts, [`Ledger::budget_plan`] swaps a
//! cascade that spent its `budget.daily_usd` today for a copy holding only
//! its free models, until 00:00 UTC.
//!
//! Spend is counted in memory first (the request path never waits on a
//! store); with a shared store (`backend: redis`) the [`flush::Flush`] job
//! adds each instance's new spend to a per-day counter every few seconds
//! and reads the total back, so every instance sees the cascade's whole
//! spend and stops paid models at about the same time.

pub mod flush;

use crate::alerts::{AlertBus, Event};
pub use crate::api::completion::Tokens;
use crate::cascade::CascadePlan;
use crate::config::{Config, Price};
use crate::discovery::DiscoveryState;
use crate::journal::Journal;
use crate::metrics::{Metrics, UsageHandles};
use crate::state::StateStatus;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

pub use crate::health::clock::{civil_day, day_text};

const DAY_MS: u64 = 86_400_000;

/// What recording an answer touches: prices and budgets, metrics, alerts.
#[derive(Clone, Copy)]
pub struct Books<'a> {
    /// Prices (`providers.*.models`) and budgets (`cascades.*.budget`).
    pub config: &'a Config,
    /// Cost and token counters.
    pub metrics: &'a Metrics,
    /// Where a spent budget is announced.
    pub alerts: &'a AlertBus,
    /// Listed prices of discovered models.
    pub discovery: &'a DiscoveryState,
    /// The answering target's series, when known (else looked up by label).
    pub handles: Option<&'a UsageHandles>,
}

/// [`Books`] owned, for what outlives a request: the spend-sharing job and
/// the meters of streamed answers.
#[derive(Clone)]
pub struct OwnedBooks {
    pub config: Arc<Config>,
    pub metrics: Arc<Metrics>,
    pub alerts: Arc<AlertBus>,
    pub discovery: Arc<DiscoveryState>,
    pub ledger: Arc<Ledger>,
    /// Where the shared store is (spend sharing), once the backend is up.
    pub state: Arc<StateStatus>,
}

impl OwnedBooks {
    /// Borrowed, with the answering target's series when known.
    pub fn books<'a>(&'a self, handles: Option<&'a UsageHandles>) -> Books<'a> {
        Books {
            config: &self.config,
            metrics: &self.metrics,
            alerts: &self.alerts,
            discovery: &self.discovery,
            handles,
        }
    }

    /// A meter for a stream answering in `cascade`: records each attempt's
    /// tokens against its own model (see `cascade::stream::Meter`).
    /// The request's journal, when it has one, gets the same counts.
    pub fn meter(&self, cascade: &str, journal: Option<Arc<Journal>>) -> crate::cascade::stream::Meter {
        let (books, cascade) = (self.clone(), cascade.to_string());
        Box::new(move |target, tokens| {
            let b = books.books(Some(&target.metrics.usage));
            let cost = books.ledger.record(b, &cascade, &target.name, Some(tokens), crate::health::clock::now_ms());
            if let Some(j) = &journal {
                j.usage(tokens.input, tokens.output, cost);
            }
        })
    }
}

/// The price of `provider/model` per 1M tokens, when known: the config's
/// static model first (the operator's word wins), else the listing, else
/// the provider's `price_per_1m`.
pub fn price(config: &Config, discovery: &DiscoveryState, model_ref: &str) -> Option<Price> {
    let (provider, model) = model_ref.split_once('/')?;
    let provider_config = config.providers.get(provider);
    let configured = provider_config.and_then(|p| p.models.iter().find(|m| m.id == model));
    if let Some(p) = configured.and_then(|m| m.price) {
        return Some(p);
    }
    let round = discovery.current();
    let listed = round.listings.get(provider).and_then(|l| l.models.iter().find(|m| m.id == model));
    if listed.is_some_and(|l| l.free) {
        return Some(Price { input: 0.0, output: 0.0 });
    }
    let fallback = provider_config.and_then(|p| p.price);
    let input = listed.and_then(|l| l.price_in_per_1m).or(fallback.map(|p| p.input));
    let output = listed.and_then(|l| l.price_out_per_1m).or(fallback.map(|p| p.output));
    Some(Price { input: input?, output: output? })
}

/// Free: a known zero price, or an OpenRouter-style `:free` id. An unknown
/// price counts as paid (as in discovery's filters).
pub fn is_free(config: &Config, discovery: &DiscoveryState, model_ref: &str) -> bool {
    model_ref.ends_with(":free")
        || price(config, discovery, model_ref).is_some_and(|p| p.input == 0.0 && p.output == 0.0)
}

/// Today's spend per cascade, and which models were warned about.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Cascade → (UTC day, USD spent that day: the shared total last read
    /// plus this instance's spend since).
    spent: Mutex<HashMap<String, (u64, f64)>>,
    /// (Cascade, UTC day) → micro-USD not yet added to the shared store.
    pending: Mutex<HashMap<(String, u64), u64>>,
    /// Model refs without a price, warned about once.
    warned: Mutex<HashSet<String>>,
}

impl Ledger {
    /// Counts one answer's `usage` (`prompt_tokens`, `completion_tokens`);
    /// returns its cost in USD, `None` when the model has no known price.
    pub fn record(
        &self,
        b: Books<'_>,
        cascade: &str,
        model_ref: &str,
        usage: Option<Tokens>,
        now_ms: u64,
    ) -> Option<f64> {
        let Tokens { input, output } = usage?;
        let (provider, model) = model_ref.split_once('/')?;
        let m = b.metrics;
        let fresh = UsageHandles::default();
        let handles = b.handles.unwrap_or(&fresh);
        let [tokens_in, tokens_out] = handles.tokens(m, provider, model);
        tokens_in.inc_by(input);
        tokens_out.inc_by(output);
        let Some(p) = price(b.config, b.discovery, model_ref) else {
            // Counted before: warned about before (the counter goes up only
            // here), so the lock and the look-up are for a model's first time.
            if handles.unpriced(m, provider, model).inc() > 0 {
                return None;
            }
            let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
            if !warned.contains(model_ref) {
                warned.insert(model_ref.to_string());
                drop(warned);
                tracing::warn!(model = model_ref, "A model without a known price answered; counting its cost as 0.");
            }
            return None;
        };
        let cost = (input as f64 * p.input + output as f64 * p.output) / 1e6;
        if cost <= 0.0 {
            return Some(0.0);
        }
        handles.cost(m, cascade, provider, model).inc_by(cost);
        let day = now_ms / DAY_MS;
        let limit = b.config.cascades.get(cascade).and_then(|c| c.daily_budget_usd);
        if limit.is_none() {
            return Some(cost);
        }
        *self.pending.lock().unwrap_or_else(PoisonError::into_inner).entry((cascade.to_string(), day)).or_insert(0) +=
            (cost * 1e6).round() as u64;
        let total = self.add(cascade, day, cost);
        self.check_budget(b, cascade, day, total - cost, total);
        Some(cost)
    }

    /// Adds `usd` to today's spend of `cascade`; returns the new total.
    fn add(&self, cascade: &str, day: u64, usd: f64) -> f64 {
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = spent.entry(cascade.to_string()).or_insert((day, 0.0));
        if entry.0 != day {
            *entry = (day, 0.0);
        }
        entry.1 += usd;
        entry.1
    }

    /// Alerts when the spend went from under the budget to at or over it.
    fn check_budget(&self, b: Books<'_>, cascade: &str, day: u64, before: f64, after: f64) {
        let limit = b.config.cascades.get(cascade).and_then(|c| c.daily_budget_usd);
        if let Some(limit) = limit.filter(|&l| after >= l && before < l) {
            b.alerts.publish(Event::BudgetExhausted {
                cascade: cascade.into(),
                spent_usd: after,
                limit_usd: limit,
                day: day_text(day),
            });
        }
    }

    /// USD `cascade` spent on the UTC day of `now_ms`.
    pub fn spent_today(&self, cascade: &str, now_ms: u64) -> f64 {
        let spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        spent.get(cascade).filter(|(day, _)| *day == now_ms / DAY_MS).map_or(0.0, |(_, usd)| *usd)
    }

    /// The plan to run: `plan` itself, or — when its cascade spent its
    /// daily budget today — a copy with only its free models.
    pub fn budget_plan(
        &self,
        config: &Config,
        discovery: &DiscoveryState,
        plan: Arc<CascadePlan>,
        now_ms: u64,
    ) -> Arc<CascadePlan> {
        let Some(limit) = config.cascades.get(&plan.name).and_then(|c| c.daily_budget_usd) else { return plan };
        if self.spent_today(&plan.name, now_ms) < limit {
            return plan;
        }
        let mut free = (*plan).clone();
        free.targets.retain(|t| is_free(config, discovery, &t.name));
        Arc::new(free)
    }
}

/// What the handler records after a served answer: the fallback-share
/// counters and, for a whole answer, its cost (a stream's cost is recorded
/// by the meter the handler attaches to it, [`OwnedBooks::meter`]).
///
/// `started_ms` is when the request came in: fallback is counted there.
pub fn observe(
    books: Books<'_>,
    ledger: &Ledger,
    plan: &CascadePlan,
    served: &crate::cascade::Served,
    started_ms: u64,
    journal: Option<&Journal>,
) {
    let now = crate::health::clock::now_ms();
    // Fallback traffic by position: anything but the cascade's first model
    // (the handoff included), for fixed chains and discovered cascades alike.
    books.alerts.traffic.record_model(&served.cascade, &served.model, served.rank != Some(1), started_ms);
    if served.handoff_id.is_none() {
        books.alerts.cascade_answered(&served.cascade);
    }
    if let crate::cascade::ServedBody::Complete(c) = &served.body {
        if served.handoff_id.is_none() {
            let target = plan.targets.iter().find(|t| t.name == served.model);
            let b = Books { handles: target.map(|t| &t.metrics.usage), ..books };
            // Without usage from the upstream: the prompt's estimate and four
            // characters a token of the answer.
            let tokens =
                c.tokens().or_else(|| Some(Tokens { input: served.prompt_tokens, output: c.completion_tokens() }));
            let cost = ledger.record(b, &served.cascade, &served.model, tokens, now);
            if let (Some(j), Some(t)) = (journal, tokens) {
                j.usage(t.input, t.output, cost);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_prices_apply_when_the_config_has_none() {
        use crate::discovery::{ModelMeta, ProviderListing, Round};
        let yaml = "providers:\n  p:\n    kind: mock\n    models: [{ id: fixed, price_per_1m: { input: 1, output: 2 } }]\ncascades:\n  c:\n    models: [p/fixed]\n";
        let config = crate::config::load_str(yaml, None, &|_| None).unwrap();
        let d = DiscoveryState::default();
        let mut listed = ModelMeta::new("p", "listed");
        (listed.price_in_per_1m, listed.price_out_per_1m) = (Some(0.5), Some(1.5));
        let mut gift = ModelMeta::new("p", "gift");
        gift.free = true;
        let mut fixed = ModelMeta::new("p", "fixed");
        (fixed.price_in_per_1m, fixed.price_out_per_1m) = (Some(9.0), Some(9.0));
        let mut round = Round::default();
        let models = vec![listed, gift, fixed, ModelMeta::new("p", "unknown")];
        round.listings.insert("p".into(), ProviderListing { models, fetched_at_ms: 0, last_error: None });
        d.publish(round);
        assert_eq!(price(&config, &d, "p/fixed"), Some(Price { input: 1.0, output: 2.0 }));
        assert_eq!(price(&config, &d, "p/listed"), Some(Price { input: 0.5, output: 1.5 }));
        assert_eq!(price(&config, &d, "p/gift"), Some(Price { input: 0.0, output: 0.0 }));
        assert_eq!(price(&config, &d, "p/unknown"), None);
        assert_eq!(price(&config, &d, "q/x"), None);
    }
}
