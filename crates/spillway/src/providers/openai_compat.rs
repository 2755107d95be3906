//! `kind: openai` — any OpenAI-compatible API (OpenAI, Groq, OpenRouter,
//! vLLM, Ollama, Yandex's compatible endpoint).
//!
//! One pooled keep-alive client per provider (rustls with the system's
//! roots plus an optional `ca_file`), auth and extra headers prepared once,
//! the body forwarded with only `model` replaced. Streams are decoded with
//! the shared SSE parser and checked for every in-band error form the
//! reference lists (top-level `error`, `object: "error"`, `x_groq.error`,
//! `finish_reason: "error"`).

use super::classify::{classify_openai_error, AttemptErrorSource};
use super::headers::{base_headers, secret_header};
use super::http::{proxy, BodyError, Endpoint, HttpError};
use super::translate::StreamItem;
use super::types::{AttemptRequest, BuildError, ChunkStream, Reply};
use crate::api::completion::{AnswerShapes, ChunkShape, Completion, RawChunk};
use crate::api::sse::SseParser;
use crate::config::{HealthConfig, ProviderConfig};
use crate::outcome::{AttemptError, Failure};
use bytes::Bytes;
use futures_util::StreamExt;
use http::header::AUTHORIZATION;
use serde_json::Value;
use std::collections::VecDeque;

#[derive(Debug)]
pub struct OpenAiCompat {
    /// `{base_url}/chat/completions` with the key and extra headers, pooled.
    endpoint: Endpoint,
    /// The shape of its last whole answer.
    shapes: AnswerShapes,
}

impl OpenAiCompat {
    /// The provider's pooled chat endpoint (`providers::embed` posts its
    /// embeddings through a sibling of it).
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }
}

impl OpenAiCompat {
    /// Builds the pooled client and the fixed headers.
    pub fn new(config: &ProviderConfig, health: &HealthConfig) -> Result<Self, BuildError> {
        let err = |message: String| BuildError { provider: config.name.clone(), message };
        let base = config.base_url.clone().ok_or_else(|| err("no base_url".into()))?;
        // Configured extra headers first, so they cannot replace the key.
        let mut headers = base_headers(config)?;
        if let Some(key) = &config.api_key {
            headers.insert(AUTHORIZATION, secret_header(config, "Bearer ", key)?);
        }
        let url = format!("{base}/chat/completions");
        let env = |name: &str| std::env::var(name).ok();
        let proxy = url::Url::parse(&url).ok().map(|u| proxy::for_url(&u, &env)).transpose().map_err(err)?.flatten();
        if let Some(p) = &proxy {
            tracing::info!(provider = %config.name, proxy = %p, "Upstream calls go through a proxy.");
        }
        let endpoint = Endpoint::new(&url, &headers, config.ca_file.as_deref(), health.timeouts.connect, proxy)
            .map_err(|e| err(e.0))?;
        Ok(Self { endpoint, shapes: AnswerShapes::default() })
    }

    /// Sends one attempt: the body with only `model` replaced, the answer
    /// checked for the fast path as it arrives.
    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let bytes = req
            .body
            .encode_with_model(req.model_id)
            .map_err(|e| AttemptError::new(Failure::BrokenBody, e.to_string()))?;
        post_and_read(&self.endpoint, &self.shapes, bytes.into(), &req, classify_openai_error).await
    }
}

/// How an OpenAI-compatible API's non-2xx answer is classified: status,
/// the reset its headers named, the body (`kind: azure` adds its own codes
/// in front of [`classify_openai_error`]).
pub(crate) type Classify = fn(u16, Option<std::time::Duration>, &[u8]) -> Failure;

/// One attempt posted to `endpoint` and read as an OpenAI-compatible
/// answer: a non-2xx status through `classify`, a stream decoded as it
/// arrives, a whole body kept as bytes when it needs only the stamp
/// (checked against `shapes`, the provider's last answer's shape, first).
pub(crate) async fn post_and_read(
    endpoint: &Endpoint,
    shapes: &AnswerShapes,
    bytes: Bytes,
    req: &AttemptRequest<'_>,
    classify: Classify,
) -> Result<Reply, AttemptError> {
    let resp = endpoint.post_as(bytes, req.ids()).await.map_err(|e| request_error(&e))?;
    req.hints.set_upstream_id(super::headers::upstream_request_id(resp.headers()));
    let status = resp.status().as_u16();
    if !(200..300).contains(&status) {
        let retry = crate::health::ratelimit::rate_limit_reset(resp.headers(), std::time::SystemTime::now());
        let body = resp.into_body().bytes().await.unwrap_or_default();
        let failure = classify(status, retry, &body);
        return Err(AttemptError::new(failure, format!("HTTP {status}{}", short_message(&body))));
    }
    // (The clock is read only for an answer that names a quota.)
    if crate::health::ratelimit::Headers::any_name_starts_with(resp.headers(), "x-ratelimit-") {
        if let Some(reset) = crate::health::ratelimit::reset_hint(resp.headers(), std::time::SystemTime::now()) {
            req.hints.set_exhausted_for(reset);
        }
        req.hints.set_quota_left(crate::health::ratelimit::quota_left(resp.headers()));
    }
    let is_sse = resp.headers().get("content-type").is_some_and(|v| v.starts_with(b"text/event-stream"));
    if req.stream && (is_sse || !req.accept_whole) {
        if !is_sse {
            return Err(AttemptError::new(
                Failure::BrokenBody,
                "a stream was asked for but the response is not text/event-stream",
            ));
        }
        let mut body = resp.into_body();
        let completion = body.completion();
        return Ok(Reply::Stream(sse_chunks_until(body, shapes.stream(), move || completion.mark())));
    }
    let body = resp.into_body().bytes().await.map_err(|e| body_error(&e))?;
    // Most answers need only the gateway's stamp: kept as bytes.
    if let Some(raw) = shapes.check(body.clone()) {
        return Ok(Reply::Complete(Completion::Raw(raw)));
    }
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| AttemptError::new(Failure::BrokenBody, format!("response is not JSON: {e}")))?;
    if let Some(f) = in_band_error(&value) {
        return Err(f);
    }
    Ok(Reply::Complete(value.into()))
}

/// Classifies a request that got no response head.
pub fn request_error(e: &HttpError) -> AttemptError {
    let failure = match e {
        HttpError::ConnectTimeout(_) => Failure::Timeout,
        // Connection refused or reset, TLS failures, a connection that
        // broke before the response head: nothing was answered.
        HttpError::Connect(_) | HttpError::Send(_) => Failure::ConnectError,
    };
    // The errors name neither the URL's credentials nor any header.
    AttemptError::new(failure, e.to_string())
}

/// Classifies a response body that could not be read.
pub fn body_error(e: &BodyError) -> AttemptError {
    AttemptError::new(Failure::BrokenBody, e.to_string())
}

/// `: <the upstream's error message>` (at most 200 characters), or nothing.
pub fn short_message(body: &[u8]) -> String {
    let v: Option<Value> = serde_json::from_slice(body).ok();
    let msg = v
        .as_ref()
        .and_then(|v| v.get("error").and_then(|e| e.get("message").or(Some(e))).or_else(|| v.get("message")))
        .map(|m| m.as_str().map(str::to_string).unwrap_or_else(|| m.to_string()));
    match msg {
        Some(m) => format!(": {}", m.chars().take(200).collect::<String>()),
        None => String::new(),
    }
}

/// The in-band error forms of OpenAI-compatible bodies and chunks.
pub fn in_band_error(v: &Value) -> Option<AttemptError> {
    let describe =
        |e: &Value| e.get("message").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| e.to_string());
    if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
        return Some(AttemptError::new(Failure::Upstream { status: None }, describe(e)));
    }
    if v.get("object").and_then(Value::as_str) == Some("error") {
        return Some(AttemptError::new(Failure::Upstream { status: None }, describe(v)));
    }
    if let Some(e) = v.get("x_groq").and_then(|x| x.get("error")).filter(|e| !e.is_null()) {
        return Some(AttemptError::new(Failure::Upstream { status: None }, describe(e)));
    }
    let errored = v
        .get("choices")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c.get("finish_reason").and_then(Value::as_str) == Some("error")));
    errored.then(|| AttemptError::new(Failure::Upstream { status: None }, "finish_reason: error"))
}

/// Decodes an SSE byte stream into chunks.
pub fn sse_chunks<S, E>(bytes: S) -> ChunkStream
where
    S: futures_util::Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<AttemptErrorSource>,
{
    sse_chunks_until(bytes, ChunkShape::default(), || {})
}

/// [`sse_chunks`] checking its chunks against `shape` (the provider's
/// chunk shapes: [`AnswerShapes::stream`]), calling `on_done` when
/// `[DONE]` arrives (the answer is complete even if the byte stream has
/// not ended yet).
pub fn sse_chunks_until<S, E, F>(bytes: S, shape: ChunkShape, on_done: F) -> ChunkStream
where
    S: futures_util::Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<AttemptErrorSource>,
    F: FnOnce() + Send + Unpin + 'static,
{
    SseChunks {
        bytes: Box::pin(bytes),
        on_done: Some(on_done),
        parser: SseParser::new(),
        shape,
        pending: VecDeque::new(),
        eof: false,
        finished: false,
    }
    .boxed()
}

/// The decoding stream of [`sse_chunks_until`]: written as a `Stream`
/// (polled in place), not an `unfold` that moves its state in and out of a
/// new future for every chunk.
struct SseChunks<S, F> {
    bytes: std::pin::Pin<Box<S>>,
    on_done: Option<F>,
    parser: SseParser,
    /// The shapes of the provider's chunks, which the stream's are
    /// compared with.
    shape: ChunkShape,
    pending: VecDeque<Result<StreamItem, AttemptError>>,
    /// The byte stream ended.
    eof: bool,
    /// A terminal item (`Done` or an error) went out: nothing follows it.
    finished: bool,
}

impl<S, E, F> futures_util::Stream for SseChunks<S, F>
where
    S: futures_util::Stream<Item = Result<Bytes, E>>,
    E: Into<AttemptErrorSource>,
    F: FnOnce() + Unpin,
{
    type Item = Result<StreamItem, AttemptError>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let st = self.get_mut();
        loop {
            if st.finished {
                return Poll::Ready(None);
            }
            if let Some(item) = st.pending.pop_front() {
                if item.is_err() {
                    st.finished = true;
                } else if matches!(item, Ok(StreamItem::Done)) {
                    st.finished = true;
                    if let Some(done) = st.on_done.take() {
                        done();
                    }
                }
                return Poll::Ready(Some(item));
            }
            if st.eof {
                return Poll::Ready(None);
            }
            // Each event is decoded from the parser's buffer as it
            // completes (no string per event).
            let (pending, shape) = (&mut st.pending, &mut st.shape);
            match std::task::ready!(st.bytes.as_mut().poll_next(cx)) {
                Some(Ok(chunk)) => {
                    // Room for the events a read this long brings (a chat
                    // chunk's event is 100 bytes or more), made at once
                    // rather than grown by doubling, item by item.
                    pending.reserve(chunk.len() / 128);
                    // An event read in place is a slice of `chunk`: a chunk
                    // like the stream's shape keeps it uncopied.
                    let mut decode =
                        |_: Option<&str>, data: &[u8]| pending.push_back(decode_event(data, Some(&chunk), shape));
                    if st.parser.feed_with(&chunk, &mut decode).is_err() {
                        pending.push_back(Err(AttemptError::new(Failure::BrokenBody, "an SSE event was too large")));
                    }
                }
                Some(Err(e)) => {
                    let src: AttemptErrorSource = e.into();
                    pending.push_back(Err(src.0));
                }
                None => {
                    st.parser.finish_with(&mut |_, data| pending.push_back(decode_event(data, None, shape)));
                    st.eof = true;
                }
            }
        }
    }
}

fn decode_event(data: &[u8], piece: Option<&Bytes>, shape: &mut ChunkShape) -> Result<StreamItem, AttemptError> {
    let data = data.trim_ascii();
    if data == b"[DONE]" {
        return Ok(StreamItem::Done);
    }
    // Most chunks need only the gateway's stamp: kept as bytes.
    if let Some(raw) = RawChunk::check_like_in(data, piece, shape) {
        return Ok(StreamItem::Raw(raw));
    }
    // (Bytes that are not UTF-8 are read as the replacement character.)
    let data = String::from_utf8_lossy(data);
    let data = data.as_ref();
    // An event that is not a JSON object is skipped (the runner counts it
    // and fails the attempt only when there are too many).
    let Ok(v) = serde_json::from_str::<Value>(data) else {
        tracing::debug!(bytes = data.len(), "Skipping a stream event that is not JSON.");
        return Ok(StreamItem::Skipped);
    };
    if let Some(err) = in_band_error(&v) {
        return Err(err);
    }
    if !v.is_object() {
        return Ok(StreamItem::Skipped);
    }
    Ok(StreamItem::Chunk(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;

    async fn collect(parts: Vec<&'static str>) -> Vec<Result<StreamItem, AttemptError>> {
        let s = stream::iter(
            parts.into_iter().map(|p| Ok::<_, std::convert::Infallible>(Bytes::from_static(p.as_bytes()))),
        );
        sse_chunks(s).collect().await
    }

    #[tokio::test]
    async fn decodes_chunks_and_done() {
        let items = collect(vec![
            ": OPENROUTER PROCESSING\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n",
            "\ndata: [DONE]\n\n",
        ])
        .await;
        assert_eq!(items.len(), 2);
        assert!(matches!(items[0], Ok(StreamItem::Chunk(_))));
        assert_eq!(items[1], Ok(StreamItem::Done));
    }

    #[tokio::test]
    async fn in_band_errors_fail_the_stream() {
        for ev in [
            "data: {\"error\":{\"message\":\"boom\"}}\n\n",
            "data: {\"object\":\"error\",\"message\":\"old vllm\"}\n\n",
            "data: {\"choices\":[],\"x_groq\":{\"error\":\"stopped\"}}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"\"},\"finish_reason\":\"error\"}]}\n\n",
        ] {
            let items = collect(vec![ev, "data: [DONE]\n\n"]).await;
            assert_eq!(items.len(), 1, "{ev}");
            assert!(items[0].is_err(), "{ev}");
        }
    }

    #[tokio::test]
    async fn events_that_are_not_json_objects_are_skipped_not_fatal() {
        let items = collect(vec!["data: not json\n\n", "data: [1, 2]\n\n", "data: [DONE]\n\n"]).await;
        assert_eq!(items, vec![Ok(StreamItem::Skipped), Ok(StreamItem::Skipped), Ok(StreamItem::Done)]);
    }
}
