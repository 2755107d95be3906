//! The HTTP client of the request path: HTTP/1.1 keep-alive connections to
//! one upstream origin, on hyper's connection API, pooled per provider.
//!
//! Why not reqwest here: under load, profiles of the gateway showed
//! reqwest's layers (its redirect policy parsing the URL again for every
//! request, proxy matching, a header-map copy, the legacy pool's channel
//! hop) at about a sixth of the CPU spent per proxied request. This client
//! does only what a chat call needs: one POST with fixed headers to one
//! origin, over a connection taken from a small LIFO pool (the warmest
//! first), with rustls for `https` (the system's roots plus the provider's
//! `ca_file`). Listings, alerts and the other off-path calls keep reqwest.
//!
//! A connection goes back to the pool when its response body has been
//! read to the end; one dropped halfway is closed (hyper cannot reuse it).
//! A request that fails on a reused connection before any of it was
//! written (the upstream closed the idle connection at that moment) is
//! sent again once on a fresh connection.
//!
//! Behind an outbound proxy (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`; see
//! [`super::proxy`]) an `https` upstream is reached through a `CONNECT`
//! tunnel and an `http` one with absolute-form requests. Not supported
//! here: HTTP/2 (every OpenAI-compatible API also speaks HTTP/1.1).

use bytes::Bytes;
use futures_util::Stream;
use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE, HOST, USER_AGENT};
use http::{Request, Response, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::rustls;

/// Idle connections kept per origin and serving thread; more are closed
/// when they come back.
const MAX_IDLE: usize = 512;
/// Idle lists per pool: one per serving thread ([`crate::server::workers::slot`]),
/// wrapping around beyond this many threads.
const SLOTS: usize = 64;
/// An idle connection older than this is closed instead of reused (many
/// servers close theirs after 60–120 s).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// The largest whole (non-streamed) answer read from an upstream.
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// Why a request did not get a response.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// No connection within `timeouts.connect`.
    #[error("connect timeout after {0:?}")]
    ConnectTimeout(Duration),
    /// The TCP connection or the TLS handshake failed.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The connection failed while sending or before the response head.
    #[error("request failed: {0}")]
    Send(#[source] hyper::Error),
}

/// Why reading a response body failed.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The connection broke mid-body.
    #[error("response body: {0}")]
    Transport(#[source] hyper::Error),
    /// The body is larger than [`MAX_BODY`].
    #[error("response body larger than {MAX_BODY} bytes")]
    TooLarge,
}

/// Where a provider's requests go, resolved once when it is built.
struct Origin {
    host: String,
    port: u16,
    /// `Some` for `https`: the connector and the name to verify.
    tls: Option<(tokio_rustls::TlsConnector, rustls::pki_types::ServerName<'static>)>,
    /// The outbound proxy, when the environment names one for this origin.
    proxy: Option<super::proxy::Proxy>,
}

impl std::fmt::Debug for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Origin")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls.is_some())
            .field("proxy", &self.proxy)
            .finish()
    }
}

impl Origin {
    /// `host:port` as a `CONNECT` request names it.
    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// The longest answer head a proxy may send to `CONNECT`.
const MAX_CONNECT_HEAD: usize = 16 * 1024;

/// Asks `proxy` (connected as `tcp`) for a tunnel to `authority`.
async fn tunnel(tcp: &mut TcpStream, proxy: &super::proxy::Proxy, authority: &str) -> Result<(), HttpError> {
    let fail = |what: String| HttpError::Connect(format!("through proxy {proxy}: {what}"));
    let mut head = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(auth) = proxy.auth.as_ref().and_then(|a| a.to_str().ok()) {
        head.push_str("Proxy-Authorization: ");
        head.push_str(auth);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    tcp.write_all(head.as_bytes()).await.map_err(|e| fail(e.to_string()))?;
    let mut answer = Vec::with_capacity(256);
    let mut chunk = [0u8; 1024];
    let end = loop {
        let n = tcp.read(&mut chunk).await.map_err(|e| fail(e.to_string()))?;
        if n == 0 {
            return Err(fail("the proxy closed the connection during CONNECT".into()));
        }
        answer.extend_from_slice(&chunk[..n]);
        if let Some(i) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if answer.len() > MAX_CONNECT_HEAD {
            return Err(fail("the proxy's answer to CONNECT is too long".into()));
        }
    };
    let status = std::str::from_utf8(&answer[..end])
        .ok()
        .and_then(|head| head.split_whitespace().nth(1))
        .and_then(|code| code.parse::<u16>().ok());
    match status {
        // The upstream speaks first only after our TLS hello: nothing may follow the head.
        Some(200..=299) if answer.len() == end => Ok(()),
        Some(200..=299) => Err(fail("the proxy sent data after accepting CONNECT".into())),
        Some(407) => Err(fail("the proxy wants credentials (407); put them in the proxy URL".into())),
        Some(code) => Err(fail(format!("the proxy refused the tunnel to {authority} (HTTP {code})"))),
        None => Err(fail("the proxy's answer to CONNECT is not HTTP".into())),
    }
}

#[derive(Debug)]
struct Idle {
    sender: SendRequest<Full<Bytes>>,
    since: Instant,
}

/// The idle connections of one origin, one list per serving thread: a
/// connection's task runs on the event loop that opened it, so reusing it
/// from that thread wakes no other.
#[derive(Debug)]
struct Pool {
    origin: Origin,
    connect_timeout: Duration,
    idle: Box<[Mutex<Vec<Idle>>]>,
}

impl Pool {
    fn take(&self, slot: usize) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.idle[slot].lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(Idle { sender, since }) = idle.pop() {
            if !sender.is_closed() && since.elapsed() < IDLE_TIMEOUT {
                return Some(sender);
            }
        }
        None
    }

    fn give_back(&self, slot: usize, sender: SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let now = Instant::now();
        let mut idle = self.idle[slot].lock().unwrap_or_else(PoisonError::into_inner);
        // The oldest sit at the front: close the ones past their time.
        let stale = idle.iter().take_while(|i| now.duration_since(i.since) >= IDLE_TIMEOUT).count();
        idle.drain(..stale);
        if idle.len() < MAX_IDLE {
            idle.push(Idle { sender, since: now });
        }
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, HttpError> {
        let origin = &self.origin;
        let (host, port) = match &origin.proxy {
            Some(p) => (p.host.as_str(), p.port),
            None => (origin.host.as_str(), origin.port),
        };
        let mut tcp = tokio::time::timeout(self.connect_timeout, TcpStream::connect((host, port)))
            .await
            .map_err(|_| HttpError::ConnectTimeout(self.connect_timeout))?
            .map_err(|e| match &origin.proxy {
                Some(p) => HttpError::Connect(format!("proxy {p}: {e}")),
                None => HttpError::Connect(e.to_string()),
            })?;
        let _ = tcp.set_nodelay(true);
        if let (Some(proxy), Some(_)) = (&origin.proxy, &origin.tls) {
            tokio::time::timeout(self.connect_timeout, tunnel(&mut tcp, proxy, &origin.authority()))
                .await
                .map_err(|_| HttpError::ConnectTimeout(self.connect_timeout))??;
        }
        match &origin.tls {
            None => handshake(tcp).await,
            Some((connector, name)) => {
                let tls = tokio::time::timeout(self.connect_timeout, connector.connect(name.clone(), tcp))
                    .await
                    .map_err(|_| HttpError::ConnectTimeout(self.connect_timeout))?
                    .map_err(|e| HttpError::Connect(format!("TLS: {e}")))?;
                handshake(tls).await
            }
        }
    }
}

/// Starts HTTP/1.1 on a connected stream; its connection task lives as
/// long as the connection does.
async fn handshake<S>(io: S) -> Result<SendRequest<Full<Bytes>>, HttpError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = http1::handshake(TokioIo::new(io)).await.map_err(|e| HttpError::Connect(e.to_string()))?;
    // The connection task is owned by its `SendRequest` (it ends when the
    // sender and any response body are dropped), not by a supervisor.
    #[allow(clippy::disallowed_methods)]
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "Upstream connection ended with an error.");
        }
    });
    Ok(sender)
}

/// A pooled client for one origin, with the request line and fixed headers
/// of one endpoint prepared.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pool: Arc<Pool>,
    uri: Uri,
    headers: HeaderMap,
}

/// Errors building an endpoint (bad URL, unreadable `ca_file`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EndpointError(pub String);

impl Endpoint {
    /// An endpoint at `url` (`http` or `https`), sending `headers` (the
    /// key, the provider's extra headers) with every request. `ca_file`
    /// adds roots to the system's. `proxy` is the outbound proxy to go
    /// through ([`super::proxy::for_url`]), if any.
    pub fn new(
        url: &str,
        headers: &HeaderMap,
        ca_file: Option<&std::path::Path>,
        connect_timeout: Duration,
        proxy: Option<super::proxy::Proxy>,
    ) -> Result<Self, EndpointError> {
        let parsed = url::Url::parse(url).map_err(|e| EndpointError(format!("invalid URL: {e}")))?;
        let host = match parsed.host() {
            Some(url::Host::Domain(d)) => d.to_string(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err(EndpointError("the URL has no host".into())),
        };
        let https = match parsed.scheme() {
            "http" => false,
            "https" => true,
            other => return Err(EndpointError(format!("unsupported scheme `{other}` (http or https)"))),
        };
        let port = parsed.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
        let tls = if https {
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|e| EndpointError(format!("invalid TLS server name `{host}`: {e}")))?;
            Some((tls_connector(ca_file)?, name))
        } else {
            None
        };
        let mut path = parsed.path().to_string();
        if let Some(q) = parsed.query() {
            path.push('?');
            path.push_str(q);
        }
        let authority = match parsed.port() {
            Some(p) => format!("{}:{p}", parsed.host_str().unwrap_or_default()),
            None => parsed.host_str().unwrap_or_default().to_string(),
        };
        // Through a proxy, plain-HTTP requests name the whole URL.
        let plain_via_proxy = proxy.is_some() && !https;
        if plain_via_proxy {
            path = format!("http://{authority}{path}");
        }
        let uri: Uri = path.parse().map_err(|e| EndpointError(format!("invalid URL path: {e}")))?;
        let mut fixed = HeaderMap::with_capacity(headers.len() + 3);
        fixed.insert(HOST, HeaderValue::from_str(&authority).map_err(|_| EndpointError("invalid host".into()))?);
        fixed.insert(USER_AGENT, HeaderValue::from_static(concat!("spillway/", env!("CARGO_PKG_VERSION"))));
        fixed.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in headers {
            fixed.insert(name, value.clone());
        }
        if let Some(auth) = proxy.as_ref().and_then(|p| p.auth.clone()).filter(|_| plain_via_proxy) {
            fixed.insert(http::header::PROXY_AUTHORIZATION, auth);
        }
        let idle = (0..SLOTS).map(|_| Mutex::new(Vec::new())).collect();
        let pool = Pool { origin: Origin { host, port, tls, proxy }, connect_timeout, idle };
        Ok(Self { pool: Arc::new(pool), uri, headers: fixed })
    }

    /// Posts `body` and returns the response head with its body to read.
    pub async fn post(&self, body: Bytes) -> Result<Response<Body>, HttpError> {
        let slot = crate::server::workers::slot() % SLOTS;
        if let Some(mut sender) = self.pool.take(slot) {
            // Usually ready at once: it came back after its last body ended.
            if sender.ready().await.is_ok() {
                match sender.try_send_request(self.request(body.clone())).await {
                    Ok(resp) => return Ok(self.wrap(resp, sender, slot)),
                    // Not written at all: the upstream had closed this idle
                    // connection. Once more on a new one.
                    Err(e) if e.message().is_some() => {}
                    Err(e) => return Err(HttpError::Send(e.into_error())),
                }
            }
        }
        // Boxed: the TCP and TLS handshakes would otherwise make every
        // request's future larger (it is moved whole), pooled or not.
        let mut sender = Box::pin(self.pool.connect()).await?;
        let resp = sender.send_request(self.request(body)).await.map_err(HttpError::Send)?;
        Ok(self.wrap(resp, sender, slot))
    }

    fn request(&self, body: Bytes) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = http::Method::POST;
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }

    fn wrap(&self, resp: Response<Incoming>, sender: SendRequest<Full<Bytes>>, slot: usize) -> Response<Body> {
        resp.map(|incoming| Body {
            incoming: Some(incoming),
            back: Some(Back { sender, pool: self.pool.clone(), slot }),
            complete: None,
        })
    }
}

/// A response body; the connection returns to its pool when it has been
/// read to the end.
pub struct Body {
    /// `None` only while being dropped.
    incoming: Option<Incoming>,
    back: Option<Back>,
    /// Set by the reader when the answer is complete at its own level (an
    /// SSE `[DONE]`) though the body may not have ended yet; made only for
    /// readers that ask ([`Body::completion`]).
    complete: Option<Arc<std::sync::atomic::AtomicBool>>,
}

/// How long a dropped body whose answer was complete may take to reach its
/// end (the chunked terminator after `[DONE]`) so its connection can be
/// reused, and how many bytes it may still send.
const DRAIN_TIME: Duration = Duration::from_secs(1);
const DRAIN_BYTES: usize = 64 * 1024;

/// Marks a body's answer complete; see [`Body::completion`].
#[derive(Debug, Clone)]
pub struct Completion(Arc<std::sync::atomic::AtomicBool>);

impl Completion {
    /// The answer is complete: what the body still sends is its end.
    pub fn mark(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Where a connection goes back to.
struct Back {
    sender: SendRequest<Full<Bytes>>,
    pool: Arc<Pool>,
    slot: usize,
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Body(..)")
    }
}

impl Drop for Body {
    /// A body dropped before its end closes its connection — unless its
    /// answer was complete (a stream's `[DONE]` seen): then the rest (the
    /// chunked terminator, normally already on its way) is read in the
    /// background, briefly, and the connection goes back to its pool. A
    /// body dropped mid-answer (the client left) is never drained: closing
    /// the connection is what cancels the upstream's generation.
    fn drop(&mut self) {
        let (Some(back), Some(mut incoming)) = (self.back.take(), self.incoming.take()) else { return };
        if !self.complete.as_ref().is_some_and(|c| c.load(std::sync::atomic::Ordering::Acquire)) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        // Detached on purpose: it ends within DRAIN_TIME.
        runtime.spawn(async move {
            let drained = tokio::time::timeout(DRAIN_TIME, async {
                let mut left = DRAIN_BYTES;
                while let Some(frame) = incoming.frame().await {
                    let Ok(frame) = frame else { return false };
                    let n = frame.data_ref().map_or(0, Bytes::len);
                    if n > left {
                        return false;
                    }
                    left -= n;
                }
                true
            })
            .await;
            if drained == Ok(true) {
                back.pool.give_back(back.slot, back.sender);
            }
        });
    }
}

impl Body {
    /// A handle the reader uses to say the answer is complete, so that
    /// dropping the body afterwards keeps its connection (see `Drop`).
    pub fn completion(&mut self) -> Completion {
        Completion(self.complete.get_or_insert_with(Arc::default).clone())
    }

    /// Reads the whole body (at most [`MAX_BODY`] bytes).
    pub async fn bytes(self) -> Result<Bytes, BodyError> {
        read_to_end(self, MAX_BODY).await.map_err(|e| match e {
            ReadError::Body(e) => BodyError::Transport(e),
            ReadError::TooLarge => BodyError::TooLarge,
        })
    }

    fn ended(&mut self) {
        if let Some(Back { sender, pool, slot }) = self.back.take() {
            pool.give_back(slot, sender);
        }
    }
}

/// Why [`read_to_end`] stopped.
#[derive(Debug)]
pub enum ReadError<E> {
    /// The body failed.
    Body(E),
    /// It is longer than the limit.
    TooLarge,
}

/// Reads a body to its end, at most `limit` bytes: a body that comes as one
/// frame (the usual case) is returned as that frame, uncopied; more frames
/// are joined.
pub async fn read_to_end<B>(body: B, limit: usize) -> Result<Bytes, ReadError<B::Error>>
where
    B: hyper::body::Body<Data = Bytes>,
{
    let mut body = std::pin::pin!(body);
    let mut single: Option<Bytes> = None;
    let mut joined = bytes::BytesMut::new();
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(ReadError::Body)?.into_data() else { continue };
        len = len.saturating_add(data.len());
        if len > limit {
            return Err(ReadError::TooLarge);
        }
        if single.is_none() && joined.is_empty() {
            single = Some(data);
        } else {
            if let Some(first) = single.take() {
                joined.extend_from_slice(&first);
            }
            joined.extend_from_slice(&data);
        }
    }
    Ok(single.unwrap_or_else(|| joined.freeze()))
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>> {
        let Some(incoming) = self.incoming.as_mut() else { return Poll::Ready(None) };
        let polled = Pin::new(incoming).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => self.ended(),
            Poll::Ready(Some(Err(_))) => self.back = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.as_ref().is_none_or(Incoming::is_end_stream)
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.incoming.as_ref().map(Incoming::size_hint).unwrap_or_default()
    }
}

impl Stream for Body {
    type Item = Result<Bytes, hyper::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match hyper::body::Body::poll_frame(self.as_mut(), cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => {
                    // Trailers carry nothing a chat answer needs.
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
            }
        }
    }
}

/// The system's trusted roots, read once per process.
fn native_roots() -> &'static [rustls::pki_types::CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<rustls::pki_types::CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        if found.certs.is_empty() {
            tracing::warn!(errors = ?found.errors, "No system CA certificates found; https upstreams need a ca_file.");
        }
        found.certs
    })
}

/// A TLS connector trusting the system's roots plus `ca_file`.
fn tls_connector(ca_file: Option<&std::path::Path>) -> Result<tokio_rustls::TlsConnector, EndpointError> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    let (_added, _ignored) = roots.add_parsable_certificates(native_roots().iter().cloned());
    if let Some(path) = ca_file {
        let pem =
            std::fs::read(path).map_err(|e| EndpointError(format!("cannot read ca_file {}: {e}", path.display())))?;
        let mut found = 0;
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| EndpointError(format!("ca_file {} is not PEM: {e}", path.display())))?;
            roots.add(cert).map_err(|e| EndpointError(format!("ca_file {}: {e}", path.display())))?;
            found += 1;
        }
        if found == 0 {
            return Err(EndpointError(format!("ca_file {} holds no certificate", path.display())));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| EndpointError(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn read_to_end_keeps_one_frame_as_is_and_joins_several() {
        let one = Bytes::from_static(b"whole");
        let got = read_to_end(Full::new(one.clone()), 10).await.unwrap();
        assert_eq!(got.as_ptr(), one.as_ptr(), "a single frame is not copied");
        let frames = || {
            let parts =
                ["ab", "cd", "e"].map(|p| Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from(p))));
            http_body_util::StreamBody::new(futures_util::stream::iter(parts))
        };
        assert_eq!(read_to_end(frames(), 5).await.unwrap(), "abcde");
        assert!(matches!(read_to_end(frames(), 4).await, Err(ReadError::TooLarge)));
    }

    #[test]
    fn the_request_line_and_host_come_from_the_url() {
        let mut extra = HeaderMap::new();
        extra.insert("x-title", HeaderValue::from_static("t"));
        let e = Endpoint::new(
            "http://127.0.0.1:8080/v1/chat/completions?api-version=1",
            &extra,
            None,
            Duration::from_secs(1),
            None,
        )
        .unwrap();
        assert_eq!(e.uri.to_string(), "/v1/chat/completions?api-version=1");
        assert_eq!(e.headers[HOST], "127.0.0.1:8080");
        assert_eq!(e.headers["x-title"], "t");
        let e = Endpoint::new(
            "https://api.example.com/v1/chat/completions",
            &HeaderMap::new(),
            None,
            Duration::from_secs(1),
            None,
        )
        .unwrap();
        assert_eq!(e.headers[HOST], "api.example.com");
        assert_eq!(e.pool.origin.port, 443);
        assert!(e.pool.origin.tls.is_some());
    }

    /// A raw HTTP/1.1 upstream that counts its connections; with
    /// `close_after_first` it drops each connection after one answer
    /// without saying so (as servers do with idle keep-alive connections).
    async fn upstream(close_after_first: bool) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        serve(close_after_first, Duration::ZERO).await
    }

    /// Like [`upstream`]; the last 8 bytes of each body come `split` later.
    #[allow(clippy::disallowed_methods)] // a test server: its tasks end with the test's runtime
    async fn serve(close_after_first: bool, split: Duration) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (mut sock, _) = listener.accept().await.unwrap();
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    loop {
                        // One request: headers, then a body of content-length bytes.
                        let mut chunk = [0u8; 4096];
                        let head_end = loop {
                            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break at + 4;
                            }
                            match sock.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .map_or(0, |v| v.trim().parse().unwrap());
                        while buf.len() < head_end + len {
                            match sock.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        buf.drain(..head_end + len);
                        let body = "{\"ok\":true}";
                        let resp = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        let cut = resp.len() - if split.is_zero() { 0 } else { 8 };
                        let (now, later) = resp.as_bytes().split_at(cut);
                        if sock.write_all(now).await.is_err() {
                            return;
                        }
                        if !later.is_empty() {
                            tokio::time::sleep(split).await;
                            if sock.write_all(later).await.is_err() {
                                return;
                            }
                        }
                        if close_after_first {
                            return;
                        }
                    }
                });
            }
        });
        (url, accepted)
    }

    fn endpoint(url: &str) -> Endpoint {
        Endpoint::new(url, &HeaderMap::new(), None, Duration::from_secs(2), None).unwrap()
    }

    #[tokio::test]
    async fn a_connection_is_reused_once_its_body_was_read() {
        let (url, accepted) = upstream(false).await;
        let e = endpoint(&url);
        for _ in 0..3 {
            let body = e.post(Bytes::from_static(b"{}")).await.unwrap().into_body().bytes().await.unwrap();
            assert_eq!(&body[..], b"{\"ok\":true}");
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_connection_with_an_unread_body_is_not_handed_out() {
        let (url, accepted) = upstream(false).await;
        let e = endpoint(&url);
        let first = e.post(Bytes::from_static(b"{}")).await.unwrap();
        let second = e.post(Bytes::from_static(b"{}")).await.unwrap();
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
        // Dropped halfway (unread): closed, not pooled; the read one is.
        drop(first);
        second.into_body().bytes().await.unwrap();
        e.post(Bytes::from_static(b"{}")).await.unwrap().into_body().bytes().await.unwrap();
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_idle_connection_the_upstream_closed_does_not_fail_the_next_request() {
        let (url, accepted) = upstream(true).await;
        let e = endpoint(&url);
        for i in 1..=3 {
            let resp = e.post(Bytes::from_static(b"{}")).await.unwrap_or_else(|err| panic!("request {i}: {err}"));
            assert_eq!(resp.status(), 200);
            resp.into_body().bytes().await.unwrap();
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_body_dropped_after_its_answer_was_complete_keeps_its_connection() {
        use futures_util::StreamExt;
        let (url, accepted) = serve(false, Duration::from_millis(50)).await;
        let e = endpoint(&url);
        for (complete, connections) in [(true, 1), (false, 2)] {
            let mut body = e.post(Bytes::from_static(b"{}")).await.unwrap().into_body();
            // The first part only: the last bytes are still on their way.
            assert!(body.next().await.unwrap().is_ok());
            if complete {
                body.completion().mark();
            }
            drop(body);
            if complete {
                // The drain finishes once the last bytes arrive.
                let idle = |e: &Endpoint| e.pool.idle[0].lock().unwrap().len();
                let deadline = Instant::now() + Duration::from_secs(5);
                while idle(&e) == 0 && Instant::now() < deadline {
                    tokio::task::yield_now().await;
                }
            }
            let again = e.post(Bytes::from_static(b"{}")).await.unwrap();
            again.into_body().bytes().await.unwrap();
            // Complete: drained and reused. Not complete (the client left):
            // closed, so the next request needed a new connection.
            assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), connections, "complete: {complete}");
        }
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_connect_error() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let e = endpoint(&format!("http://127.0.0.1:{port}/v1/chat/completions"));
        assert!(matches!(e.post(Bytes::new()).await, Err(HttpError::Connect(_))));
    }

    #[test]
    fn bad_urls_and_ca_files_are_errors() {
        let h = HeaderMap::new();
        let t = Duration::from_secs(1);
        assert!(Endpoint::new("ftp://x/y", &h, None, t, None).unwrap_err().0.contains("scheme"));
        assert!(Endpoint::new("not a url", &h, None, t, None).is_err());
        let missing = std::path::Path::new("/nonexistent/ca.pem");
        assert!(Endpoint::new("https://x/y", &h, Some(missing), t, None)
            .unwrap_err()
            .0
            .contains("cannot read ca_file"));
    }

    /// A forwarding proxy on a free port: `CONNECT` tunnels and
    /// absolute-form requests, the first head of each connection recorded.
    /// `refuse` answers every request with that status instead.
    #[allow(clippy::disallowed_methods)] // a test server: its tasks end with the test's runtime
    async fn fake_proxy(refuse: Option<u16>) -> (u16, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        tokio::spawn(async move {
            loop {
                let (mut client, _) = listener.accept().await.unwrap();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let end = loop {
                        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break at + 4;
                        }
                        match client.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                    seen.lock().unwrap().push(head.clone());
                    if let Some(status) = refuse {
                        let _ = client
                            .write_all(format!("HTTP/1.1 {status} No\r\ncontent-length: 0\r\n\r\n").as_bytes())
                            .await;
                        return;
                    }
                    let mut words = head.split_whitespace();
                    let (method, target) = (words.next().unwrap().to_string(), words.next().unwrap().to_string());
                    let mut upstream = if method == "CONNECT" {
                        let up = TcpStream::connect(target.as_str()).await.unwrap();
                        client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await.unwrap();
                        up
                    } else {
                        let authority = target.strip_prefix("http://").unwrap().split('/').next().unwrap().to_string();
                        let mut up = TcpStream::connect(authority.as_str()).await.unwrap();
                        up.write_all(&buf).await.unwrap();
                        up
                    };
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                });
            }
        });
        (port, heads)
    }

    fn via(port: u16, credentials: bool) -> Option<super::super::proxy::Proxy> {
        let auth = credentials.then(|| HeaderValue::from_static("Basic dXNlcjpzM2NyM3Q="));
        Some(super::super::proxy::Proxy { host: "127.0.0.1".into(), port, auth })
    }

    #[tokio::test]
    async fn plain_http_goes_through_the_proxy_in_absolute_form_with_its_credentials() {
        let (url, accepted) = upstream(false).await;
        let (proxy, heads) = fake_proxy(None).await;
        let e = Endpoint::new(&url, &HeaderMap::new(), None, Duration::from_secs(2), via(proxy, true)).unwrap();
        for _ in 0..2 {
            let body = e.post(Bytes::from_static(b"{}")).await.unwrap().into_body().bytes().await.unwrap();
            assert_eq!(&body[..], b"{\"ok\":true}");
        }
        let heads = heads.lock().unwrap().clone();
        assert_eq!(heads.len(), 1, "one kept-alive connection to the proxy: {heads:?}");
        let path = url.strip_prefix("http://").unwrap();
        assert!(heads[0].starts_with(&format!("POST http://{path} HTTP/1.1\r\n")), "{}", heads[0]);
        assert!(heads[0].to_ascii_lowercase().contains("proxy-authorization: basic dxnlcjpzm2nym3q="), "{}", heads[0]);
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// An HTTPS upstream on a free port with the test CA's certificate for
    /// `localhost`; answers every request with `{"ok":true}`.
    #[allow(clippy::disallowed_methods)] // a test server: its tasks end with the test's runtime
    async fn tls_upstream() -> u16 {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/tls");
        let certs: Vec<_> =
            CertificateDer::pem_file_iter(format!("{dir}/leaf.pem")).unwrap().map(Result::unwrap).collect();
        let key = PrivateKeyDer::from_pem_file(format!("{dir}/leaf.key")).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body = "{\"ok\":true}";
                    let resp = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}", body.len());
                    let _ = tls.write_all(resp.as_bytes()).await;
                    let _ = tls.flush().await;
                });
            }
        });
        port
    }

    #[tokio::test]
    async fn https_goes_through_a_connect_tunnel_with_tls_end_to_end() {
        let port = tls_upstream().await;
        let (proxy, heads) = fake_proxy(None).await;
        let ca = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/tls/ca.pem"));
        let url = format!("https://localhost:{port}/v1/chat/completions");
        let e = Endpoint::new(&url, &HeaderMap::new(), Some(&ca), Duration::from_secs(2), via(proxy, true)).unwrap();
        let resp = e.post(Bytes::from_static(b"{}")).await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(&resp.into_body().bytes().await.unwrap()[..], b"{\"ok\":true}");
        let heads = heads.lock().unwrap().clone();
        assert_eq!(heads.len(), 1);
        assert!(heads[0].starts_with(&format!("CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n")));
        assert!(heads[0].contains("Proxy-Authorization: Basic dXNlcjpzM2NyM3Q=\r\n"), "{}", heads[0]);
        // The request itself went inside the tunnel, encrypted: the proxy never saw it.
        assert!(!heads[0].contains("POST"));
    }

    #[tokio::test]
    async fn a_proxy_that_refuses_the_tunnel_is_a_connect_error_without_secrets() {
        let ca = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/tls/ca.pem"));
        for (status, says) in
            [(407, "wants credentials (407)"), (403, "refused the tunnel to localhost:443 (HTTP 403)")]
        {
            let (proxy, _) = fake_proxy(Some(status)).await;
            let e = Endpoint::new(
                "https://localhost/v1/chat/completions",
                &HeaderMap::new(),
                Some(&ca),
                Duration::from_secs(2),
                via(proxy, true),
            )
            .unwrap();
            let Err(HttpError::Connect(message)) = e.post(Bytes::new()).await else {
                panic!("expected a connect error")
            };
            assert!(message.contains(says), "{message}");
            assert!(message.contains(&format!("http://127.0.0.1:{proxy}")), "{message}");
            assert!(!message.contains("dXNlcjpzM2NyM3Q") && !message.contains("s3cr3t"), "{message}");
        }
    }
}
