//! `kind: azure` — Azure OpenAI: OpenAI's wire format, served per
//! deployment, with its own URL scheme, key header and error codes
//! (round3.md §1 in the project's reference notes; the shapes are written
//! out in `docs/providers.md`).
//!
//! In a request's life it is the OpenAI-compatible path
//! ([`super::openai_compat::post_and_read`]: the pooled client, the body
//! with only `model` replaced, the answer checked as it arrives) with three
//! differences:
//!
//! - **where**: the model id is the *deployment* name. With a dated
//!   `api_version` (`2024-10-21`) each attempt goes to
//!   `{base_url}/openai/deployments/{deployment}/chat/completions?api-version=…`;
//!   with `api_version: v1` (or `preview`, `latest`) to the v1 surface
//!   `{base_url}/openai/v1/chat/completions`, the deployment in the body's
//!   `model`. Endpoints of the configured deployments are built once; a
//!   discovered or client-named one is built per call (a URL parse).
//! - **auth**: `api-key: <key>`, not `Authorization: Bearer` (an Entra ID
//!   token can go in `headers: { authorization: "Bearer …" }` instead);
//! - **answers**: [`classify`] knows Azure's error codes (a prompt its
//!   content filter blocked, a 429 whose wait means a spent daily quota),
//!   and [`stream`] drops the chunks Azure adds to a stream that are not
//!   OpenAI chunks (prompt-filter annotations).

mod classify;
mod stream;

pub use classify::classify_azure_error;
pub use stream::tidy;

use super::headers::{base_headers, secret_header};
use super::http::{proxy, Endpoint};
use super::openai_compat::post_and_read;
use super::types::{AttemptRequest, BuildError, Reply};
use crate::api::completion::AnswerShapes;
use crate::config::{HealthConfig, ProviderConfig};
use crate::outcome::{AttemptError, Failure};
use futures_util::StreamExt;
use http::header::HeaderName;
use std::collections::HashMap;

/// The `api-version` values that select the v1 surface (round3.md §1.1:
/// `v1` is its default; older docs and SDKs send `preview` or `latest`).
const V1_VERSIONS: [&str; 3] = ["v1", "preview", "latest"];

/// Characters kept as they are in a deployment name's path segment.
const SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

#[derive(Debug)]
pub struct AzureAdapter {
    /// The first endpoint built; others share its connections.
    origin: Endpoint,
    /// The configured deployments' chat endpoints (dated surface).
    deployments: HashMap<String, Endpoint>,
    /// `{base path}/openai`, without the origin.
    prefix: String,
    /// `?api-version=…` as sent (empty on the v1 surface with `v1`).
    query: String,
    /// The v1 surface: one path, the deployment in the body.
    v1: bool,
    /// The shape of its last whole answer.
    shapes: AnswerShapes,
}

impl AzureAdapter {
    /// Builds the pooled client, the key header and the configured
    /// deployments' endpoints.
    pub fn new(config: &ProviderConfig, health: &HealthConfig) -> Result<Self, BuildError> {
        let err = |message: String| BuildError { provider: config.name.clone(), message };
        let base = config.base_url.as_deref().ok_or_else(|| err("no base_url".into()))?;
        let version = config.api_version.as_deref().ok_or_else(|| err("no api_version".into()))?;
        let (origin_url, prefix) = split_base(base).ok_or_else(|| err(format!("invalid base_url `{base}`")))?;
        let v1 = V1_VERSIONS.contains(&version);
        let query = match version {
            "v1" => String::new(),
            v => {
                let mut q = String::from("?api-version=");
                q.extend(percent_encoding::utf8_percent_encode(v, SEGMENT));
                q
            }
        };
        // Configured extra headers first, so they cannot replace the key.
        let mut headers = base_headers(config)?;
        if let Some(key) = &config.api_key {
            headers.insert(HeaderName::from_static("api-key"), secret_header(config, "", key)?);
        }
        let first = if v1 { format!("{prefix}/v1/chat/completions{query}") } else { path(&prefix, "_", &query) };
        let url = format!("{origin_url}{first}");
        let env = |name: &str| std::env::var(name).ok();
        let proxy = url::Url::parse(&url).ok().map(|u| proxy::for_url(&u, &env)).transpose().map_err(err)?.flatten();
        let origin = Endpoint::new(&url, &headers, config.ca_file.as_deref(), health.timeouts.connect, proxy)
            .map_err(|e| err(e.0))?;
        let mut deployments = HashMap::new();
        if !v1 {
            for m in &config.models {
                let endpoint = origin.at_path(&path(&prefix, &m.id, &query)).map_err(|e| err(e.0))?;
                deployments.insert(m.id.clone(), endpoint);
            }
        }
        Ok(Self { origin, deployments, prefix, query, v1, shapes: AnswerShapes::default() })
    }

    /// Sends one attempt to the deployment `req.model_id`.
    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let bytes = req
            .body
            .encode_with_model(req.model_id)
            .map_err(|e| AttemptError::new(Failure::BrokenBody, e.to_string()))?;
        let built;
        let endpoint = match self.deployments.get(req.model_id) {
            _ if self.v1 => &self.origin,
            Some(e) => e,
            None => {
                built = self
                    .origin
                    .at_path(&path(&self.prefix, req.model_id, &self.query))
                    .map_err(|e| AttemptError::new(Failure::CapabilityMismatch, e.0))?;
                &built
            }
        };
        match post_and_read(endpoint, &self.shapes, bytes.into(), &req, classify_azure_error).await? {
            Reply::Stream(s) => Ok(Reply::Stream(s.filter_map(|item| std::future::ready(tidy(item))).boxed())),
            whole => Ok(whole),
        }
    }
}

/// `base_url` as its origin (`https://res.openai.azure.com`) and the path
/// in front of `/openai/…` (empty, or an API gateway's prefix). A base
/// that already ends in `/openai` or `/openai/v1` is accepted as well.
fn split_base(base: &str) -> Option<(String, String)> {
    let url = url::Url::parse(base).ok()?;
    let mut path = url.path().trim_end_matches('/').to_owned();
    for suffix in ["/openai/v1", "/openai"] {
        if let Some(rest) = path.strip_suffix(suffix) {
            path = rest.to_owned();
            break;
        }
    }
    let origin = url.origin().ascii_serialization();
    (origin != "null").then(|| (origin, format!("{path}/openai")))
}

/// The dated surface's chat path of one deployment.
fn path(prefix: &str, deployment: &str, query: &str) -> String {
    let name = percent_encoding::utf8_percent_encode(deployment, SEGMENT);
    format!("{prefix}/deployments/{name}/chat/completions{query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_url_may_carry_a_prefix_or_the_openai_segment() {
        for (base, origin, prefix) in [
            ("https://res.openai.azure.com", "https://res.openai.azure.com", "/openai"),
            ("https://res.openai.azure.com/", "https://res.openai.azure.com", "/openai"),
            ("https://res.openai.azure.com/openai", "https://res.openai.azure.com", "/openai"),
            ("https://res.openai.azure.com/openai/v1/", "https://res.openai.azure.com", "/openai"),
            ("http://127.0.0.1:9000/apim/aoai", "http://127.0.0.1:9000", "/apim/aoai/openai"),
        ] {
            assert_eq!(split_base(base), Some((origin.to_owned(), prefix.to_owned())), "{base}");
        }
        assert_eq!(
            path("/openai", "gpt-4o eu", "?api-version=2024-10-21"),
            "/openai/deployments/gpt-4o%20eu/chat/completions?api-version=2024-10-21"
        );
    }
}
