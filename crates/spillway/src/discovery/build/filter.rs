//! A cascade's `filters` (SPEC §4) and the two implicit ones: a model must
//! be active and, when its output modalities are known, produce text.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::discovery::model::ModelMeta;

/// `cascades.<name>.filters`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    /// Tokens; a model with unknown context fails it.
    pub min_context: Option<u32>,
    /// USD per 1M tokens, bounding input and output price both; a model with
    /// either price unknown fails it.
    pub max_cost_per_1m: Option<f64>,
    /// Only free models.
    pub free_only: bool,
    /// Case-insensitive substrings of the model *id* (not the provider):
    /// `guard` drops `groq/meta-llama/llama-guard-4-12b`. No globs: the
    /// typical patterns (`vision`, `embed`, `whisper`) are words.
    pub exclude_patterns: Vec<String>,
}

/// Why a model does not qualify; shown for preferred models that are left
/// out, and by `spillway discover`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Rejection {
    /// The listing marks it inactive.
    Inactive,
    /// It produces no text (image or audio generation).
    NoTextOutput,
    /// `min_context` is set and the context is unknown.
    ContextUnknown,
    /// The context is below `min_context`.
    ContextTooSmall {
        /// The model's context.
        context: u32,
        /// The filter.
        min: u32,
    },
    /// `max_cost_per_1m` or `free_only` is set and a price is unknown
    /// (Groq and OpenAI list none): set the provider's `price_per_1m` or a
    /// `models:` hint.
    PriceUnknown,
    /// Input or output price above `max_cost_per_1m`.
    TooExpensive {
        /// The larger of the two prices, USD per 1M.
        price: f64,
        /// The filter.
        max: f64,
    },
    /// `free_only` and the model is paid.
    NotFree,
    /// The id contains an exclude pattern.
    Excluded {
        /// The pattern as configured.
        pattern: String,
    },
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Inactive => f.write_str("inactive in the listing"),
            Self::NoTextOutput => f.write_str("produces no text"),
            Self::ContextUnknown => f.write_str("context unknown (fails min_context)"),
            Self::ContextTooSmall { context, min } => {
                write!(f, "context {context} < min_context {min}")
            }
            Self::PriceUnknown => f.write_str("price unknown"),
            Self::TooExpensive { price, max } => {
                write!(f, "price ${price}/1M > max_cost_per_1m {max}")
            }
            Self::NotFree => f.write_str("not free (free_only)"),
            Self::Excluded { pattern } => write!(f, "id matches exclude pattern `{pattern}`"),
        }
    }
}

impl Rejection {
    /// Left out for what the listing did not say rather than for what it
    /// said: the operator can fix it with a hint (a WARN, not a note).
    pub fn is_unknown(&self) -> bool {
        matches!(self, Self::ContextUnknown | Self::PriceUnknown)
    }

    /// What to set to let the model in, for an unknown price or context.
    pub fn fix(&self, provider: &str) -> Option<String> {
        match self {
            Self::PriceUnknown => Some(format!("set providers.{provider}.price_per_1m or a models: hint")),
            Self::ContextUnknown => Some(format!("set a models: hint with context under providers.{provider}")),
            _ => None,
        }
    }
}

/// Checks one model against `filters` and the implicit rules.
pub fn check_filters(filters: &Filters, model: &ModelMeta) -> Result<(), Rejection> {
    check(filters, &Patterns::new(&filters.exclude_patterns), model)
}

/// Exclude patterns lowered once per build rather than once per model.
pub(super) struct Patterns<'a> {
    lowered: Vec<(String, &'a str)>,
}

impl<'a> Patterns<'a> {
    pub(super) fn new(patterns: &'a [String]) -> Self {
        let lowered = patterns.iter().filter(|p| !p.is_empty()).map(|p| (p.to_ascii_lowercase(), p.as_str())).collect();
        Self { lowered }
    }

    fn matching(&self, id: &str) -> Option<&'a str> {
        self.lowered.iter().find(|(lower, _)| contains_ignore_ascii_case(id, lower)).map(|(_, original)| *original)
    }
}

pub(super) fn check(filters: &Filters, patterns: &Patterns<'_>, m: &ModelMeta) -> Result<(), Rejection> {
    if !m.active {
        return Err(Rejection::Inactive);
    }
    if !m.output_modalities.is_empty() && !m.output_modalities.iter().any(|o| o == "text") {
        return Err(Rejection::NoTextOutput);
    }
    // The operator's explicit word first: an excluded model is excluded,
    // whatever else the listing did not say about it.
    if let Some(pattern) = patterns.matching(&m.id) {
        return Err(Rejection::Excluded { pattern: pattern.to_owned() });
    }
    if let Some(min) = filters.min_context {
        match m.context {
            None => return Err(Rejection::ContextUnknown),
            Some(context) if context < min => return Err(Rejection::ContextTooSmall { context, min }),
            Some(_) => {}
        }
    }
    if let Some(max) = filters.max_cost_per_1m {
        match m.max_price_per_1m() {
            None => return Err(Rejection::PriceUnknown),
            Some(price) if price > max => return Err(Rejection::TooExpensive { price, max }),
            Some(_) => {}
        }
    }
    if filters.free_only && !m.free {
        // Unknown is not the same as paid: say which one it is.
        if m.price_in_per_1m.is_none() || m.price_out_per_1m.is_none() {
            return Err(Rejection::PriceUnknown);
        }
        return Err(Rejection::NotFree);
    }
    Ok(())
}

/// `needle` must already be ASCII-lowercase. Model ids are ASCII in
/// practice; non-ASCII bytes simply have to match exactly.
fn contains_ignore_ascii_case(haystack: &str, needle: &str) -> bool {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    n.is_empty() || h.windows(n.len()).any(|w| w.iter().zip(n).all(|(a, b)| a.to_ascii_lowercase() == *b))
}
