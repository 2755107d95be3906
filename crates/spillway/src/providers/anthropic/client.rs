//! `kind: anthropic` — the adapter's I/O around the pure translators.
//!
//! One attempt: [`to_anthropic`](super::to_anthropic) builds the
//! `POST /v1/messages` body (with `max_tokens` from the request or the
//! provider's `default_max_tokens`), the pooled client sends it with
//! `x-api-key` and `anthropic-version`, and the answer goes back through
//! [`from_anthropic`](super::from_anthropic), the SSE
//! [`StreamDecoder`](super::StreamDecoder) or
//! [`classify_error`](super::classify_error) (529 `overloaded_error` is an
//! upstream failure, `rate_limit_error` a rate limit with the reset from
//! `retry-after` or the `anthropic-ratelimit-*-reset` headers).

use crate::config::{HealthConfig, ProviderConfig};
use crate::outcome::AttemptError;
use crate::providers::classify::translate_failure;
use crate::providers::framing::{EventDecoder, Sse};
use crate::providers::native::{self, Upstream, Wire};
use crate::providers::translate::{ErrorClass, StreamItem, TranslateError};
use crate::providers::types::{AttemptRequest, BuildError, Reply};
use http::header::{HeaderName, HeaderValue};
use serde_json::Value;

/// Anthropic's API host; `base_url` overrides it (a proxy, a test).
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The version every Anthropic SDK sends (reference §4.1).
const DEFAULT_API_VERSION: &str = "2023-06-01";
/// `max_tokens` when neither the client nor `default_max_tokens` set one:
/// the Messages API requires it, and this fits every current Claude model.
const FALLBACK_MAX_TOKENS: u32 = 4096;

#[derive(Debug)]
pub struct AnthropicAdapter {
    upstream: Upstream,
    default_max_tokens: u32,
}

impl AnthropicAdapter {
    /// Builds the pooled client and the fixed headers.
    pub fn new(config: &ProviderConfig, health: &HealthConfig) -> Result<Self, BuildError> {
        let base = config.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
        // Accept both the bare host and the `…/v1` root, as discovery does.
        let base = base.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        let mut headers = native::base_headers(config)?;
        if let Some(key) = &config.api_key {
            headers.insert(HeaderName::from_static("x-api-key"), native::secret_header(config, "", key)?);
        }
        let version = config.api_version.as_deref().unwrap_or(DEFAULT_API_VERSION);
        let version = HeaderValue::from_str(version).map_err(|_| BuildError {
            provider: config.name.clone(),
            message: "api_version is not a valid header value".into(),
        })?;
        headers.insert(HeaderName::from_static("anthropic-version"), version);
        Ok(Self {
            upstream: Upstream::new(native::build_client(config, health)?, format!("{base}/v1/messages"), headers),
            default_max_tokens: config.default_max_tokens.unwrap_or(FALLBACK_MAX_TOKENS),
        })
    }

    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let asked = native::Asked::of(&req);
        let ids = req.ids();
        let openai = Value::Object(req.body.into_owned());
        let mut body =
            super::to_anthropic(&openai, req.model_id, self.default_max_tokens).map_err(translate_failure)?;
        if let Some(obj) = body.as_object_mut() {
            // The runner decides streaming, whatever the body said.
            obj.remove("stream");
            if req.stream {
                obj.insert("stream".into(), Value::Bool(true));
            }
        }
        self.upstream.call::<Messages>(&body, asked, ids, req.hints).await
    }
}

/// The Messages API's answers, for the shared native path.
struct Messages;

impl Wire for Messages {
    type Framing = Sse<super::StreamDecoder>;

    fn classify(status: u16, body: &[u8]) -> (ErrorClass, String) {
        super::classify_error(status, body)
    }

    fn completion(body: &[u8]) -> Result<Value, TranslateError> {
        super::from_anthropic(body)
    }

    fn framing(include_usage: bool) -> Self::Framing {
        Sse::new(super::StreamDecoder::new(include_usage))
    }
}

impl EventDecoder for super::StreamDecoder {
    fn decode(&mut self, event: Option<&str>, data: &str) -> Result<Vec<StreamItem>, TranslateError> {
        self.on_event(event, data)
    }
}
