//! Fetching the providers' model listings: the only network I/O of
//! discovery.
//!
//! One [`ListingSource`] per provider with discovery enabled, with its own
//! pooled client (the same builder as the provider adapters, so `ca_file`
//! applies) and its auth headers; GigaChat's listing wants a bearer token
//! from its OAuth endpoint, so its source holds the chat adapter's
//! [`TokenCache`]. [`fetch_all`] asks every provider at once;
//! each request has its own timeout and a body cap, and a failure costs only
//! that provider's listing. Runs in background jobs and the CLI, never on
//! the request path.

use std::time::Duration;

use futures_util::future::join_all;
use http::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION};

use super::listing::{listing_url, parse_listing, Listing, ListingError, ListingFormat};
use crate::config::{Config, HealthConfig, ProviderConfig, ProviderKind};
use crate::providers::gigachat::auth::{Token, TokenCache};
use crate::providers::{gigachat, native};

/// One listing request may take this long (OpenRouter's listing is a few
/// MB; a slow provider must not hold the round for long).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// A listing larger than this is not a listing (2,000 OpenRouter models
/// are about 2 MB).
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// Anthropic pages are 1,000 models; more pages than this means a loop.
const MAX_PAGES: usize = 20;
/// Anthropic's API root when `base_url` is not set.
const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` when `api_version` is not set.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Why a provider's listing is not available this round. Secret-free: it
/// names the provider and the status, never a header.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The config does not say where to fetch from, or the client cannot be
    /// built (a bad `ca_file`).
    #[error("{0}")]
    Setup(String),
    /// No OAuth token (GigaChat): the token endpoint refused or failed.
    #[error("no OAuth token: {0}")]
    Auth(String),
    /// Connect error, timeout, reset.
    #[error("request failed: {0}")]
    Transport(String),
    /// A non-2xx answer.
    #[error("HTTP {0}")]
    Status(u16),
    /// Bigger than [`MAX_BODY_BYTES`].
    #[error("the listing is larger than {MAX_BODY_BYTES} bytes")]
    TooLarge,
    /// Paging did not end.
    #[error("the listing had more than {MAX_PAGES} pages")]
    TooManyPages,
    /// The body was not a listing of this format.
    #[error(transparent)]
    Listing(#[from] ListingError),
}

impl FetchError {
    /// A bounded label for metrics and JSON.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Setup(_) => "setup",
            Self::Auth(_) => "auth",
            Self::Transport(_) => "transport",
            Self::Status(_) => "status",
            Self::TooLarge => "too_large",
            Self::TooManyPages => "too_many_pages",
            Self::Listing(e) => e.metric_label(),
        }
    }
}

/// Where and how to GET one provider's listing.
#[derive(Debug)]
pub struct ListingSource {
    /// The provider's name in the config.
    pub provider: String,
    /// Its listing format.
    pub format: ListingFormat,
    base_url: String,
    client: reqwest::Client,
    headers: HeaderMap,
    /// GigaChat: the bearer token for each request. A source lives for one
    /// round, so a round costs one token request.
    tokens: Option<TokenCache>,
}

impl ListingSource {
    /// The source of a provider with discovery enabled; `Ok(None)` when
    /// discovery is off for it.
    pub fn new(p: &ProviderConfig, health: &HealthConfig) -> Result<Option<Self>, FetchError> {
        let Some(format) = p.discovery_format.as_deref() else {
            return Ok(None);
        };
        let format: ListingFormat =
            format.parse().map_err(|e: super::UnknownFormat| FetchError::Setup(e.to_string()))?;
        let setup = |e: crate::providers::BuildError| FetchError::Setup(e.to_string());
        let client = native::build_client(p, health).map_err(setup)?;
        let mut tokens = None;
        let mut headers = native::base_headers(p).map_err(setup)?;
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let base_url = match p.kind {
            ProviderKind::Anthropic => {
                if let Some(key) = &p.api_key {
                    headers.insert(
                        HeaderName::from_static("x-api-key"),
                        native::secret_header(p, "", key).map_err(setup)?,
                    );
                }
                let version = p.api_version.as_deref().unwrap_or(ANTHROPIC_VERSION);
                let version = HeaderValue::from_str(version)
                    .map_err(|_| FetchError::Setup("api_version is not a valid header value".into()))?;
                headers.insert(HeaderName::from_static("anthropic-version"), version);
                p.base_url.clone().unwrap_or_else(|| ANTHROPIC_BASE_URL.to_owned())
            }
            ProviderKind::GigaChat => {
                // The auth key only buys tokens; the API takes the token.
                tokens = Some(TokenCache::new(p, client.clone()).map_err(setup)?);
                p.base_url.clone().unwrap_or_else(|| gigachat::DEFAULT_BASE_URL.to_owned())
            }
            _ => {
                if let Some(key) = &p.api_key {
                    headers.insert(AUTHORIZATION, native::secret_header(p, "Bearer ", key).map_err(setup)?);
                }
                p.base_url.clone().ok_or_else(|| FetchError::Setup("no base_url to fetch the listing from".into()))?
            }
        };
        Ok(Some(Self { provider: p.name.clone(), format, base_url, client, headers, tokens }))
    }

    /// GETs the whole listing (every page) and reads it.
    pub async fn fetch(&self) -> Result<Listing, FetchError> {
        let mut all = Listing::default();
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let url = listing_url(self.format, &self.base_url, after.as_deref());
            let body = self.get(&url).await?;
            // Reading a few MB of JSON takes milliseconds: off the runtime's
            // workers, so requests sharing them do not wait on it.
            let (format, provider) = (self.format, self.provider.clone());
            let page = tokio::task::spawn_blocking(move || parse_listing(format, &provider, &body))
                .await
                .map_err(|e| FetchError::Setup(format!("the listing reader stopped: {e}")))??;
            all.warnings.extend(page.warnings);
            for m in page.models {
                // Pages do not overlap, but a provider that repeats an id
                // across pages must not build it twice.
                if !all.models.iter().any(|x| x.id == m.id) {
                    all.models.push(m);
                }
            }
            match page.next_page {
                Some(next) if after.as_deref() != Some(next.as_str()) => after = Some(next),
                _ => return Ok(all),
            }
        }
        Err(FetchError::TooManyPages)
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, FetchError> {
        let mut resp = match &self.tokens {
            None => self.send(url, None).await?,
            Some(tokens) => {
                let token = self.token(tokens).await?;
                let resp = self.send(url, Some(&token)).await?;
                if resp.status().as_u16() == 401 {
                    // A token can die before its expiry: one new token and
                    // one retry, as the chat adapter does.
                    tokens.invalidate(&token);
                    self.send(url, Some(&self.token(tokens).await?)).await?
                } else {
                    resp
                }
            }
        };
        let transport = |e: reqwest::Error| transport_error(&e);
        if !resp.status().is_success() {
            return Err(FetchError::Status(resp.status().as_u16()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(FetchError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    async fn token(&self, tokens: &TokenCache) -> Result<Token, FetchError> {
        // The error names the status, never the key or the token.
        tokens.get().await.map_err(|e| FetchError::Auth(e.to_string()))
    }

    async fn send(&self, url: &str, token: Option<&Token>) -> Result<reqwest::Response, FetchError> {
        let mut req = self.client.get(url).headers(self.headers.clone()).timeout(REQUEST_TIMEOUT);
        if let Some(token) = token {
            // `bearer_auth` marks the header sensitive.
            req = req.bearer_auth(token.expose());
        }
        req.send().await.map_err(|e| transport_error(&e))
    }
}

/// A failed call with its cause — `timed out after 30s`, or the root cause
/// (`Connection refused`) — not only reqwest's "error sending request".
/// reqwest's errors name the URL but never headers, so no key leaks.
fn transport_error(e: &reqwest::Error) -> FetchError {
    if e.is_timeout() {
        return FetchError::Transport(format!("timed out after {}s", REQUEST_TIMEOUT.as_secs()));
    }
    let mut root = None;
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        root = Some(s.to_string());
        source = s.source();
    }
    let what = if e.is_connect() { "cannot connect" } else { "the call failed" };
    FetchError::Transport(match root {
        Some(cause) => format!("{what}: {cause}"),
        None => e.to_string(),
    })
}

/// What one provider's fetch gave.
#[derive(Debug)]
pub struct Fetched {
    /// The provider.
    pub provider: String,
    /// The listing, or why there is none this round.
    pub result: Result<Listing, FetchError>,
}

/// Fetches every provider's listing at once; `on_done` is called as each
/// finishes (the CLI's progress line). Providers without discovery are not
/// in the result.
pub async fn fetch_all(config: &Config, on_done: &(dyn Fn(&Fetched) + Sync)) -> Vec<Fetched> {
    let work = config.providers.values().filter(|p| p.discovery_format.is_some()).map(|p| async move {
        let result = if p.kind == ProviderKind::Mock {
            // A mock's listing is in its config: read, not fetched.
            Ok(mock_listing(p))
        } else {
            match ListingSource::new(p, &config.health) {
                Ok(Some(source)) => source.fetch().await,
                Ok(None) => Err(FetchError::Setup("discovery is off".into())),
                Err(e) => Err(e),
            }
        };
        let fetched = Fetched { provider: p.name.clone(), result };
        on_done(&fetched);
        fetched
    });
    join_all(work).await
}

/// A mock provider's `listing:` as a listing reader would give it: prices
/// as listed (0 / 0 for a model marked free without prices), free when
/// marked so or when both prices are zero.
pub fn mock_listing(p: &ProviderConfig) -> Listing {
    let models = p
        .listing
        .iter()
        .flatten()
        .map(|l| {
            let mut m = super::ModelMeta::new(&p.name, &l.id);
            m.context = l.context.map(|c| u32::try_from(c).unwrap_or(u32::MAX));
            // A model marked free costs nothing (OpenRouter lists `:free` at 0 / 0).
            let price = l.price.or(l.free.then_some(crate::config::Price { input: 0.0, output: 0.0 }));
            m.price_in_per_1m = price.map(|p| p.input);
            m.price_out_per_1m = price.map(|p| p.output);
            m.free = l.free || l.price.is_some_and(|p| p.input == 0.0 && p.output == 0.0);
            m
        })
        .collect();
    Listing { models, warnings: Vec::new(), next_page: None }
}

/// How many providers [`fetch_all`] will ask.
pub fn provider_count(config: &Config) -> usize {
    config.providers.values().filter(|p| p.discovery_format.is_some()).count()
}
