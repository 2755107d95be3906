//! Listing readers: one provider's model listing body in, [`ModelMeta`]s out.
//!
//! The background discovery refresh GETs [`listing_url`] for each provider
//! with discovery enabled and hands the body to [`parse_listing`]; nothing
//! here does I/O. Readers are tolerant by design, because listings change
//! shape without notice: a body that is not JSON or has no model array is an
//! error (the caller keeps the last good cascade), while one odd model or one
//! odd field only costs that model or that field, with a warning. Nothing
//! here panics on any input.

mod anthropic;
mod cloud;
mod ollama;
mod openai_like;
mod openrouter;
mod read;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::ModelMeta;

/// The listing formats of SPEC §4 (`discovery.format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ListingFormat {
    /// `GET /models`: ids only (OpenAI, and any compatible server).
    Openai,
    /// Groq's `/models`: adds `context_window` and `active`.
    Groq,
    /// OpenRouter's `/models`: context, per-token prices, modalities, tools.
    Openrouter,
    /// Anthropic's paged `GET /v1/models`: `max_input_tokens`, `has_more`.
    Anthropic,
    /// GigaChat's `/models`: ids and a `type` (`chat`, `embedder`).
    Gigachat,
    /// Ollama's native `GET /api/tags`: names and `parameter_size`.
    Ollama,
    /// vLLM's `/v1/models`: `max_model_len` is the context.
    Vllm,
    /// Azure OpenAI's deployments (`GET /openai/deployments`): the ids a
    /// `kind: azure` provider calls.
    Azure,
    /// Gemini's paged `GET /models`: `inputTokenLimit`,
    /// `supportedGenerationMethods`, `nextPageToken`.
    Gemini,
}

impl ListingFormat {
    /// Every format, for help texts and config errors.
    pub const ALL: [ListingFormat; 9] = [
        Self::Openai,
        Self::Groq,
        Self::Openrouter,
        Self::Anthropic,
        Self::Gigachat,
        Self::Ollama,
        Self::Vllm,
        Self::Azure,
        Self::Gemini,
    ];

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Groq => "groq",
            Self::Openrouter => "openrouter",
            Self::Anthropic => "anthropic",
            Self::Gigachat => "gigachat",
            Self::Ollama => "ollama",
            Self::Vllm => "vllm",
            Self::Azure => "azure",
            Self::Gemini => "gemini",
        }
    }
}

impl fmt::Display for ListingFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown format name; says which ones exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown listing format `{0}`; expected one of openai, groq, openrouter, anthropic, gigachat, ollama, vllm, azure, gemini"
)]
pub struct UnknownFormat(pub String);

impl FromStr for ListingFormat {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|f| f.as_str() == s).ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// The GET path of a format's listing, relative to the provider's
/// `base_url` as SPEC §4 writes it (which already ends in the API version:
/// `…/openai/v1`, `…/api/v1`, `http://host:8000/v1`).
///
/// Two formats sit elsewhere, and [`listing_url`] handles them:
/// Anthropic's `base_url` is the bare host (`https://api.anthropic.com`), so
/// its path carries `/v1`; Ollama's native `/api/tags` hangs off the host, so
/// a `/v1` at the end of `base_url` (the OpenAI-compatible root) is dropped.
pub fn listing_path(format: ListingFormat) -> &'static str {
    match format {
        ListingFormat::Anthropic => "/v1/models",
        ListingFormat::Ollama => "/api/tags",
        ListingFormat::Azure => cloud::AZURE_DEPLOYMENTS,
        _ => "/models",
    }
}

/// Anthropic pages hold at most this many models; asking for the maximum
/// keeps the refresh to one request in practice.
pub const ANTHROPIC_PAGE_LIMIT: u32 = 1000;

/// The full listing URL for `base_url`; `after` is [`Listing::next_page`]
/// from the previous page (only Anthropic pages).
pub fn listing_url(format: ListingFormat, base_url: &str, after: Option<&str>) -> String {
    let base = base_url.trim_end_matches('/');
    let mut url = match format {
        // Accept both `https://api.anthropic.com` and `…/v1`.
        ListingFormat::Anthropic => match base.strip_suffix("/v1") {
            Some(host) => format!("{host}/v1/models"),
            None => format!("{base}/v1/models"),
        },
        ListingFormat::Ollama => {
            let host = base.strip_suffix("/v1").unwrap_or(base);
            format!("{host}/api/tags")
        }
        ListingFormat::Azure => cloud::azure_url(base),
        ListingFormat::Gemini => return cloud::gemini_url(base, after),
        _ => format!("{base}/models"),
    };
    if format == ListingFormat::Anthropic {
        url.push_str(&format!("?limit={ANTHROPIC_PAGE_LIMIT}"));
        if let Some(after) = after {
            url.push_str("&after_id=");
            read::percent_encode_into(after, &mut url);
        }
    }
    url
}

/// What one listing body yielded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    /// Usable models, in listing order, ids unique.
    pub models: Vec<ModelMeta>,
    /// One line per skipped model or unreadable field, prefixed with the
    /// model ref where there is one; meant for a WARN log line each.
    pub warnings: Vec<String>,
    /// Anthropic: `has_more` was true; fetch again with this `after_id`
    /// (see [`listing_url`]) and append; Gemini: its `nextPageToken`.
    /// Always `None` for other formats.
    pub next_page: Option<String>,
}

/// Why a whole listing was rejected. The caller keeps the last good
/// cascade (SPEC §4) and logs this.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    /// The body is not JSON at all (an HTML error page, a truncated body).
    #[error("the listing is not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    /// JSON, but without the array of models this format has.
    #[error("the listing has no `{field}` array")]
    NoModelArray {
        /// The field that should hold the models (`data`, `models`).
        field: &'static str,
    },
    /// The array had entries but none of them was usable: most likely the
    /// format changed, and an empty cascade would be worse than a stale one.
    #[error("none of the {skipped} listed models could be read")]
    NoUsableModels {
        /// How many entries were skipped.
        skipped: usize,
    },
}

impl ListingError {
    /// A bounded label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::NotJson(_) => "not_json",
            Self::NoModelArray { .. } => "no_model_array",
            Self::NoUsableModels { .. } => "no_usable_models",
        }
    }
}

/// Reads one listing body of `format` for the provider named `provider`.
pub fn parse_listing(format: ListingFormat, provider: &str, body: &[u8]) -> Result<Listing, ListingError> {
    let root: Value = serde_json::from_slice(body)?;
    let field = if matches!(format, ListingFormat::Ollama | ListingFormat::Gemini) { "models" } else { "data" };
    let entries = root.get(field).and_then(Value::as_array).ok_or(ListingError::NoModelArray { field })?;

    let mut out = Listing::default();
    let mut seen = std::collections::HashSet::with_capacity(entries.len());
    let mut ignored = 0usize;
    for entry in entries {
        let parsed = match format {
            ListingFormat::Openai => openai_like::openai(provider, entry, &mut out.warnings),
            ListingFormat::Groq => openai_like::groq(provider, entry, &mut out.warnings),
            ListingFormat::Gigachat => openai_like::gigachat(provider, entry, &mut out.warnings),
            ListingFormat::Vllm => openai_like::vllm(provider, entry, &mut out.warnings),
            ListingFormat::Openrouter => openrouter::model(provider, entry, &mut out.warnings),
            ListingFormat::Anthropic => anthropic::model(provider, entry, &mut out.warnings),
            ListingFormat::Ollama => ollama::model(provider, entry, &mut out.warnings),
            ListingFormat::Azure => cloud::azure_deployment(provider, entry, &mut out.warnings),
            ListingFormat::Gemini => cloud::gemini_model(provider, entry, &mut out.warnings),
        };
        match parsed {
            Entry::Model(m) => {
                if seen.insert(m.id.clone()) {
                    out.models.push(m);
                } else {
                    out.warnings.push(format!("{provider}/{}: listed twice; the first entry is kept", m.id));
                }
            }
            Entry::Skipped => {}
            // Not a chat model (GigaChat embedders): expected, not a fault.
            Entry::NotChat => ignored += 1,
        }
    }
    if out.models.is_empty() && entries.len() > ignored {
        return Err(ListingError::NoUsableModels { skipped: entries.len() - ignored });
    }
    if format == ListingFormat::Anthropic {
        out.next_page = anthropic::next_page(&root, &out.models, &mut out.warnings);
    }
    if format == ListingFormat::Gemini {
        out.next_page = cloud::gemini_next_page(&root);
    }
    Ok(out)
}

/// What a per-format reader made of one array entry.
enum Entry {
    /// A usable model.
    Model(ModelMeta),
    /// Unusable; the reader has pushed a warning saying why.
    Skipped,
    /// Fine, but not something a chat cascade can use.
    NotChat,
}
