//! The server's HTTP/1.1 against raw sockets: what a client writes, byte
//! for byte, and what it reads back.

use super::*;
use axum::body::Body;
use futures_util::StreamExt;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

type Reply = Pin<Box<dyn Future<Output = http::Response<Body>> + Send>>;

struct Handle<F>(F);

impl<F: Fn(http::Request<RequestBody>) -> Reply + Send + Sync + 'static> Handler for Handle<F> {
    fn call(&self, request: http::Request<RequestBody>) -> impl Future<Output = Answer> + Send {
        let reply = (self.0)(request);
        async move { Answer::from(reply.await) }
    }
}

fn settings() -> Settings {
    Settings {
        header_read_timeout: Duration::from_secs(5),
        body_read_timeout: Duration::from_secs(5),
        max_body_bytes: 1024,
    }
}

/// A server on a free port that answers with `f`; its address and the
/// token that shuts it down.
async fn server<F>(settings: Settings, f: F) -> (SocketAddr, CancellationToken)
where
    F: Fn(http::Request<RequestBody>) -> Reply + Send + Sync + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let handler = Arc::new(Handle(f));
    let token = shutdown.clone();
    #[allow(clippy::disallowed_methods)] // a test's server
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (handler, token) = (handler.clone(), token.clone());
            #[allow(clippy::disallowed_methods)]
            tokio::spawn(async move { serve(stream, &*handler, settings, token).await });
        }
    });
    (addr, shutdown)
}

/// Answers with the method, the path and the body as read (or why it
/// could not be).
fn echo(request: http::Request<RequestBody>) -> Reply {
    Box::pin(async move {
        let (parts, body) = request.into_parts();
        let read = http_body_util::BodyExt::collect(body).await;
        let text = match read {
            Ok(b) => String::from_utf8_lossy(&b.to_bytes()).into_owned(),
            Err(e) => format!("failed: {e:?}"),
        };
        http::Response::new(Body::from(format!("{} {} {text}", parts.method, parts.uri.path())))
    })
}

/// One response read off `sock`: the head as text, and the body decoded
/// by its framing (content-length or chunked). `None` at a clean close.
async fn response(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = sock.read(&mut chunk).await.unwrap();
        if n == 0 {
            assert!(buf.is_empty(), "closed inside a head: {:?}", String::from_utf8_lossy(buf));
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf.drain(..head_end).collect()).unwrap();
    let lower = head.to_ascii_lowercase();
    let mut more = async |buf: &mut Vec<u8>| {
        let mut chunk = [0u8; 4096];
        let n = sock.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed inside a body");
        buf.extend_from_slice(&chunk[..n]);
    };
    let mut body = Vec::new();
    if head.starts_with("HTTP/1.1 1") {
        return Some((head, body));
    }
    if let Some(len) = lower.lines().find_map(|l| l.strip_prefix("content-length: ")) {
        let len: usize = len.trim().parse().unwrap();
        while buf.len() < len {
            more(buf).await;
        }
        body = buf.drain(..len).collect();
    } else if lower.contains("transfer-encoding: chunked") {
        loop {
            let line_end = loop {
                if let Some(at) = buf.windows(2).position(|w| w == b"\r\n") {
                    break at;
                }
                more(buf).await;
            };
            let size = usize::from_str_radix(std::str::from_utf8(&buf[..line_end]).unwrap(), 16).unwrap();
            buf.drain(..line_end + 2);
            while buf.len() < size + 2 {
                more(buf).await;
            }
            body.extend(buf.drain(..size));
            assert_eq!(buf.drain(..2).collect::<Vec<_>>(), b"\r\n");
            if size == 0 {
                break;
            }
        }
    }
    Some((head, body))
}

async fn connect(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).await.unwrap()
}

/// Reads until the server closes; what came (within 5 s, or the test fails).
async fn until_closed(sock: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), sock.read_to_end(&mut all))
        .await
        .expect("the server kept the connection open")
        .ok();
    all
}

#[tokio::test]
async fn keep_alive_answers_request_after_request_with_length_and_date() {
    let (addr, _) = server(settings(), echo).await;
    let mut sock = connect(addr).await;
    let mut buf = Vec::new();
    sock.write_all(b"GET /first HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let (head, body) = response(&mut sock, &mut buf).await.unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("content-length: 11\r\n"), "{head}");
    assert!(head.contains("\r\ndate: "), "{head}");
    assert!(!head.contains("connection"), "{head}");
    assert_eq!(body, b"GET /first ");
    sock.write_all(b"POST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello").await.unwrap();
    let (_, body) = response(&mut sock, &mut buf).await.unwrap();
    assert_eq!(body, b"POST /second hello");
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let (addr, _) = server(settings(), echo).await;
    let mut sock = connect(addr).await;
    let mut buf = Vec::new();
    sock.write_all(
        b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\none\r\nPOST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\ntwoGET /c HTTP/1.1\r\n\r\n",
    )
    .await
    .unwrap();
    for want in ["POST /a one", "POST /b two", "GET /c "] {
        let (_, body) = response(&mut sock, &mut buf).await.unwrap();
        assert_eq!(String::from_utf8(body).unwrap(), want);
    }
}

#[tokio::test]
async fn a_chunked_body_is_read_whole_wherever_its_pieces_are_cut() {
    let (addr, _) = server(settings(), echo).await;
    let wire = b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nx-trailer: 1\r\n\r\n";
    let body_at = wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    for cut in body_at..wire.len() {
        let mut sock = connect(addr).await;
        sock.write_all(&wire[..cut]).await.unwrap();
        sock.flush().await.unwrap();
        tokio::task::yield_now().await;
        sock.write_all(&wire[cut..]).await.unwrap();
        let (_, body) = response(&mut sock, &mut Vec::new()).await.unwrap();
        assert_eq!(String::from_utf8(body).unwrap(), "POST /c hello world", "cut at {cut}");
    }
}

#[tokio::test]
async fn expect_continue_is_answered_when_the_body_is_wanted() {
    let (addr, _) = server(settings(), echo).await;
    let mut sock = connect(addr).await;
    let mut buf = Vec::new();
    sock.write_all(b"POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n").await.unwrap();
    let (interim, _) = response(&mut sock, &mut buf).await.unwrap();
    assert_eq!(interim, "HTTP/1.1 100 Continue\r\n\r\n");
    sock.write_all(b"body").await.unwrap();
    let (head, body) = response(&mut sock, &mut buf).await.unwrap();
    assert!(head.starts_with("HTTP/1.1 200"));
    assert_eq!(body, b"POST /e body");
}

#[tokio::test]
async fn a_body_declared_too_large_is_not_asked_for_and_the_connection_closes() {
    let (addr, _) = server(settings(), echo).await;
    let mut sock = connect(addr).await;
    sock.write_all(b"POST /big HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n").await.unwrap();
    let all = String::from_utf8(until_closed(&mut sock).await).unwrap();
    assert!(!all.contains("100 Continue"), "{all}");
    assert!(all.starts_with("HTTP/1.1 200"), "{all}");
    assert!(all.contains("connection: close\r\n"), "{all}");
    assert!(all.ends_with("failed: TooLarge"), "{all}");
}

#[tokio::test]
async fn a_chunked_body_past_the_limit_fails_as_too_large() {
    let (addr, _) = server(settings(), echo).await;
    let mut sock = connect(addr).await;
    let mut wire = b"POST /big HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..3 {
        wire.extend_from_slice(b"200\r\n");
        wire.extend_from_slice(&[b'x'; 512]);
        wire.extend_from_slice(b"\r\n");
    }
    sock.write_all(&wire).await.unwrap();
    let all = String::from_utf8(until_closed(&mut sock).await).unwrap();
    assert!(all.contains("connection: close\r\n"), "{all}");
    assert!(all.ends_with("failed: TooLarge"), "{all}");
}

#[tokio::test]
async fn a_body_that_stalls_fails_as_timed_out() {
    let s = Settings { body_read_timeout: Duration::from_millis(100), ..settings() };
    let (addr, _) = server(s, echo).await;
    let mut sock = connect(addr).await;
    sock.write_all(b"POST /slow HTTP/1.1\r\nContent-Length: 10\r\n\r\n{").await.unwrap();
    let all = String::from_utf8(until_closed(&mut sock).await).unwrap();
    assert!(all.ends_with("failed: TimedOut"), "{all}");
    assert!(all.contains("connection: close\r\n"), "{all}");
}

/// A streamed answer: `frames`, each sent as the handler's stream yields it.
fn streaming(frames: Vec<&'static str>) -> impl Fn(http::Request<RequestBody>) -> Reply + Send + Sync + 'static {
    move |_| {
        let frames = frames.clone();
        Box::pin(async move {
            let s = futures_util::stream::iter(frames).then(|f| async move {
                tokio::task::yield_now().await;
                Ok::<_, std::convert::Infallible>(Bytes::from_static(f.as_bytes()))
            });
            http::Response::new(Body::from_stream(s))
        })
    }
}

#[tokio::test]
async fn a_stream_is_chunked_and_the_connection_is_reused_after_it() {
    let (addr, _) = server(settings(), streaming(vec!["data: 1\n\n", "data: 2\n\n", "", "data: [DONE]\n\n"])).await;
    let mut sock = connect(addr).await;
    let mut buf = Vec::new();
    for _ in 0..2 {
        sock.write_all(b"GET /s HTTP/1.1\r\n\r\n").await.unwrap();
        let (head, body) = response(&mut sock, &mut buf).await.unwrap();
        assert!(head.contains("transfer-encoding: chunked\r\n"), "{head}");
        assert_eq!(String::from_utf8(body).unwrap(), "data: 1\n\ndata: 2\n\ndata: [DONE]\n\n");
    }
}

#[tokio::test]
async fn an_http10_client_gets_http10_and_a_stream_to_the_close() {
    let (addr, _) = server(settings(), streaming(vec!["one ", "two"])).await;
    let mut sock = connect(addr).await;
    sock.write_all(b"GET /s HTTP/1.0\r\n\r\n").await.unwrap();
    let all = String::from_utf8(until_closed(&mut sock).await).unwrap();
    assert!(all.starts_with("HTTP/1.0 200 OK\r\n"), "{all}");
    assert!(!all.contains("transfer-encoding"), "{all}");
    assert!(all.ends_with("\r\n\r\none two"), "{all}");
    // With keep-alive and a known length, it stays open.
    let (addr, _) = server(settings(), echo).await;
    let mut sock = connect(addr).await;
    let mut buf = Vec::new();
    for _ in 0..2 {
        sock.write_all(b"GET /k HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").await.unwrap();
        let (head, body) = response(&mut sock, &mut buf).await.unwrap();
        assert!(head.contains("connection: keep-alive\r\n"), "{head}");
        assert_eq!(body, b"GET /k ");
    }
}

#[tokio::test]
async fn connection_close_is_answered_and_then_the_connection_closes() {
    let (addr, _) = server(settings(), echo).await;
    let mut sock = connect(addr).await;
    sock.write_all(b"GET /bye HTTP/1.1\r\nConnection: close\r\n\r\n").await.unwrap();
    let all = String::from_utf8(until_closed(&mut sock).await).unwrap();
    assert!(all.contains("connection: close\r\n"), "{all}");
    assert!(all.ends_with("GET /bye "), "{all}");
}

#[tokio::test]
async fn heads_that_cannot_be_read_are_refused_with_their_status() {
    let (addr, _) = server(settings(), echo).await;
    let many: String = (0..101).map(|i| format!("x-h{i}: v\r\n")).collect();
    let cases: [(&[u8], &str); 7] = [
        (b"NOT HTTP AT ALL\r\n\r\n", "400"),
        (b"G\x01T / HTTP/1.1\r\n\r\n", "400"),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "505"),
        (b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", "400"),
        (b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "400"),
        (b"POST / HTTP/1.1\r\nContent-Length: -3\r\n\r\n", "400"),
        (format!("GET / HTTP/1.1\r\n{many}\r\n").into_bytes().leak(), "431"),
    ];
    for (wire, status) in cases {
        let mut sock = connect(addr).await;
        sock.write_all(wire).await.unwrap();
        let all = String::from_utf8(until_closed(&mut sock).await).unwrap();
        assert!(all.starts_with(&format!("HTTP/1.1 {status} ")), "{}: {all}", String::from_utf8_lossy(wire));
    }
    // A head longer than 64 KiB, never finished.
    let mut sock = connect(addr).await;
    let long = format!("GET / HTTP/1.1\r\nx-long: {}", "a".repeat(70 * 1024));
    sock.write_all(long.as_bytes()).await.unwrap();
    let all = String::from_utf8(until_closed(&mut sock).await).unwrap();
    assert!(all.starts_with("HTTP/1.1 431 "), "{all}");
}

#[tokio::test]
async fn a_connection_without_a_whole_head_closes_at_the_header_timeout() {
    let s = Settings { header_read_timeout: Duration::from_millis(100), ..settings() };
    let (addr, _) = server(s, echo).await;
    // Idle from the start, idle after an answer, and a head never finished.
    let mut idle = connect(addr).await;
    assert!(until_closed(&mut idle).await.is_empty());
    let mut after = connect(addr).await;
    after.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    assert!(String::from_utf8(until_closed(&mut after).await).unwrap().ends_with("GET / "));
    let mut partial = connect(addr).await;
    partial.write_all(b"POST / HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    assert!(until_closed(&mut partial).await.is_empty());
}

/// Sends on `tx` when dropped.
struct Dropped(Option<tokio::sync::oneshot::Sender<()>>);

impl Drop for Dropped {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

#[tokio::test]
async fn a_client_that_leaves_while_its_request_is_served_drops_the_handler() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let guard = std::sync::Mutex::new(Some(Dropped(Some(tx))));
    let (addr, _) = server(settings(), move |_| {
        let held = guard.lock().unwrap().take();
        Box::pin(async move {
            let _held = held;
            std::future::pending::<http::Response<Body>>().await
        })
    })
    .await;
    let mut sock = connect(addr).await;
    sock.write_all(b"GET /wait HTTP/1.1\r\n\r\n").await.unwrap();
    drop(sock);
    tokio::time::timeout(Duration::from_secs(5), rx).await.expect("the handler outlived its client").unwrap();
}

#[tokio::test]
async fn a_client_that_leaves_while_a_stream_waits_drops_the_stream() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let guard = std::sync::Mutex::new(Some(Dropped(Some(tx))));
    let (addr, _) = server(settings(), move |_| {
        let held = guard.lock().unwrap().take();
        Box::pin(async move {
            let first =
                futures_util::stream::once(async { Ok::<_, std::convert::Infallible>(Bytes::from("data: 1\n\n")) });
            let rest = futures_util::stream::once(async move {
                let _held = held;
                std::future::pending::<Result<Bytes, std::convert::Infallible>>().await
            });
            http::Response::new(Body::from_stream(first.chain(rest)))
        })
    })
    .await;
    let mut sock = connect(addr).await;
    sock.write_all(b"GET /s HTTP/1.1\r\n\r\n").await.unwrap();
    let mut buf = [0u8; 1024];
    let n = sock.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).contains("data: 1"));
    drop(sock);
    tokio::time::timeout(Duration::from_secs(5), rx).await.expect("the stream outlived its client").unwrap();
}

#[tokio::test]
async fn head_gets_the_length_without_the_body_and_the_connection_goes_on() {
    let (addr, _) = server(settings(), echo).await;
    let mut sock = connect(addr).await;
    sock.write_all(b"HEAD /h HTTP/1.1\r\n\r\nGET /g HTTP/1.1\r\nConnection: close\r\n\r\n").await.unwrap();
    let all = String::from_utf8(until_closed(&mut sock).await).unwrap();
    let (first, second) = all.split_once("\r\n\r\n").unwrap();
    assert!(first.contains("content-length: 8"), "{first}");
    assert!(second.starts_with("HTTP/1.1 200 OK\r\n"), "{second}");
    assert!(second.ends_with("GET /g "), "{second}");
}

#[tokio::test]
async fn no_content_has_no_body_and_no_length() {
    let (addr, _) = server(settings(), |_| {
        Box::pin(async {
            let mut r = http::Response::new(Body::empty());
            *r.status_mut() = http::StatusCode::NO_CONTENT;
            r
        })
    })
    .await;
    let mut sock = connect(addr).await;
    sock.write_all(b"OPTIONS / HTTP/1.1\r\nConnection: close\r\n\r\n").await.unwrap();
    let all = String::from_utf8(until_closed(&mut sock).await).unwrap();
    assert!(all.starts_with("HTTP/1.1 204 No Content\r\n"), "{all}");
    assert!(!all.contains("content-length") && !all.contains("transfer-encoding"), "{all}");
    assert!(all.ends_with("\r\n\r\n"), "{all}");
}

#[tokio::test]
async fn on_shutdown_an_idle_connection_closes_and_a_busy_one_finishes_first() {
    let (release, released) = tokio::sync::watch::channel(false);
    let (entered_tx, mut entered) = tokio::sync::mpsc::unbounded_channel();
    let (addr, shutdown) = server(settings(), move |_| {
        let mut released = released.clone();
        let _ = entered_tx.send(());
        Box::pin(async move {
            let _ = released.wait_for(|r| *r).await;
            http::Response::new(Body::from("done"))
        })
    })
    .await;
    let mut idle = connect(addr).await;
    let mut busy = connect(addr).await;
    busy.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    entered.recv().await.unwrap();
    shutdown.cancel();
    assert!(until_closed(&mut idle).await.is_empty());
    release.send(true).unwrap();
    let all = String::from_utf8(until_closed(&mut busy).await).unwrap();
    assert!(all.starts_with("HTTP/1.1 200"), "{all}");
    assert!(all.contains("connection: close\r\n"), "{all}");
    assert!(all.ends_with("done"), "{all}");
}
