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

use super::auth::TokenCache;
use crate::config::{HealthConfig, ProviderConfig};
use crate::outcome::{AttemptError, Failure};
use crate::providers::native::{self, Sse};
use crate::providers::openai_compat::transport_error;
use crate::providers::{AttemptRequest, BuildError, Reply};
use http::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CACHE_CONTROL};
use serde_json::Value;

/// Sber's API root; `base_url` overrides it.
pub(crate) const DEFAULT_BASE_URL: &str = "https://gigachat.devices.sberbank.ru/api/v1";

/// A GigaChat upstream.
#[derive(Debug)]
pub struct GigaChatAdapter {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    /// Boxed: the cache is large and `Adapter` is an enum of adapters.
    tokens: Box<TokenCache>,
}

impl GigaChatAdapter {
    /// Builds the pooled client, the fixed headers and the token cache.
    pub fn new(config: &ProviderConfig, health: &HealthConfig) -> Result<Self, BuildError> {
        let base = config.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
        let client = native::build_client(config, health)?;
        Ok(Self {
            url: format!("{}/chat/completions", base.trim_end_matches('/')),
            headers: native::base_headers(config)?,
            tokens: Box::new(TokenCache::new(config, client.clone())?),
            client,
        })
    }

    /// Sends one attempt.
    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let openai = Value::Object(req.body.into_owned());
        let mut body = super::to_gigachat(&openai, req.model_id).map_err(native::translate_failure)?;
        if let Some(obj) = body.as_object_mut() {
            obj.insert("stream".into(), Value::Bool(req.stream));
        }
        let bytes = bytes::Bytes::from(
            serde_json::to_vec(&body).map_err(|e| AttemptError::new(Failure::BrokenBody, e.to_string()))?,
        );
        let mut resp = self.send(&bytes, req.stream).await?;
        if resp.0.status().as_u16() == 401 {
            // Tokens can die before their expiry (revoked, clock skew): one
            // refresh and one retry, as the official SDK does.
            self.tokens.invalidate(&resp.1);
            resp = self.send(&bytes, req.stream).await?;
        }
        let resp = resp.0;
        if !resp.status().is_success() {
            return Err(native::error_from_response(resp, super::classify_error).await);
        }
        if req.stream {
            native::require_event_stream(&resp)?;
            let mut decoder = super::StreamDecoder::new(req.include_usage);
            let framing = Sse::new(move |event: Option<&str>, data: &str| decoder.on_event(event, data));
            return Ok(Reply::Stream(native::decoded_stream(resp.bytes_stream(), framing)));
        }
        let body = native::body_bytes(resp).await?;
        let value = super::from_gigachat(&body).map_err(native::translate_failure)?;
        Ok(Reply::Complete(value.into()))
    }

    /// One chat request with the current token; returns the token used, so
    /// a 401 can drop exactly that one.
    async fn send(
        &self,
        body: &bytes::Bytes,
        stream: bool,
    ) -> Result<(reqwest::Response, super::auth::Token), AttemptError> {
        let token = self.tokens.get().await?;
        let mut bearer = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
            .map_err(|_| AttemptError::new(Failure::BrokenBody, "the OAuth token is not a valid header value"))?;
        bearer.set_sensitive(true);
        let mut request = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .header(AUTHORIZATION, bearer)
            .header(http::header::HeaderName::from_static("x-request-id"), super::auth::new_rquid());
        if stream {
            request = request.header(ACCEPT, "text/event-stream").header(CACHE_CONTROL, "no-store");
        }
        let resp = request.body(body.clone()).send().await.map_err(|e| transport_error(&e))?;
        Ok((resp, token))
    }
}
