//! A minimal, fast OpenAI-compatible upstream for benchmarks.
//!
//! `fake-upstream [--port P] [--delay-ms D] [--chunks N] [--chunk-interval-ms I] [--content-bytes B] [--first-alone 1] [--status S] [--hang 1]`
//! answers every POST with a fixed chat completion (after D ms), or with an
//! SSE stream of N content chunks I ms apart when the body asks for
//! `"stream":true` (each chunk's content padded to B bytes with `--content-bytes B`,
//! so a bench can say how much text an event carries; with `--first-alone 1` the
//! first event is written out before the rest are made, as a model sends its
//! first token, so a time to first byte measures the first event and not the
//! whole unpaced stream hyper would gather into its first write); with `--status S` (S ≠ 200) it answers that status with
//! an OpenAI error body instead, and with `--hang 1` it never answers (an
//! outage drill's dead primary). It prints `listening on 127.0.0.1:PORT` and runs until
//! killed. Plain hyper, so the baseline it gives is as cheap as it gets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // a bench tool

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::time::Duration;

const COMPLETION: &str = r#"{"id":"chatcmpl-bench","object":"chat.completion","created":1760000000,"model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the benchmark upstream.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":6,"total_tokens":15}}"#;

#[derive(Clone, Copy)]
struct Opts {
    delay: Duration,
    chunks: usize,
    interval: Duration,
    /// Pad each content chunk's text to this many bytes (0: as it is).
    content_bytes: usize,
    /// Write the first event out before making the rest.
    first_alone: bool,
    status: u16,
    hang: bool,
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn handle(req: Request<hyper::body::Incoming>, o: Opts) -> Result<Response<Body>, Infallible> {
    let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let stream = body.windows(13).any(|w| w == b"\"stream\":true");
    if o.hang {
        std::future::pending::<()>().await;
    }
    if !o.delay.is_zero() {
        tokio::time::sleep(o.delay).await;
    }
    if o.status != 200 {
        let body =
            r#"{"error":{"message":"injected failure","type":"server_error","param":null,"code":"bad_gateway"}}"#;
        let resp = Response::builder()
            .status(o.status)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(body.as_bytes())).boxed())
            .unwrap();
        return Ok(resp);
    }
    if !stream {
        let resp = Response::builder()
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(COMPLETION.as_bytes())).boxed())
            .unwrap();
        return Ok(resp);
    }
    let chunks = o.chunks;
    let interval = o.interval;
    let width = o.content_bytes;
    let first_alone = o.first_alone;
    let frames = futures_util::stream::unfold(0usize, move |i| async move {
        let text = if i == 0 {
            r#"data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"bench","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}"#.to_string() + "\n\n"
        } else if i <= chunks {
            if i == 1 && first_alone {
                // Pending once: hyper writes what it has (the first event).
                tokio::task::yield_now().await;
            }
            if !interval.is_zero() {
                tokio::time::sleep(interval).await;
            }
            let word = format!(" word{i}");
            format!(
                r#"data: {{"id":"c","object":"chat.completion.chunk","created":1,"model":"bench","choices":[{{"index":0,"delta":{{"content":"{word:.<width$}"}},"finish_reason":null}}]}}"#
            ) + "\n\n"
        } else if i == chunks + 1 {
            r#"data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"bench","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#.to_string() + "\n\ndata: [DONE]\n\n"
        } else {
            return None;
        };
        Some((Ok::<_, Infallible>(Frame::data(Bytes::from(text))), i + 1))
    });
    let resp = Response::builder()
        .header("content-type", "text/event-stream")
        .body(BodyExt::boxed(StreamBody::new(frames)))
        .unwrap();
    Ok(resp)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: u64| -> u64 {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let opts = Opts {
        delay: Duration::from_millis(arg("--delay-ms", 0)),
        chunks: arg("--chunks", 5) as usize,
        interval: Duration::from_millis(arg("--chunk-interval-ms", 0)),
        content_bytes: arg("--content-bytes", 0) as usize,
        first_alone: arg("--first-alone", 0) == 1,
        status: arg("--status", 200) as u16,
        hang: arg("--hang", 0) == 1,
    };
    let listener = tokio::net::TcpListener::from_std(test_upstreams::listen(arg("--port", 0) as u16).unwrap()).unwrap();
    println!("listening on {}", listener.local_addr().unwrap());
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| handle(req, opts));
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}
