//! `kind: gigachat` — the adapter's I/O around the pure translators.
//!
//! One attempt: a bearer token from the provider's [`TokenCache`],
//! [`to_gigachat`](super::to_gigachat) for the v1 body, a `POST` to
//! `{base_url}/chat/completions` over the client that trusts `ca_file` (the
//! Russian root CA, for both the OAuth and the API host), then
//! [`from_gigachat`](super::from_gigachat), the SSE
//! [`StreamDecoder`](super::StreamDecoder) or
//! [`classify_error`](super::classify_error). A 401 means the token died
//! early: it is dropped and the call is made once more with a new one; a
//! second 401 is the runner's "provider key wrong".

use super::auth::{Token, TokenCache};
use crate::config::{HealthConfig, ProviderConfig};
use crate::outcome::{AttemptError, Failure};
use crate::providers::classify::translate_failure;
use crate::providers::framing::{EventDecoder, Sse};
use crate::providers::native::{self, Upstream, Wire};
use crate::providers::translate::{ErrorClass, StreamItem, TranslateError};
use crate::providers::types::{AttemptRequest, BuildError, Reply};
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CACHE_CONTROL};
use serde_json::Value;

/// Sber's API root; `base_url` overrides it.
pub(crate) const DEFAULT_BASE_URL: &str = "https://gigachat.devices.sberbank.ru/api/v1";

#[derive(Debug)]
pub struct GigaChatAdapter {
    upstream: Upstream,
    /// Boxed: the cache is large and `Adapter` is an enum of adapters.
    tokens: Box<TokenCache>,
}

impl GigaChatAdapter {
    /// Builds the pooled client, the fixed headers and the token cache.
    pub fn new(config: &ProviderConfig, health: &HealthConfig) -> Result<Self, BuildError> {
        let base = config.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
        let client = native::build_client(config, health)?;
        Ok(Self {
            tokens: Box::new(TokenCache::new(config, client.clone())?),
            upstream: Upstream::new(
                client,
                format!("{}/chat/completions", base.trim_end_matches('/')),
                native::base_headers(config)?,
            ),
        })
    }

    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let asked = native::Asked::of(&req);
        let openai = Value::Object(req.body.into_owned());
        let mut body = super::to_gigachat(&openai, req.model_id).map_err(translate_failure)?;
        if let Some(obj) = body.as_object_mut() {
            obj.insert("stream".into(), Value::Bool(req.stream));
        }
        let bytes = native::encode(&body)?;
        let mut resp = self.send(&bytes, req.stream).await?;
        if resp.0.status().as_u16() == 401 {
            // Tokens can die before their expiry (revoked, clock skew): one
            // refresh and one retry, as the official SDK does.
            self.tokens.invalidate(&resp.1);
            resp = self.send(&bytes, req.stream).await?;
        }
        native::read::<Chat>(resp.0, asked).await
    }

    /// One chat request with the current token; returns the token used, so
    /// a 401 can drop exactly that one.
    async fn send(&self, body: &Bytes, stream: bool) -> Result<(reqwest::Response, Token), AttemptError> {
        let token = self.tokens.get().await?;
        let mut bearer = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
            .map_err(|_| AttemptError::new(Failure::BrokenBody, "the OAuth token is not a valid header value"))?;
        bearer.set_sensitive(true);
        let mut request = self
            .upstream
            .post(body.clone())
            .header(AUTHORIZATION, bearer)
            .header(HeaderName::from_static("x-request-id"), super::auth::new_rquid());
        if stream {
            request = request.header(ACCEPT, "text/event-stream").header(CACHE_CONTROL, "no-store");
        }
        let resp = native::send(request).await?;
        Ok((resp, token))
    }
}

/// GigaChat's chat answers, for the shared native path.
struct Chat;

impl Wire for Chat {
    type Framing = Sse<super::StreamDecoder>;

    fn classify(status: u16, body: &[u8]) -> (ErrorClass, String) {
        super::classify_error(status, body)
    }

    fn completion(body: &[u8]) -> Result<Value, TranslateError> {
        super::from_gigachat(body)
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
