//! Embedding calls: what each wire format does with one model's attempt
//! of an embeddings request.
//!
//! - `kind: openai`: `POST {base_url}/embeddings` through the provider's
//!   pooled client — a sibling of its chat endpoint, so the same
//!   connections, TLS roots (`ca_file`), proxy, key and extra headers. (Not
//!   reqwest, as discovery uses: embeddings are on the request path, where
//!   the pooled client was chosen for its cost per call.) Floats are asked
//!   for; an upstream that answers in base64 anyway is decoded.
//! - `kind: mock`: deterministic unit vectors of the model's configured
//!   `dimensions`, seeded by a hash of the model id and the input, so the
//!   same text always gets the same vector and two models give different
//!   ones. The model's outages, hang, latency and injected errors apply as
//!   they do to its chat answers.
//! - The native chat formats (Anthropic, GigaChat, Yandex) have no
//!   embeddings call here: config compilation refuses them in embedding
//!   cascades, and a direct ref is a capability mismatch.
//!
//! Errors are classified exactly as chat's are (`classify_openai_error`),
//! so the runner settles them by the same health rules.

use super::classify::classify_openai_error;
use super::http::{Endpoint, EndpointError};
use super::types::BuildError;
use crate::api::embeddings::{from_base64, normalize, EmbedInput, EmbeddingRequest, Vectors};
use crate::config::{MockBehavior, ProviderConfig, ProviderKind};
use crate::outcome::{AttemptError, Failure};
use serde::Deserialize;
use std::collections::HashMap;
use tokio::time::Instant;

/// One provider's embeddings call, by wire format.
#[derive(Debug)]
pub enum Embedder {
    /// `POST {base_url}/embeddings`.
    OpenAi(Endpoint),
    /// Deterministic vectors in process.
    Mock(MockEmbedder),
    /// No embeddings call for this kind.
    Unsupported(ProviderKind),
}

impl Embedder {
    /// The embeddings endpoint beside an OpenAI-compatible chat endpoint.
    pub fn openai(config: &ProviderConfig, chat: &Endpoint) -> Result<Self, BuildError> {
        let endpoint = chat
            .sibling("/chat/completions", "/embeddings")
            .map_err(|EndpointError(message)| BuildError { provider: config.name.clone(), message })?;
        Ok(Self::OpenAi(endpoint))
    }

    /// Embeds `req.input` with `model_id`. The vectors are not yet checked
    /// against the request (`api::embeddings::fit` does that).
    pub async fn embed(&self, model_id: &str, req: &EmbeddingRequest) -> Result<Vectors, AttemptError> {
        match self {
            Self::OpenAi(endpoint) => openai(endpoint, model_id, req).await,
            Self::Mock(m) => m.embed(model_id, req).await,
            Self::Unsupported(kind) => Err(AttemptError::new(
                Failure::CapabilityMismatch,
                format!("kind `{}` has no embeddings API", kind.as_str()),
            )),
        }
    }
}

#[derive(Deserialize)]
struct Upstream {
    data: Vec<UpItem>,
    #[serde(default)]
    usage: Option<UpUsage>,
}

#[derive(Deserialize)]
struct UpItem {
    #[serde(default)]
    index: Option<usize>,
    embedding: UpEmbedding,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum UpEmbedding {
    Floats(Vec<f32>),
    Base64(String),
}

#[derive(Deserialize)]
struct UpUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
}

async fn openai(endpoint: &Endpoint, model_id: &str, req: &EmbeddingRequest) -> Result<Vectors, AttemptError> {
    let body = serde_json::to_vec(&req.upstream_body(model_id))
        .map_err(|e| AttemptError::new(Failure::BrokenBody, e.to_string()))?;
    let ids = super::types::CallIds {
        request_id: req.request_id.as_ref().map(crate::telemetry::RequestId::as_str),
        ..Default::default()
    };
    let resp = endpoint.post_as(body.into(), ids).await.map_err(|e| super::openai_compat::request_error(&e))?;
    let upstream_request_id = super::headers::upstream_request_id(resp.headers());
    let status = resp.status().as_u16();
    if !(200..300).contains(&status) {
        let retry = crate::health::ratelimit::rate_limit_reset(resp.headers(), std::time::SystemTime::now());
        let body = resp.into_body().bytes().await.unwrap_or_default();
        let failure = classify_openai_error(status, retry, &body);
        return Err(AttemptError::new(failure, format!("HTTP {status}{}", super::openai_compat::short_message(&body))));
    }
    let body = resp.into_body().bytes().await.map_err(|e| super::openai_compat::body_error(&e))?;
    let mut vectors = decode(&body)?;
    vectors.upstream_request_id = upstream_request_id;
    Ok(vectors)
}

/// Reads an upstream's `CreateEmbeddingResponse` into vectors in input order.
fn decode(body: &[u8]) -> Result<Vectors, AttemptError> {
    let parsed: Upstream = serde_json::from_slice(body).map_err(|e| {
        let in_band = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| super::openai_compat::in_band_error(&v));
        in_band.unwrap_or_else(|| AttemptError::new(Failure::BrokenBody, format!("not an embeddings response: {e}")))
    })?;
    let n = parsed.data.len();
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; n];
    let by_index = parsed.data.iter().all(|d| d.index.is_some_and(|i| i < n));
    for (pos, item) in parsed.data.into_iter().enumerate() {
        let at = if by_index { item.index.unwrap_or(pos) } else { pos };
        let vector = match item.embedding {
            UpEmbedding::Floats(v) => v,
            UpEmbedding::Base64(s) => from_base64(&s)
                .ok_or_else(|| AttemptError::new(Failure::BrokenBody, "an embedding is not valid base64 f32"))?,
        };
        if let Some(slot) = slots.get_mut(at) {
            if slot.replace(vector).is_some() {
                return Err(AttemptError::new(Failure::BrokenBody, format!("index {at} given twice")));
            }
        }
    }
    let data = slots
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| AttemptError::new(Failure::BrokenBody, "indices of the embeddings have gaps"))?;
    Ok(Vectors { data, prompt_tokens: parsed.usage.and_then(|u| u.prompt_tokens), upstream_request_id: None })
}

/// The mock's embedding models: dimension and behaviour by id.
#[derive(Debug)]
pub struct MockEmbedder {
    models: HashMap<String, (Option<u32>, MockBehavior)>,
    started: Instant,
}

impl MockEmbedder {
    /// From the provider's static models.
    pub fn new(config: &ProviderConfig) -> Self {
        let models = config
            .models
            .iter()
            .map(|m| (m.id.clone(), (m.dimensions, m.behavior.clone().unwrap_or_default())))
            .collect();
        Self { models, started: Instant::now() }
    }

    async fn embed(&self, model_id: &str, req: &EmbeddingRequest) -> Result<Vectors, AttemptError> {
        let Some((dims, b)) = self.models.get(model_id) else {
            return Err(AttemptError::new(Failure::NotFound, format!("mock has no model `{model_id}`")));
        };
        let Some(dims) = *dims else {
            return Err(AttemptError::new(
                Failure::CapabilityMismatch,
                format!("mock model `{model_id}` has no `dimensions`: not an embedding model"),
            ));
        };
        let elapsed = self.started.elapsed();
        let status = |s: u16| classify_openai_error(s, None, b"");
        for o in &b.outages {
            if elapsed >= o.start && elapsed < o.start + o.duration {
                if o.status == 0 {
                    std::future::pending::<()>().await;
                }
                return Err(AttemptError::new(status(o.status), format!("HTTP {} (mock outage)", o.status)));
            }
        }
        if b.hang {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(b.latency).await;
        if b.error_rate > 0.0 && fastrand::f64() < b.error_rate {
            return Err(AttemptError::new(status(b.error_status), format!("HTTP {} (mock injected)", b.error_status)));
        }
        let data = match &req.input {
            EmbedInput::Texts(t) => t.iter().map(|s| vector(model_id, s.as_bytes(), dims)).collect(),
            EmbedInput::Tokens(t) => t
                .iter()
                .map(|ids| {
                    let bytes: Vec<u8> = ids.iter().flat_map(|i| i.to_le_bytes()).collect();
                    vector(model_id, &bytes, dims)
                })
                .collect(),
        };
        Ok(Vectors { data, prompt_tokens: Some(req.input.tokens()), upstream_request_id: None })
    }
}

/// A unit vector of `dims` values determined by `model` and `input`:
/// FNV-1a of both seeds a SplitMix64 sequence (written here: a dozen lines,
/// and the values must never change with a dependency's version).
fn vector(model: &str, input: &[u8], dims: u32) -> Vec<f32> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in model.as_bytes().iter().chain(&[0xff]).chain(input) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut next = || {
        h = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = h;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut v: Vec<f32> = (0..dims).map(|_| ((next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32).collect();
    normalize(&mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mock_vectors_are_deterministic_unit_vectors() {
        let a = vector("m", b"hello", 16);
        assert_eq!(a, vector("m", b"hello", 16));
        assert_ne!(a, vector("m", b"hellp", 16));
        assert_ne!(a, vector("n", b"hello", 16));
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
    }

    #[test]
    fn upstream_vectors_come_back_in_input_order() {
        let body = br#"{"object":"list","data":[{"index":1,"embedding":[2.0]},{"index":0,"embedding":"AACAPw=="}],"usage":{"prompt_tokens":4,"total_tokens":4}}"#;
        let v = decode(body).unwrap();
        assert_eq!(v.data, vec![vec![1.0], vec![2.0]]);
        assert_eq!(v.prompt_tokens, Some(4));
        assert_eq!(
            decode(br#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}"#).unwrap_err().failure,
            Failure::BrokenBody
        );
        assert!(matches!(decode(br#"{"error":{"message":"down"}}"#).unwrap_err().failure, Failure::Upstream { .. }));
    }
}
