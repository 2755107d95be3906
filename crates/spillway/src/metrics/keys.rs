//! Per-key metrics (`spillway_key_*`). Labels are bounded: key ids are
//! the config's and the admin API's (past [`MAX_KEYS`] distinct ids, the
//! rest are `other`); end users appear only as the first [`MAX_USERS`] of
//! each key, the rest as `other`.

use super::labels::{CascadeLabels, KeyUserLabels, ProviderLabels};
use super::names;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, PoisonError};

/// Distinct key ids with series of their own.
pub const MAX_KEYS: usize = 1000;
/// Distinct end users per key with series of their own.
pub const MAX_USERS: usize = 20;

/// `key`, `result` of `spillway_key_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KeyResultLabels {
    /// Key id (letters, digits, `-_.`: nothing to escape).
    pub key: String,
    /// `admitted`, or the limit that refused it: `requests`, `tokens`, `parallel`, `budget`.
    pub result: &'static str,
}

/// `key`, `kind` of `spillway_key_tokens_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KeyTokenLabels {
    /// Key id.
    pub key: String,
    /// `input` or `output`.
    pub kind: &'static str,
}

/// `key` of `spillway_key_cost_usd_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KeyLabels {
    /// Key id.
    pub key: String,
}

/// The families of this file.
#[derive(Debug)]
pub struct KeyMetrics {
    /// `spillway_key_requests_total`
    pub requests: Family<KeyResultLabels, Counter>,
    /// `spillway_key_tokens_total`
    pub tokens: Family<KeyTokenLabels, Counter>,
    /// `spillway_key_cost_usd_total`
    pub cost: Family<KeyLabels, Counter<f64, AtomicU64>>,
    /// `spillway_key_user_requests_total`
    pub users: Family<KeyUserLabels, Counter>,
    /// `spillway_fair_share_diversions_total`
    pub diversions: Family<CascadeLabels, Counter>,
    /// `spillway_fair_load_relief_total`
    pub relieved: Family<ProviderLabels, Counter>,
    /// Key ids with their own series, each with its named users.
    seen: Mutex<HashMap<String, HashSet<String>>>,
}

impl KeyMetrics {
    /// Registers the families into `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let (requests, tokens, cost, users) =
            (Family::default(), Family::default(), Family::default(), Family::default());
        registry.register(
            names::KEY_REQUESTS,
            "Requests of each virtual key: admitted, or refused by a limit (requests, tokens, parallel, budget)",
            requests.clone(),
        );
        registry.register(names::KEY_TOKENS, "Tokens of each virtual key by kind (input, output)", tokens.clone());
        registry.register(names::KEY_COST, "Spend in USD of each virtual key", cost.clone());
        registry.register(
            names::KEY_USER_REQUESTS,
            "Admitted requests per end user of a key: its first 20 users by name, the rest as other",
            users.clone(),
        );
        let diversions = Family::default();
        registry.register(
            names::FAIR_SHARE_DIVERSIONS,
            "Requests of callers above their fair share sent past free models whose quota was low",
            diversions.clone(),
        );
        let relieved = Family::default();
        registry.register(
            names::FAIR_LOAD_RELIEF,
            "Attempts sent one load profile lighter than the load called for: their caller was at or under its fair share while another was above",
            relieved.clone(),
        );
        Self { requests, tokens, cost, users, diversions, relieved, seen: Mutex::default() }
    }

    /// `id`, or `other` once [`MAX_KEYS`] ids have series.
    fn key(&self, id: &str) -> String {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.contains_key(id) || seen.len() < MAX_KEYS {
            seen.entry(id.to_string()).or_default();
            return id.to_string();
        }
        "other".to_string()
    }

    /// Counts one admission (`result` `admitted`) or refusal of key `id`.
    pub fn request(&self, id: &str, result: &'static str, user: Option<&str>) {
        let key = self.key(id);
        self.requests.get_or_create(&KeyResultLabels { key: key.clone(), result }).inc();
        let Some(user) = user.filter(|_| result == "admitted") else { return };
        let user = {
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            let users = seen.entry(key.clone()).or_default();
            if users.contains(user) || users.len() < MAX_USERS {
                users.insert(user.to_string());
                user.to_string()
            } else {
                "other".to_string()
            }
        };
        self.users.get_or_create(&KeyUserLabels { key, user }).inc();
    }

    /// Counts one request sent past a low free quota in `cascade`.
    pub fn diverted(&self, cascade: &str) {
        self.diversions.get_or_create(&CascadeLabels { cascade: cascade.to_string() }).inc();
    }

    /// Adds one answer's usage to key `id`.
    pub fn used(&self, id: &str, input: u64, output: u64, usd: f64) {
        let key = self.key(id);
        self.tokens.get_or_create(&KeyTokenLabels { key: key.clone(), kind: "input" }).inc_by(input);
        self.tokens.get_or_create(&KeyTokenLabels { key: key.clone(), kind: "output" }).inc_by(output);
        if usd > 0.0 {
            self.cost.get_or_create(&KeyLabels { key }).inc_by(usd);
        }
    }
}
