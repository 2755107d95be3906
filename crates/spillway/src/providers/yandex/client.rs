//! `kind: yandex` — the adapter's I/O around the pure translators.
//!
//! One attempt: [`to_yandex`](super::to_yandex) builds the native body
//! (`modelUri` from `folder_id` and the model id, `maxTokens` as a string),
//! the pooled client posts it to `{base_url}/foundationModels/v1/completion`
//! with `Authorization: Api-Key …` (or `Bearer <IAM token>`) and
//! `x-folder-id`, and the answer goes through
//! [`from_yandex`](super::from_yandex), or line by line through the
//! cumulative NDJSON [`StreamDecoder`](super::StreamDecoder), or through
//! [`classify_error`](super::classify_error) for the grpc-gateway errors.
//!
//! Yandex's OpenAI-compatible endpoint needs no adapter of its own: it is
//! `kind: openai` with `base_url: https://llm.api.cloud.yandex.net/v1`
//! (see docs/providers.md).

use crate::config::{HealthConfig, ProviderConfig};
use crate::outcome::{AttemptError, Failure};
use crate::providers::native::{self, Lines};
use crate::providers::openai_compat::transport_error;
use crate::providers::{AttemptRequest, BuildError, Reply};
use http::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use serde_json::Value;

/// Yandex's Foundation Models host; `base_url` overrides it.
const DEFAULT_BASE_URL: &str = "https://llm.api.cloud.yandex.net";

/// A Yandex Foundation Models upstream.
#[derive(Debug)]
pub struct YandexAdapter {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    folder_id: String,
}

impl YandexAdapter {
    /// Builds the pooled client and the fixed headers.
    pub fn new(config: &ProviderConfig, health: &HealthConfig) -> Result<Self, BuildError> {
        let err = |message: &str| BuildError { provider: config.name.clone(), message: message.to_owned() };
        let base = config.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
        let folder_id = config.folder_id.clone().ok_or_else(|| err("no folder_id"))?;
        let mut headers = native::base_headers(config)?;
        // A static API key wins over an IAM token: it does not expire.
        let auth = match (&config.api_key, &config.iam_token) {
            (Some(key), _) => native::secret_header(config, "Api-Key ", key)?,
            (None, Some(iam)) => native::secret_header(config, "Bearer ", iam)?,
            (None, None) => return Err(err("no api_key or iam_token")),
        };
        headers.insert(AUTHORIZATION, auth);
        let folder = HeaderValue::from_str(&folder_id).map_err(|_| err("folder_id is not a valid header value"))?;
        headers.insert(HeaderName::from_static("x-folder-id"), folder);
        Ok(Self {
            client: native::build_client(config, health)?,
            url: format!("{}/foundationModels/v1/completion", base.trim_end_matches('/')),
            headers,
            folder_id,
        })
    }

    /// Sends one attempt.
    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let mut openai = Value::Object(req.body.into_owned());
        if let Some(obj) = openai.as_object_mut() {
            // The translator reads `stream` from the body; the runner decides.
            obj.insert("stream".into(), Value::Bool(req.stream));
        }
        let body = super::to_yandex(&openai, &self.folder_id, req.model_id).map_err(native::translate_failure)?;
        let bytes = serde_json::to_vec(&body).map_err(|e| AttemptError::new(Failure::BrokenBody, e.to_string()))?;
        let resp = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(bytes)
            .send()
            .await
            .map_err(|e| transport_error(&e))?;
        if !resp.status().is_success() {
            return Err(native::error_from_response(resp, super::classify_error).await);
        }
        if req.stream {
            // The content type of the native stream is unverified
            // (`application/json` or NDJSON), so it is not checked: every
            // line is parsed whatever the header says.
            let mut decoder = super::StreamDecoder::new(req.include_usage);
            let framing = Lines::new(move |line: &str| decoder.on_line(line));
            return Ok(Reply::Stream(native::decoded_stream(resp.bytes_stream(), framing)));
        }
        let body = native::body_bytes(resp).await?;
        let value = super::from_yandex(&body).map_err(native::translate_failure)?;
        Ok(Reply::Complete(value.into()))
    }
}
