//! GigaChat's OAuth token cache: one token per provider (its auth key and
//! scope), shared by every request, refreshed before it expires.
//!
//! Every chat attempt asks [`TokenCache::get`] for a bearer token first. The
//! fast path is a read lock on the cached token; only when it is missing or
//! within [`REFRESH_MARGIN_MS`] of its expiry does a caller take the refresh
//! lock, and the callers that queued behind it find the fresh token when
//! they get it — one refresh at a time however many requests arrive
//! together (the token endpoint allows 10 requests per second). A 401 from
//! the chat API drops exactly the token that got it ([`TokenCache::invalidate`])
//! so the retry fetches a new one (reference §5.1).

use crate::config::{ProviderConfig, Secret};
use crate::outcome::{AttemptError, Failure};
use crate::providers::classify::{translate_failure, transport_error};
use crate::providers::headers::secret_header;
use crate::providers::native;
use crate::providers::types::BuildError;
use http::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use std::sync::RwLock;

/// Sber's OAuth endpoint (note the port); `auth_url` overrides it.
pub(crate) const DEFAULT_AUTH_URL: &str = "https://ngw.devices.sberbank.ru:9443/api/v2/oauth";
/// The scope for individuals, GigaChat's default.
const DEFAULT_SCOPE: &str = "GIGACHAT_API_PERS";
/// Refresh this long before the expiry, as the official SDK does, so a token
/// never expires between being handed out and reaching Sber.
const REFRESH_MARGIN_MS: i64 = 60_000;

/// A bearer token and its expiry (Unix milliseconds).
#[derive(Clone, Debug)]
pub(crate) struct Token {
    value: Secret,
    expires_at_ms: i64,
}

impl Token {
    /// The token itself, for the `Authorization` header.
    pub(crate) fn expose(&self) -> &str {
        self.value.expose()
    }
}

/// The cached token and how to get a new one.
#[derive(Debug)]
pub(crate) struct TokenCache {
    client: reqwest::Client,
    url: String,
    /// `Authorization: Basic <auth key>`, `Accept`, `Content-Type`.
    headers: HeaderMap,
    /// `scope=…`, form-encoded once.
    body: String,
    /// A std lock: held for a clone, never across an await.
    current: RwLock<Option<Token>>,
    /// Held across the token request so only one runs at a time.
    refresh: tokio::sync::Mutex<()>,
}

impl TokenCache {
    /// Prepares the cache; no request is made until the first call.
    pub(crate) fn new(config: &ProviderConfig, client: reqwest::Client) -> Result<Self, BuildError> {
        let key = config
            .auth_key
            .as_ref()
            .ok_or_else(|| BuildError { provider: config.name.clone(), message: "no auth_key".into() })?;
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, secret_header(config, "Basic ", key)?);
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/x-www-form-urlencoded"));
        let scope = config.scope.as_deref().unwrap_or(DEFAULT_SCOPE);
        Ok(Self {
            client,
            url: config.auth_url.clone().unwrap_or_else(|| DEFAULT_AUTH_URL.to_owned()),
            headers,
            body: format!("scope={}", form_encode(scope)),
            current: RwLock::new(None),
            refresh: tokio::sync::Mutex::new(()),
        })
    }

    /// A token valid for at least the refresh margin, fetching one if needed.
    pub(crate) async fn get(&self) -> Result<Token, AttemptError> {
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        let _one_at_a_time = self.refresh.lock().await;
        // Whoever held the lock before us may have refreshed already.
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        let token = self.fetch().await?;
        *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(token.clone());
        Ok(token)
    }

    /// Drops `stale` if it is still the cached token (a 401 proved it dead);
    /// a token another request already replaced stays.
    pub(crate) fn invalidate(&self, stale: &Token) {
        let mut current = self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if current.as_ref().is_some_and(|t| t.value == stale.value) {
            *current = None;
        }
    }

    fn fresh(&self) -> Option<Token> {
        let now = now_ms();
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .filter(|t| t.expires_at_ms.saturating_sub(REFRESH_MARGIN_MS) > now)
            .cloned()
    }

    /// One token request. Any refusal (400 for a key that does not match its
    /// scope, 401 for a bad key) means the provider's key is wrong; only
    /// 429, 5xx and transport errors are transient.
    async fn fetch(&self) -> Result<Token, AttemptError> {
        let resp = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .header(HeaderName::from_static("rquid"), new_rquid())
            .body(self.body.clone())
            .send()
            .await
            .map_err(|e| transport_error(&e))?;
        let status = resp.status().as_u16();
        if !resp.status().is_success() {
            let failure = match status {
                429 => Failure::RateLimited {
                    retry_after: crate::health::ratelimit::rate_limit_reset(
                        resp.headers(),
                        std::time::SystemTime::now(),
                    ),
                },
                400..=499 => Failure::AuthRejected,
                _ => Failure::Upstream { status: Some(status) },
            };
            // The body is not logged: it could echo the request.
            return Err(AttemptError::new(failure, format!("the OAuth token request failed with HTTP {status}")));
        }
        let body = native::body_bytes(resp).await?;
        let (value, expires_at_ms) = super::parse_token(&body).map_err(translate_failure)?;
        Ok(Token { value: Secret::new(value), expires_at_ms })
    }
}

/// Now as Unix milliseconds (wall clock: the expiry is wall-clock time).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A random UUID version 4, as `RqUID` requires (any other form is a 400).
/// Built from `fastrand` because nothing else here needs a uuid crate.
pub(crate) fn new_rquid() -> String {
    let mut b: [u8; 16] = fastrand::u128(..).to_be_bytes();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// `application/x-www-form-urlencoded` for a value (scopes are plain words,
/// but a configured one must not break the body).
fn form_encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => (b as char).to_string(),
            b' ' => "+".to_owned(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rquid_is_a_uuid4() {
        let id = new_rquid();
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12]);
        assert!(parts[2].starts_with('4'));
        assert!(matches!(parts[3].chars().next(), Some('8' | '9' | 'a' | 'b')));
        assert_ne!(id, new_rquid());
    }

    #[test]
    fn scopes_are_form_encoded() {
        assert_eq!(form_encode("GIGACHAT_API_PERS"), "GIGACHAT_API_PERS");
        assert_eq!(form_encode("a b&c"), "a+b%26c");
    }
}
