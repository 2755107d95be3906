//! `keys:` as written: virtual client keys, each with its own limits,
//! budget and allowed cascades (compiled in `compile/keys.rs`).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Deserialize;

/// One entry of `keys:`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawKey {
    /// The key's id: what logs, metrics, `/admin/keys` and stored items name
    /// it by (letters, digits, `-`, `_`, `.`; at most 64 characters).
    pub id: String,
    /// The secret clients send (Bearer or `x-api-key`), usually `${ENV}`;
    /// only its SHA-256 is kept once the config is compiled.
    pub key: String,
    /// The cascades (or `provider/model` refs) it may use; all when left out.
    pub cascades: Option<Vec<String>>,
    /// Requests per minute (a sliding minute, over every instance).
    pub rpm: Option<u64>,
    /// Tokens per minute: prompt estimate plus `max_tokens` reserved at
    /// admission, settled with the real usage.
    pub tpm: Option<u64>,
    /// Requests in flight at once.
    pub max_parallel: Option<u64>,
    /// Spend limit in USD per day, month or in total.
    pub budget: Option<RawKeyBudget>,
    /// Limits each end user of the key has (the OpenAI `user` field,
    /// Anthropic `metadata.user_id`, or the `x-spillway-user` header).
    pub per_user: Option<RawUserLimits>,
    /// When the key stops working: RFC 3339 (`2027-01-01T00:00:00Z`) or a date (`2027-01-01`, UTC midnight).
    pub expires_at: Option<String>,
    /// Free-form labels shown by `/admin/keys` (never in metrics).
    #[serde(default)]
    pub metadata: IndexMap<String, String>,
    /// While the shared store cannot be reached: `allow` (default; each
    /// instance applies the limits locally) or `deny` (503).
    pub on_store_down: Option<String>,
}

/// `budget:` of a key or of its users.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawKeyBudget {
    /// USD that may be spent per period.
    pub usd: f64,
    /// `day` (UTC), `month` (UTC) or `total` (default `month`).
    pub per: Option<String>,
}

/// `per_user:` of a key.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawUserLimits {
    /// Requests per minute of each end user.
    pub rpm: Option<u64>,
    /// Tokens per minute of each end user.
    pub tpm: Option<u64>,
    /// Spend limit of each end user.
    pub budget: Option<RawKeyBudget>,
}

/// `fairness:` how a shared free quota and a saturated GPU are shared between callers.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFairness {
    /// Fair shares on (default true): send callers above their fair share down the cascade first when a free model's quota runs low, and (with `load_profiles`) give them the lazier load profile first.
    pub enabled: Option<bool>,
    /// Under a degrading load profile, callers at or under their fair share of the provider's recent traffic run one profile lighter than the load calls for while some caller is above its share (default true; needs `enabled`).
    pub load_profiles: Option<bool>,
    /// A free model's quota is low below this share left, as its last answer's rate-limit headers said (default 0.5).
    pub low_quota: Option<f64>,
    /// A caller is above its fair share past this many times it (default 2), with at least 3 requests in the window.
    pub over_share: Option<f64>,
    /// The window callers' shares are counted over (default `1m`).
    pub window: Option<String>,
}
