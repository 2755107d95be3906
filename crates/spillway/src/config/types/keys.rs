//! `keys:` compiled: virtual client keys with their limits.

use indexmap::IndexMap;

/// How long a budget's period is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetPeriod {
    /// A UTC day.
    Day,
    /// A UTC calendar month.
    Month,
    /// Never resets.
    Total,
}

impl BudgetPeriod {
    /// The word the config and the admin API use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Month => "month",
            Self::Total => "total",
        }
    }

    /// Parses `day`, `month`, `total`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "day" => Some(Self::Day),
            "month" => Some(Self::Month),
            "total" => Some(Self::Total),
            _ => None,
        }
    }
}

/// A spend limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyBudget {
    /// USD per period.
    pub usd: f64,
    /// The period.
    pub per: BudgetPeriod,
}

/// Limits of one caller (a key, or one end user of a key). `None`: no limit.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Limits {
    /// Requests per minute.
    pub rpm: Option<u64>,
    /// Tokens per minute.
    pub tpm: Option<u64>,
    /// Requests in flight.
    pub max_parallel: Option<u64>,
    /// Spend per period.
    pub budget: Option<KeyBudget>,
}

impl Limits {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.rpm.is_some() || self.tpm.is_some() || self.max_parallel.is_some() || self.budget.is_some()
    }
}

/// What a key does while the shared store cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StoreDown {
    /// Each instance applies the limits on its own.
    #[default]
    Allow,
    /// Requests are refused (503).
    Deny,
}

impl StoreDown {
    /// `allow` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }
}

/// One virtual key, from `keys:` or made through `/admin/keys`.
#[derive(Debug, Clone, PartialEq)]
pub struct KeySpec {
    /// Its id (bounded characters: a metric label value).
    pub id: String,
    /// A human name (the admin API's `name`; the id for config keys).
    pub name: String,
    /// Lowercase hex SHA-256 of the secret; the secret itself is not kept.
    pub secret_sha256: String,
    /// The cascades and model refs it may use; `None`: all.
    pub cascades: Option<Vec<String>>,
    /// The key's own limits.
    pub limits: Limits,
    /// Limits of each of its end users.
    pub per_user: Limits,
    /// Unix ms after which it is refused.
    pub expires_at_ms: Option<u64>,
    /// Free-form labels.
    pub metadata: IndexMap<String, String>,
    /// While the shared store is down.
    pub on_store_down: StoreDown,
}

/// `fairness:` compiled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FairnessConfig {
    /// On (the default).
    pub enabled: bool,
    /// Light callers keep a lighter load profile while heavy ones exist
    /// (`tenancy::fair::load_relief`); on by default, only with `enabled`.
    pub load_profiles: bool,
    /// A free model's quota is low below this share left.
    pub low_quota: f64,
    /// A caller is above its fair share past this many times it.
    pub over_share: f64,
    /// The window callers' shares are counted over.
    pub window: std::time::Duration,
}

impl Default for FairnessConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            load_profiles: true,
            low_quota: 0.5,
            over_share: 2.0,
            window: std::time::Duration::from_secs(60),
        }
    }
}
