//! The client end to end against raw upstreams and a forwarding proxy on
//! free ports: connection reuse, what closes a connection, `CONNECT`
//! tunnels and absolute-form requests, TLS with the test CA.

use super::proxy::Proxy;
use super::{Endpoint, HttpError};
use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::rustls;

/// A raw HTTP/1.1 upstream that counts its connections; with
/// `close_after_first` it drops each connection after one answer
/// without saying so (as servers do with idle keep-alive connections).
async fn upstream(close_after_first: bool) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    serve(close_after_first, Duration::ZERO).await
}

/// Like [`upstream`]; the last 8 bytes of each body come `split` later.
async fn serve(close_after_first: bool, split: Duration) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    listen(move |mut sock| async move {
        let mut buf = Vec::new();
        while next_request(&mut sock, &mut buf).await.is_some() {
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
    })
    .await
}

/// A raw upstream on a free port: each connection handled by `handle` on
/// a task of its own; counts its connections.
#[allow(clippy::disallowed_methods)] // a test server: its tasks end with the test's runtime
async fn listen<F, Fut>(handle: F) -> (String, Arc<std::sync::atomic::AtomicUsize>)
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        loop {
            let (sock, _) = listener.accept().await.unwrap();
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(handle(sock));
        }
    });
    (url, accepted)
}

/// Reads one request (its head, then a body of content-length bytes) from
/// `sock` into `buf` and takes it out; `None` when the connection ends.
async fn next_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<()> {
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let len: usize =
        head.lines().find_map(|l| l.strip_prefix("content-length:")).map_or(0, |v| v.trim().parse().unwrap());
    while buf.len() < head_end + len {
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    buf.drain(..head_end + len);
    Some(())
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

/// Every chunk that one socket read brought is handed over in the reader's
/// poll (the body drives its connection: see `link`), not one per wake-up
/// of a connection task — which is what lets a stream's forwarder gather
/// them into one frame and one write.
#[tokio::test]
#[allow(clippy::disallowed_methods)] // a test server: its task ends with the test's runtime
async fn every_chunk_one_read_brought_is_ready_without_waiting() {
    use futures_util::StreamExt;
    use std::task::{Context, Poll};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        // The request: its head and the two bytes of its body.
        while buf.windows(4).position(|w| w == b"\r\n\r\n").is_none_or(|at| buf.len() < at + 6) {
            let n = sock.read(&mut chunk).await.unwrap();
            assert!(n > 0);
            buf.extend_from_slice(&chunk[..n]);
        }
        let mut resp = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
        for i in 0..100 {
            let event = format!("data: {i:03}\n\n");
            resp.extend_from_slice(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes());
        }
        resp.extend_from_slice(b"0\r\n\r\n");
        sock.write_all(&resp).await.unwrap();
        let _ = sock.read(&mut chunk).await;
    });
    let e = endpoint(&url);
    let mut body = e.post(Bytes::from_static(b"{}")).await.unwrap().into_body();
    let mut got = vec![body.next().await.unwrap().unwrap()];
    // The rest came in the same write: all of it is there without waiting.
    let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
    loop {
        match body.poll_next_unpin(&mut cx) {
            Poll::Ready(Some(chunk)) => got.push(chunk.unwrap()),
            Poll::Ready(None) => break,
            Poll::Pending => panic!("chunk {} was not ready", got.len()),
        }
    }
    let text: String = got.iter().map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    let want: String = (0..100).map(|i| format!("data: {i:03}\n\n")).collect();
    assert_eq!(text, want);
    // Read to its end: the connection is back in the pool for the next request.
    assert_eq!(e.pool.idle[0].lock().unwrap().len(), 1);
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
    assert!(Endpoint::new("https://x/y", &h, Some(missing), t, None).unwrap_err().0.contains("cannot read ca_file"));
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
                    let _ =
                        client.write_all(format!("HTTP/1.1 {status} No\r\ncontent-length: 0\r\n\r\n").as_bytes()).await;
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

fn via(port: u16, credentials: bool) -> Option<Proxy> {
    let auth = credentials.then(|| HeaderValue::from_static("Basic dXNlcjpzM2NyM3Q="));
    Some(Proxy { host: "127.0.0.1".into(), port, auth })
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
    let certs: Vec<_> = CertificateDer::pem_file_iter(format!("{dir}/leaf.pem")).unwrap().map(Result::unwrap).collect();
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
    for (status, says) in [(407, "wants credentials (407)"), (403, "refused the tunnel to localhost:443 (HTTP 403)")] {
        let (proxy, _) = fake_proxy(Some(status)).await;
        let e = Endpoint::new(
            "https://localhost/v1/chat/completions",
            &HeaderMap::new(),
            Some(&ca),
            Duration::from_secs(2),
            via(proxy, true),
        )
        .unwrap();
        let Err(HttpError::Connect(message)) = e.post(Bytes::new()).await else { panic!("expected a connect error") };
        assert!(message.contains(says), "{message}");
        assert!(message.contains(&format!("http://127.0.0.1:{proxy}")), "{message}");
        assert!(!message.contains("dXNlcjpzM2NyM3Q") && !message.contains("s3cr3t"), "{message}");
    }
}

/// A raw upstream that answers every request with `response` as written,
/// then closes the connection when `close` (else waits for the next
/// request); counts its connections.
async fn scripted(response: &'static [u8], close: bool) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    listen(move |mut sock| async move {
        let mut buf = Vec::new();
        while next_request(&mut sock, &mut buf).await.is_some() {
            if sock.write_all(response).await.is_err() || close {
                return;
            }
        }
    })
    .await
}

async fn read(e: &Endpoint) -> Result<(u16, Vec<u8>), String> {
    let resp = e.post(Bytes::from_static(b"{}")).await.map_err(|err| err.to_string())?;
    let status = resp.status().as_u16();
    let body = resp.into_body().bytes().await.map_err(|err| err.to_string())?;
    Ok((status, body.to_vec()))
}

#[tokio::test]
async fn interim_heads_are_skipped_and_each_framing_is_read() {
    use std::sync::atomic::Ordering;
    let (url, accepted) =
        scripted(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello", false)
            .await;
    let e = endpoint(&url);
    for _ in 0..2 {
        assert_eq!(read(&e).await.unwrap(), (200, b"hello".to_vec()));
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "a content-length body ends where it says: reused");
    let (url, accepted) = scripted(
        b"HTTP/1.1 429 Too Many\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
        false,
    )
    .await;
    let e = endpoint(&url);
    for _ in 0..2 {
        assert_eq!(read(&e).await.unwrap(), (429, b"abcde".to_vec()));
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "a chunked body ends at its last chunk: reused");
    let (url, accepted) = scripted(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the close", true).await;
    let e = endpoint(&url);
    for _ in 0..2 {
        assert_eq!(read(&e).await.unwrap(), (200, b"until the close".to_vec()));
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 2, "a body read to the close cannot be reused");
}

#[tokio::test]
async fn the_answer_s_fields_are_read_as_sent_in_any_case() {
    let (url, _) = scripted(
        b"HTTP/1.1 200 OK\r\nX-Request-Id: req_up\r\nSet-Cookie: a=1\r\nX-RateLimit-Remaining-Tokens: 0\r\n\
          X-RateLimit-Reset-Tokens: 1.5s\r\nset-cookie: b=2\r\nContent-Type: text/event-stream\r\ncontent-length: 2\r\n\r\nok",
        false,
    )
    .await;
    let resp = endpoint(&url).post(Bytes::from_static(b"{}")).await.unwrap();
    let fields = resp.headers();
    assert_eq!(fields.get("x-request-id"), Some(&b"req_up"[..]));
    assert_eq!(fields.get_all("set-cookie").collect::<Vec<_>>(), [&b"a=1"[..], b"b=2"]);
    assert_eq!(crate::providers::headers::upstream_request_id(fields).as_deref(), Some("req_up"));
    assert_eq!(
        crate::health::ratelimit::reset_hint(fields, std::time::SystemTime::now()),
        Some(Duration::from_millis(1500)),
        "a used-up quota's reset, its names in the upstream's case"
    );
    assert_eq!(fields.len(), 7);
    assert_eq!(&resp.into_body().bytes().await.unwrap()[..], b"ok");
}

#[tokio::test]
async fn a_response_that_says_close_or_speaks_http_1_0_is_not_reused() {
    use std::sync::atomic::Ordering;
    for response in [
        &b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\ncontent-length: 2\r\n\r\nok"[..],
        b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok",
    ] {
        let (url, accepted) = scripted(response, false).await;
        let e = endpoint(&url);
        for _ in 0..2 {
            assert_eq!(read(&e).await.unwrap(), (200, b"ok".to_vec()));
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 2, "{}", String::from_utf8_lossy(response));
    }
}

#[tokio::test]
async fn a_body_cut_short_or_framed_wrongly_is_an_error_and_a_head_of_garbage_too() {
    for (response, says) in [
        (&b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc"[..], "before the body ended"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab", "before the body ended"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nok", "content-length"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.x response head"),
        (b"", "before the response head"),
    ] {
        let (url, _) = scripted(response, true).await;
        let err = read(&endpoint(&url)).await.unwrap_err();
        assert!(err.contains(says), "{}: {err}", String::from_utf8_lossy(response));
    }
}

#[tokio::test]
async fn the_request_carries_the_fixed_headers_the_call_ids_and_its_length() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/chat/completions?x=1", listener.local_addr().unwrap());
    let mut extra = HeaderMap::new();
    extra.insert("x-request-id", HeaderValue::from_static("fixed"));
    extra.insert("authorization", HeaderValue::from_static("Bearer k"));
    let e = Endpoint::new(&url, &extra, None, Duration::from_secs(2), None).unwrap();
    let ids = crate::providers::types::CallIds { request_id: Some("req-7"), ..Default::default() };
    let sent = async move { e.post_as(Bytes::from_static(b"{\"a\":1}"), ids).await.map(|_| ()) };
    let got = async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 4096];
        let mut n = 0;
        while !String::from_utf8_lossy(&buf[..n]).ends_with("{\"a\":1}") {
            n += sock.read(&mut buf[n..]).await.unwrap();
        }
        sock.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").await.unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let (sent, request) = tokio::join!(sent, got);
    sent.unwrap();
    assert!(request.starts_with("POST /v1/chat/completions?x=1 HTTP/1.1\r\n"), "{request}");
    for line in ["authorization: Bearer k\r\n", "x-request-id: req-7\r\n", "content-length: 7\r\n\r\n{\"a\":1}"] {
        assert!(request.contains(line), "{line:?} in {request}");
    }
    assert!(!request.contains("fixed"), "the call's id replaces a fixed one: {request}");
}
