//! Fake upstreams for Spillway's tests: real HTTP servers on `127.0.0.1:0`
//! that speak the OpenAI wire format (JSON and SSE) and follow a script.
//!
//! ```ignore
//! let up = FakeUpstream::start().await;
//! up.push(Reply::error(429, "rate_limit_exceeded", "slow down").header("retry-after", "7"));
//! up.push(Reply::stream(&["Hel", "lo"]).pause_after(1, Duration::from_secs(1)));
//! // ... point a provider's base_url at up.base_url() ...
//! assert_eq!(up.calls(), 2);
//! ```
//!
//! Each chat request takes the next scripted [`Reply`] (or the default one
//! when the script is empty), and the upstream counts calls, finished
//! streams and streams the client abandoned ([`FakeUpstream::cancelled`]).
//!
//! A chat request is one whose path ends in `/chat/completions`, or in the
//! path given to [`FakeUpstream::start_at`] (`/v1/messages`,
//! `/foundationModels/v1/completion`, `/api/v2/oauth`), so the native wire
//! formats are scripted the same way; [`anthropic`], [`gigachat`],
//! [`yandex`] and the cloud kinds ([`azure`], [`gemini`], [`bedrock`]) build their bodies exactly as
//! the reference shows.

// Test infrastructure: a broken fixture or port must fail the test loudly.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

pub mod anthropic;
pub mod azure;
pub mod bedrock;
pub mod faults;
pub mod gemini;
pub mod gigachat;
pub mod reply;
pub mod schema;
pub mod yandex;

/// A listening socket on `127.0.0.1:port` (0: any free port) with a deep
/// backlog, non-blocking, for the bench binaries. The standard library
/// listens with 128 (and tokio's `bind` with as many): a gateway opening
/// 256 upstream connections at once overflowed it, and the dropped
/// handshakes came back after TCP's one-second retransmit as a p99 of
/// 0.5 to 1.2 s that was the fake upstream's, not the proxy's.
pub fn listen(port: u16) -> std::io::Result<std::net::TcpListener> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(4096)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

pub use reply::{Reply, Step};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::Router;
use futures_util::StreamExt;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    default: Mutex<Option<Reply>>,
    routes: Mutex<HashMap<String, Reply>>,
    calls: AtomicUsize,
    in_flight: AtomicUsize,
    finished: AtomicUsize,
    cancelled: AtomicUsize,
    requests: Mutex<Vec<serde_json::Value>>,
    raw_requests: Mutex<Vec<bytes::Bytes>>,
    headers: Mutex<Vec<http::HeaderMap>>,
    /// Path and query of the chat requests received.
    uris: Mutex<Vec<String>>,
    /// The path suffix of scripted calls; `None` is `/chat/completions`.
    chat_path: Option<String>,
    /// More suffixes of scripted calls (Gemini's `:generateContent` and
    /// `:streamGenerateContent`, Bedrock's `/converse` and `/converse-stream`).
    more_paths: Vec<String>,
}

/// A running fake upstream.
#[derive(Clone)]
pub struct FakeUpstream {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
}

impl FakeUpstream {
    /// Starts one on an ephemeral port; by default it answers `"ok"`.
    pub async fn start() -> Self {
        Self::serve(Shared::default()).await
    }

    /// Starts one whose scripted calls are the requests whose path ends in
    /// `path` (a native API's chat path, or an OAuth endpoint).
    pub async fn start_at(path: &str) -> Self {
        Self::serve(Shared { chat_path: Some(path.to_string()), ..Shared::default() }).await
    }

    /// Starts one whose scripted calls are the requests whose path ends in
    /// any of `paths` (one native API's whole and streamed calls).
    pub async fn start_at_any(paths: &[&str]) -> Self {
        let (first, more) = paths.split_first().expect("at least one path");
        Self::serve(Shared {
            chat_path: Some(first.to_string()),
            more_paths: more.iter().map(|p| p.to_string()).collect(),
            ..Shared::default()
        })
        .await
    }

    async fn serve(shared: Shared) -> Self {
        let shared = Arc::new(shared);
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("addr: {e}"));
        #[allow(clippy::disallowed_methods)]
        // test infrastructure: lives as long as the test runtime
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, shared }
    }

    /// `http://127.0.0.1:PORT/v1`, the `base_url` of a provider.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues a reply for the next chat request.
    pub fn push(&self, reply: Reply) -> &Self {
        lock(&self.shared.script).push_back(reply);
        self
    }

    /// The reply used when the script is empty.
    pub fn set_default(&self, reply: Reply) -> &Self {
        *lock(&self.shared.default) = Some(reply);
        self
    }

    /// A fixed reply for `GET`/`POST` on another path (listings, metrics).
    pub fn route(&self, path: &str, reply: Reply) -> &Self {
        lock(&self.shared.routes).insert(path.to_string(), reply);
        self
    }

    /// Chat requests received.
    pub fn calls(&self) -> usize {
        self.shared.calls.load(Ordering::SeqCst)
    }

    /// Responses being sent right now.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// Responses whose body was sent completely.
    pub fn finished(&self) -> usize {
        self.shared.finished.load(Ordering::SeqCst)
    }

    /// Responses the client abandoned before their end (a dropped connection).
    pub fn cancelled(&self) -> usize {
        self.shared.cancelled.load(Ordering::SeqCst)
    }

    /// Bodies of the chat requests received, in order.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        lock(&self.shared.requests).clone()
    }

    /// Raw bodies of the chat requests received, in order (for bodies that
    /// are not JSON, such as a form-encoded OAuth request).
    pub fn raw_requests(&self) -> Vec<bytes::Bytes> {
        lock(&self.shared.raw_requests).clone()
    }

    /// Path and query of the chat requests received, in order.
    pub fn request_uris(&self) -> Vec<String> {
        lock(&self.shared.uris).clone()
    }

    /// Headers of the chat requests received, in order.
    pub fn request_headers(&self) -> Vec<http::HeaderMap> {
        lock(&self.shared.headers).clone()
    }

    /// Waits (polling) until `cond` holds or `limit` passes; true if it held.
    pub async fn wait_for(&self, limit: Duration, cond: impl Fn(&Self) -> bool) -> bool {
        let end = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < end {
            if cond(self) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        cond(self)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Counts a response as finished or cancelled when its body is dropped.
struct Tracker {
    shared: Arc<Shared>,
    done: bool,
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        if self.done {
            self.shared.finished.fetch_add(1, Ordering::SeqCst);
        } else {
            self.shared.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    let fixed = lock(&shared.routes).get(&path).cloned();
    let reply = if let Some(r) = fixed {
        r
    } else if path.ends_with(shared.chat_path.as_deref().unwrap_or("/chat/completions"))
        || shared.more_paths.iter().any(|p| path.ends_with(p.as_str()))
    {
        shared.calls.fetch_add(1, Ordering::SeqCst);
        lock(&shared.headers).push(req.headers().clone());
        lock(&shared.uris).push(req.uri().path_and_query().map_or(path.clone(), |p| p.to_string()));
        let body = axum::body::to_bytes(req.into_body(), usize::MAX).await.unwrap_or_default();
        let value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
        lock(&shared.requests).push(value);
        lock(&shared.raw_requests).push(body);
        let next = lock(&shared.script).pop_front();
        next.or_else(|| lock(&shared.default).clone()).unwrap_or_else(|| Reply::text("ok"))
    } else {
        Reply::error(404, "not_found", "no such route on the fake upstream")
    };
    shared.in_flight.fetch_add(1, Ordering::SeqCst);
    let tracker = Tracker { shared: shared.clone(), done: false };
    reply.into_response(tracker).await
}

impl Reply {
    async fn into_response(self, tracker: Tracker) -> Response {
        // If the client goes away during the delay, this future is dropped
        // and so is the tracker: the response counts as cancelled.
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let mut builder = Response::builder().status(self.status);
        for (k, v) in &self.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let state = (self.steps.into_iter(), Some(tracker));
        let stream = futures_util::stream::unfold(state, |(mut it, mut t)| async move {
            loop {
                match it.next() {
                    None => {
                        if let Some(t) = t.as_mut() {
                            t.done = true;
                        }
                        return None;
                    }
                    Some(Step::Bytes(b)) => return Some((Ok::<_, std::io::Error>(b), (it, t))),
                    Some(Step::Wait(d)) => tokio::time::sleep(d).await,
                    Some(Step::Hang) => std::future::pending::<()>().await,
                    Some(Step::Cut) => {
                        if let Some(t) = t.as_mut() {
                            t.done = true;
                        }
                        return Some((Err(std::io::Error::other("cut on purpose")), (it, None)));
                    }
                }
            }
        });
        builder.body(Body::from_stream(stream.boxed())).unwrap_or_else(|_| Response::new(Body::empty()))
    }
}

/// Opens up to 300 connections to `addr` at once, none of them accepted
/// yet, each given 700 ms: how many completed their handshake, out of how
/// many tried (300, or fewer where `net.core.somaxconn` caps a backlog
/// below it). Behind a backlog of 128, 129 complete and the rest wait a
/// second for TCP's retransmit.
pub async fn connect_burst(addr: std::net::SocketAddr) -> (usize, usize) {
    let cap = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(4096);
    let clients = 300.min(cap.saturating_sub(1));
    let connects = (0..clients)
        .map(|_| tokio::time::timeout(std::time::Duration::from_millis(700), tokio::net::TcpStream::connect(addr)));
    let connected = futures_util::future::join_all(connects).await;
    (connected.iter().filter(|c| matches!(c, Ok(Ok(_)))).count(), clients)
}

#[cfg(test)]
mod tests {
    /// A burst of connections to a bench upstream that accepts none yet
    /// all complete at once ([`super::connect_burst`]).
    #[tokio::test]
    async fn a_bench_upstream_holds_a_burst_of_connections_in_its_backlog() {
        let listener = super::listen(0).unwrap_or_else(|e| panic!("listen: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("addr: {e}"));
        let (done, clients) = super::connect_burst(addr).await;
        assert_eq!(done, clients, "{done} of {clients} connected without a retry");
        drop(listener);
    }
}
