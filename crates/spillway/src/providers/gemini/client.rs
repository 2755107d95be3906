//! `kind: gemini` — the adapter's I/O around the pure translators.
//!
//! One attempt: [`to_gemini`](super::to_gemini) builds the body, the
//! pooled client posts it with `x-goog-api-key` to
//! `{base_url}/models/{model}:generateContent`, or
//! `…:streamGenerateContent?alt=sse` for a stream, and the answer goes
//! back through [`from_gemini`](super::from_gemini), the SSE
//! [`StreamDecoder`](super::StreamDecoder) or
//! [`classify_error`](super::classify_error) (with the wait of a 429 from
//! its `RetryInfo` when no header gives one).

use crate::config::{HealthConfig, ProviderConfig};
use crate::outcome::AttemptError;
use crate::providers::classify::translate_failure;
use crate::providers::framing::{EventDecoder, Sse};
use crate::providers::native::{self, Upstream, Wire};
use crate::providers::translate::{ErrorClass, StreamItem, TranslateError};
use crate::providers::types::{AttemptRequest, BuildError, Reply};
use http::header::HeaderName;
use serde_json::Value;
use std::time::Duration;

/// The Gemini API's root (generativelanguage v1beta); `base_url` overrides it.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// Characters kept as they are in a model id's path segment.
const SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

#[derive(Debug)]
pub struct GeminiAdapter {
    /// Built with the API's root as its URL; each call names its model.
    upstream: Upstream,
}

impl GeminiAdapter {
    /// Builds the pooled client and the fixed headers.
    pub fn new(config: &ProviderConfig, health: &HealthConfig) -> Result<Self, BuildError> {
        let base = config.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL).trim_end_matches('/');
        let mut headers = native::base_headers(config)?;
        if let Some(key) = &config.api_key {
            headers.insert(HeaderName::from_static("x-goog-api-key"), native::secret_header(config, "", key)?);
        }
        Ok(Self { upstream: Upstream::new(native::build_client(config, health)?, base.to_owned(), headers) })
    }

    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let asked = native::Asked::of(&req);
        let ids = req.ids();
        let openai = Value::Object(req.body.into_owned());
        let body = super::to_gemini(&openai, req.model_id).map_err(translate_failure)?;
        let url = url(self.upstream.url(), req.model_id, req.stream);
        self.upstream.call_at::<Generate>(&url, &body, asked, ids, req.hints).await
    }
}

/// The call's URL: listings name models `models/…` (tuned ones
/// `tunedModels/…`); a bare id gets `models/`.
pub fn url(base: &str, model: &str, stream: bool) -> String {
    let (collection, id) = match model.split_once('/') {
        Some((c @ ("models" | "tunedModels"), id)) => (c, id),
        _ => ("models", model),
    };
    let id = percent_encoding::utf8_percent_encode(id, SEGMENT);
    if stream {
        format!("{base}/{collection}/{id}:streamGenerateContent?alt=sse")
    } else {
        format!("{base}/{collection}/{id}:generateContent")
    }
}

/// `generateContent`'s answers, for the shared native path.
struct Generate;

impl Wire for Generate {
    type Framing = Sse<super::StreamDecoder>;

    fn classify(status: u16, body: &[u8]) -> (ErrorClass, String) {
        super::classify_error(status, body)
    }

    fn completion(body: &[u8]) -> Result<Value, TranslateError> {
        super::from_gemini(body)
    }

    fn framing(include_usage: bool) -> Self::Framing {
        Sse::new(super::StreamDecoder::new(include_usage))
    }

    fn retry_after(body: &[u8]) -> Option<Duration> {
        super::response::retry_delay(body)
    }
}

impl EventDecoder for super::StreamDecoder {
    fn decode(&mut self, _event: Option<&str>, data: &str) -> Result<Vec<StreamItem>, TranslateError> {
        self.on_data(data)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn urls_name_the_model_and_the_stream() {
        let base = super::DEFAULT_BASE_URL;
        assert_eq!(
            super::url(base, "gemini-2.5-flash", false),
            format!("{base}/models/gemini-2.5-flash:generateContent")
        );
        assert_eq!(
            super::url(base, "models/gemini-2.5-flash", true),
            format!("{base}/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
        );
        assert_eq!(
            super::url(base, "tunedModels/my-tune", false),
            format!("{base}/tunedModels/my-tune:generateContent")
        );
    }
}
