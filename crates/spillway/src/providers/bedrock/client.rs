//! `kind: bedrock` — the adapter's I/O around the pure translators.
//!
//! One attempt: [`to_converse`](super::to_converse) builds the body, which
//! goes to `{base_url}/model/{modelId}/converse` (or `…/converse-stream`),
//! the model id percent-encoded in the path; the request is signed with
//! SigV4 (service `bedrock`) right before it leaves — or carries a Bedrock
//! API key as `Authorization: Bearer` when `api_key` is set. The answer
//! goes back through [`from_converse`](super::from_converse), the
//! event-stream [`StreamDecoder`](super::StreamDecoder) or
//! [`classify_error`](super::classify_error) (which reads the exception's
//! name from `x-amzn-ErrorType`).

use crate::config::{AwsConfig, HealthConfig, ProviderConfig};
use crate::outcome::AttemptError;
use crate::providers::classify::translate_failure;
use crate::providers::eventstream::EventStream;
use crate::providers::native::{self, Upstream, Wire};
use crate::providers::sigv4::{Credentials, Request, Signer};
use crate::providers::translate::{ErrorClass, TranslateError};
use crate::providers::types::{AttemptRequest, BuildError, Reply};
use crate::secret::Secret;
use http::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use serde_json::Value;

/// Characters kept as they are in a model id's path segment (`:` and the
/// `/` of an ARN are encoded: round3.md §3.1).
const SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// The signing name of Bedrock's runtime (round3.md §3.1).
const SERVICE: &str = "bedrock";

#[derive(Debug)]
pub struct BedrockAdapter {
    /// Built with the endpoint's origin as its URL; each call names its path.
    upstream: Upstream,
    /// `None` when a Bedrock API key (bearer) is in the fixed headers.
    signer: Option<Signer>,
    /// The `host` header as reqwest sends it (signed).
    host: String,
    /// The path in front of `/model/…` (empty for AWS's own endpoint).
    prefix: String,
}

impl BedrockAdapter {
    /// Builds the pooled client, and the signer from the configured or the
    /// environment's credentials (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`).
    pub fn new(config: &ProviderConfig, health: &HealthConfig) -> Result<Self, BuildError> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self::with_env(config, health, &env)
    }

    fn with_env(
        config: &ProviderConfig,
        health: &HealthConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, BuildError> {
        let err = |message: String| BuildError { provider: config.name.clone(), message };
        let aws = config.aws.as_ref().ok_or_else(|| err("no region".into()))?;
        let base = match &config.base_url {
            Some(b) => b.trim_end_matches('/').to_owned(),
            None => format!("https://bedrock-runtime.{}.amazonaws.com", aws.region),
        };
        let url = url::Url::parse(&base).map_err(|e| err(format!("invalid base_url: {e}")))?;
        let host = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => return Err(err("the base_url has no host".into())),
        };
        let prefix = url.path().trim_end_matches('/').to_owned();
        let origin = url.origin().ascii_serialization();
        let mut headers = native::base_headers(config)?;
        let signer = match &config.api_key {
            Some(key) => {
                headers.insert(AUTHORIZATION, native::secret_header(config, "Bearer ", key)?);
                None
            }
            None => {
                let credentials = credentials(aws, env).ok_or_else(|| {
                    err("no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), the provider's aws_access_key_id and aws_secret_access_key, or api_key for a Bedrock API key".into())
                })?;
                Some(Signer { credentials, region: aws.region.clone(), service: SERVICE })
            }
        };
        let upstream = Upstream::new(native::build_client(config, health)?, origin, headers);
        Ok(Self { upstream, signer, host, prefix })
    }

    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let asked = native::Asked::of(&req);
        let ids = req.ids();
        let openai = Value::Object(req.body.into_owned());
        let body = super::to_converse(&openai).map_err(translate_failure)?;
        let bytes = native::encode(&body)?;
        let model = percent_encoding::utf8_percent_encode(req.model_id, SEGMENT);
        let action = if req.stream { "converse-stream" } else { "converse" };
        let path = format!("{}/model/{model}/{action}", self.prefix);
        let mut post = self.upstream.post_to(&format!("{}{path}", self.upstream.url()), bytes.clone());
        if let Some(signer) = &self.signer {
            let request = Request {
                method: "POST",
                host: &self.host,
                path: &path,
                query: "",
                headers: &[("content-type", "application/json")],
                body: &bytes,
            };
            let signed = signer.sign(&request, std::time::SystemTime::now());
            let mut extra = HeaderMap::new();
            if let Ok(v) = HeaderValue::from_str(&signed.amz_date) {
                extra.insert(HeaderName::from_static("x-amz-date"), v);
            }
            for (name, value) in
                [("authorization", Some(signed.authorization)), ("x-amz-security-token", signed.security_token)]
            {
                if let Some(mut v) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
                    v.set_sensitive(true);
                    extra.insert(HeaderName::from_static(name), v);
                }
            }
            post = post.headers(extra);
        }
        for (name, value) in crate::providers::headers::call_headers(ids) {
            post = post.header(name, value);
        }
        let resp = native::send(post).await?;
        req.hints.set_upstream_id(amzn_request_id(resp.headers()));
        native::read::<Converse>(resp, asked).await
    }
}

/// The configured keys, else the environment's; `None` without a pair.
fn credentials(aws: &AwsConfig, env: &dyn Fn(&str) -> Option<String>) -> Option<Credentials> {
    if let (Some(id), Some(secret)) = (&aws.access_key_id, &aws.secret_access_key) {
        return Some(Credentials {
            access_key_id: id.clone(),
            secret_access_key: secret.clone(),
            session_token: aws.session_token.clone(),
        });
    }
    Some(Credentials {
        access_key_id: Secret::new(env("AWS_ACCESS_KEY_ID")?),
        secret_access_key: Secret::new(env("AWS_SECRET_ACCESS_KEY")?),
        session_token: env("AWS_SESSION_TOKEN").map(Secret::new),
    })
}

/// AWS names its call `x-amzn-RequestId`.
fn amzn_request_id(headers: &HeaderMap) -> Option<String> {
    let v = headers.get("x-amzn-requestid")?.to_str().ok()?;
    (!v.is_empty() && v.len() <= 200 && v.bytes().all(|b| b.is_ascii_graphic())).then(|| v.to_owned())
}

/// Converse's answers, for the shared native path.
struct Converse;

impl Wire for Converse {
    type Framing = EventStream<super::StreamDecoder>;

    fn classify(status: u16, body: &[u8]) -> (ErrorClass, String) {
        super::classify_error(status, &HeaderMap::new(), body)
    }

    fn classify_headers(status: u16, headers: &HeaderMap, body: &[u8]) -> (ErrorClass, String) {
        super::classify_error(status, headers, body)
    }

    fn completion(body: &[u8]) -> Result<Value, TranslateError> {
        super::from_converse(body)
    }

    fn framing(include_usage: bool) -> Self::Framing {
        EventStream::new(super::StreamDecoder::new(include_usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aws(id: Option<&str>) -> AwsConfig {
        AwsConfig {
            region: "eu-central-1".into(),
            access_key_id: id.map(Secret::new),
            secret_access_key: id.map(|_| Secret::new("configured-secret")),
            session_token: None,
        }
    }

    #[test]
    fn credentials_come_from_the_config_else_the_environment() {
        let env = |name: &str| match name {
            "AWS_ACCESS_KEY_ID" => Some("AKIAENV".to_owned()),
            "AWS_SECRET_ACCESS_KEY" => Some("env-secret".to_owned()),
            "AWS_SESSION_TOKEN" => Some("env-token".to_owned()),
            _ => None,
        };
        let c = credentials(&aws(Some("AKIACONF")), &env).unwrap();
        assert_eq!((c.access_key_id.expose(), c.session_token.is_none()), ("AKIACONF", true));
        let c = credentials(&aws(None), &env).unwrap();
        assert_eq!(c.access_key_id.expose(), "AKIAENV");
        assert_eq!(c.session_token.as_ref().map(Secret::expose), Some("env-token"));
        assert!(credentials(&aws(None), &|_| None).is_none());
    }
}
