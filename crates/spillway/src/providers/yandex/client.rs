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
use crate::outcome::AttemptError;
use crate::providers::classify::translate_failure;
use crate::providers::framing::{LineDecoder, Lines};
use crate::providers::native::{self, Upstream, Wire};
use crate::providers::translate::{ErrorClass, StreamItem, TranslateError};
use crate::providers::types::{AttemptRequest, BuildError, Reply};
use http::header::{HeaderName, HeaderValue, AUTHORIZATION};
use serde_json::Value;

/// Yandex's Foundation Models host; `base_url` overrides it.
const DEFAULT_BASE_URL: &str = "https://llm.api.cloud.yandex.net";

#[derive(Debug)]
pub struct YandexAdapter {
    upstream: Upstream,
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
        let url = format!("{}/foundationModels/v1/completion", base.trim_end_matches('/'));
        Ok(Self { upstream: Upstream::new(native::build_client(config, health)?, url, headers), folder_id })
    }

    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let asked = native::Asked::of(&req);
        let ids = req.ids();
        let mut openai = Value::Object(req.body.into_owned());
        if let Some(obj) = openai.as_object_mut() {
            // The translator reads `stream` from the body; the runner decides.
            obj.insert("stream".into(), Value::Bool(req.stream));
        }
        let body = super::to_yandex(&openai, &self.folder_id, req.model_id).map_err(translate_failure)?;
        self.upstream.call::<Completion>(&body, asked, ids, req.hints).await
    }
}

/// The native completion API's answers, for the shared native path. Its
/// stream is cumulative NDJSON, one line per update.
struct Completion;

impl Wire for Completion {
    type Framing = Lines<super::StreamDecoder>;

    fn classify(status: u16, body: &[u8]) -> (ErrorClass, String) {
        super::classify_error(status, body)
    }

    fn completion(body: &[u8]) -> Result<Value, TranslateError> {
        super::from_yandex(body)
    }

    fn framing(include_usage: bool) -> Self::Framing {
        Lines::new(super::StreamDecoder::new(include_usage))
    }
}

impl LineDecoder for super::StreamDecoder {
    fn decode(&mut self, line: &str) -> Result<Vec<StreamItem>, TranslateError> {
        self.on_line(line)
    }
}
