//! Clients that stop reading the answer (issue 24 §1): `timeouts.total`
//! ends a stream whether or not its client reads, and
//! `server.client_write_timeout` ends one whose client accepts no bytes —
//! releasing the concurrency slot, closing the upstream call, and counting
//! the cut. The clients here set a 4 KiB receive buffer and never read, or
//! read a little now and then, against a long unpaced stream.
//!
//! Real time, not a paused clock: the point is what happens while real
//! sockets are full (the timer logic itself is tested on a paused clock in
//! `server::client_io`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;

use common::*;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// An answer far larger than every socket buffer on its way (the kernel
/// lets a loopback send buffer grow to a few MiB).
const PIECES: usize = 2000;
const PIECE: usize = 4000;

/// A long stream that, once sent, stays open: its end must come from the
/// gateway.
fn long_stream() -> Reply {
    let piece = "x".repeat(PIECE);
    let pieces: Vec<&str> = (0..PIECES).map(|_| piece.as_str()).collect();
    Reply::stream(&pieces).hang_after(PIECES + 1)
}

fn config(up: &FakeUpstream, server: &str, total: &str) -> String {
    format!(
        "server:\n  max_concurrent_requests: 1\n{server}providers:\n{}health:\n  retries: {{ max: 1, backoff: 1ms, jitter: 0 }}\n  timeouts: {{ connect: 1s, first_token: 2s, idle: 60s, total: {total} }}\ncascades:\n  chat:\n    models: [a/m]\n",
        openai_provider("a", up)
    )
}

/// A client with a 4 KiB receive buffer that sends one chat request and
/// reads nothing.
async fn stalled(gw: &TestGateway, stream: bool) -> TcpStream {
    let addr = gw.url.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut sock = socket.connect(addr).await.unwrap();
    let body = chat("chat", stream).to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).await.unwrap();
    sock.write_all(body.as_bytes()).await.unwrap();
    sock
}

/// What is left for the client to read once the gateway gave up on it:
/// the read ends (closed or reset) within a few seconds.
async fn read_rest(mut sock: TcpStream) -> String {
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), sock.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the gateway kept the connection open");
    String::from_utf8_lossy(&buf).into_owned()
}

async fn cuts(gw: &TestGateway, reason: &str) -> f64 {
    gw.metric(&format!("spillway_slow_client_cuts_total{{reason=\"{reason}\"}}")).await
}

/// Waits until the gateway has cut one client for `reason`.
async fn cut_once(gw: &TestGateway, reason: &str) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if cuts(gw, reason).await == 1.0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn a_stream_whose_client_never_reads_ends_at_total() {
    let up = FakeUpstream::start().await;
    up.push(long_stream());
    let gw = start(&config(&up, "", "3s")).await;
    let started = Instant::now();
    let sock = stalled(&gw, true).await;
    assert!(up.wait_for(Duration::from_secs(5), |u| u.calls() == 1).await);
    // While it is held, the one slot is taken.
    assert_eq!(gw.post(&chat("chat", false)).await.status(), 503);
    // The gateway lets go of the upstream at `total`, not later.
    assert!(up.wait_for(Duration::from_secs(10), |u| u.cancelled() == 1).await, "the upstream call was never closed");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(2900) && took < Duration::from_secs(6), "ended after {took:?}");
    // The slot is free again: the next client is served.
    assert_eq!(gw.post(&chat("chat", false)).await.status(), 200);
    assert!(!read_rest(sock).await.contains("[DONE]"));
    assert_eq!(cuts(&gw, "total").await, 1.0);
    assert_eq!(gw.metric(r#"spillway_requests_total{cascade="chat",outcome="error"}"#).await, 1.0);
    assert_eq!(gw.metric(r#"spillway_client_disconnects_total{cascade="chat"}"#).await, 0.0);
    // The client's pace is not the model's fault: no failed attempt.
    let timeout = r#"spillway_attempts_total{cascade="chat",provider="a",model="m",result="timeout"}"#;
    assert_eq!(gw.metric(timeout).await, 0.0);
}

#[tokio::test]
async fn a_stream_whose_client_accepts_nothing_ends_at_the_write_timeout() {
    let up = FakeUpstream::start().await;
    up.push(long_stream());
    let gw = start(&config(&up, "  client_write_timeout: 500ms\n", "60s")).await;
    let started = Instant::now();
    let sock = stalled(&gw, true).await;
    assert!(up.wait_for(Duration::from_secs(10), |u| u.cancelled() == 1).await, "the upstream call was never closed");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(8), "ended after {took:?}, long before total (60 s)");
    assert_eq!(gw.post(&chat("chat", false)).await.status(), 200, "the slot was released");
    read_rest(sock).await;
    assert_eq!(cuts(&gw, "client_write_timeout").await, 1.0);
    assert_eq!(cuts(&gw, "total").await, 0.0);
    assert_eq!(gw.metric(r#"spillway_requests_total{cascade="chat",outcome="error"}"#).await, 1.0);
}

#[tokio::test]
async fn a_stream_whose_client_reads_a_little_at_a_time_still_ends_at_total() {
    let up = FakeUpstream::start().await;
    up.push(long_stream());
    let gw = start(&config(&up, "", "3s")).await;
    let started = Instant::now();
    let mut sock = stalled(&gw, true).await;
    // 512 bytes every 50 ms: always some progress, never the whole answer.
    let mut got = 0usize;
    let mut buf = [0u8; 512];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got += n,
            Ok(_) => break,
            Err(_) => panic!("the gateway neither wrote nor closed for 10 s"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = started.elapsed();
    assert!(got > 0, "the client did read part of the answer");
    assert!(took >= Duration::from_millis(2900) && took < Duration::from_secs(7), "ended after {took:?}");
    assert!(up.wait_for(Duration::from_secs(5), |u| u.cancelled() == 1).await);
    assert_eq!(cuts(&gw, "total").await, 1.0);
    assert_eq!(gw.post(&chat("chat", false)).await.status(), 200);
}

#[tokio::test]
async fn a_whole_answer_whose_client_reads_nothing_is_cut_at_the_write_timeout() {
    let up = FakeUpstream::start().await;
    up.push(Reply::text(&"y".repeat(PIECES * PIECE)));
    let gw = start(&config(&up, "  client_write_timeout: 500ms\n", "60s")).await;
    let sock = stalled(&gw, false).await;
    assert!(up.wait_for(Duration::from_secs(10), |u| u.finished() == 1).await);
    // The answer's head reaches the client (peeked, not read): the whole
    // answer was built. The upstream having sent it all is not enough: the
    // gateway may still be reading and checking it.
    let mut head = [0u8; 12];
    let end = Instant::now() + Duration::from_secs(10);
    while tokio::time::timeout_at(end, sock.peek(&mut head)).await.expect("no answer head").unwrap() < head.len() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(&head, b"HTTP/1.1 200");
    // A whole answer holds no slot while it is written.
    assert_eq!(gw.post(&chat("chat", false)).await.status(), 200);
    assert!(cut_once(&gw, "client_write_timeout").await, "the connection was never cut");
    let rest = read_rest(sock).await;
    assert!(rest.len() < PIECES * PIECE, "the client got the whole answer");
    assert_eq!(gw.metric(r#"spillway_requests_total{cascade="chat",outcome="ok"}"#).await, 2.0);
}
