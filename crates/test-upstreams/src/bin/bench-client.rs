//! Benchmark client for what `wrk` cannot measure.
//!
//! - `bench-client ttfb URL N MODEL`: N sequential streaming requests on one
//!   keep-alive connection; prints the median and p99 time to the first
//!   body byte, in microseconds.
//! - `bench-client whole URL N MODEL`: N sequential whole (`"stream": false`)
//!   requests on one keep-alive connection; prints the median and p99 time
//!   to the whole answer, in microseconds.
//! - `bench-client hold URL N SECONDS MODEL`: opens N concurrent streaming
//!   requests, reads their first byte, holds them open for SECONDS, prints
//!   how many were open, then exits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // a bench tool

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::time::{Duration, Instant};

async fn connect(addr: &str) -> hyper::client::conn::http1::SendRequest<Full<Bytes>> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    sender
}

fn request(url: &str, model: &str, stream: bool) -> Request<Full<Bytes>> {
    let body = format!(r#"{{"model":"{model}","stream":{stream},"messages":[{{"role":"user","content":"Hello?"}}]}}"#);
    Request::post(url)
        .header("content-type", "application/json")
        .header("host", "bench")
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}

fn addr_of(url: &str) -> String {
    url.trim_start_matches("http://").split('/').next().unwrap().to_string()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("");
    let url = args.get(2).cloned().unwrap_or_default();
    let n: usize = args.get(3).and_then(|v| v.parse().ok()).unwrap_or(1000);
    match mode {
        "ttfb" | "whole" => {
            let model = args.get(4).cloned().unwrap_or_else(|| "bench".into());
            let whole = mode == "whole";
            let mut sender = connect(&addr_of(&url)).await;
            let mut samples = Vec::with_capacity(n);
            for i in 0..n + n / 10 {
                // Reconnect if the server closed the keep-alive connection.
                if sender.ready().await.is_err() {
                    sender = connect(&addr_of(&url)).await;
                }
                let started = Instant::now();
                let resp = sender.send_request(request(&url, &model, !whole)).await.unwrap();
                assert!(resp.status().is_success(), "{}", resp.status());
                let mut body = resp.into_body();
                let first = body.frame().await;
                let mut took = started.elapsed();
                assert!(first.is_some());
                while body.frame().await.is_some() {}
                if whole {
                    took = started.elapsed();
                }
                if i >= n / 10 {
                    samples.push(took.as_micros() as u64); // the first 10% warm up
                }
            }
            samples.sort_unstable();
            let median = samples[samples.len() / 2];
            let p99 = samples[samples.len() * 99 / 100];
            println!("{mode}_us median={median} p99={p99} n={}", samples.len());
        }
        "hold" => {
            let secs: u64 = args.get(4).and_then(|v| v.parse().ok()).unwrap_or(5);
            let model = args.get(5).cloned().unwrap_or_else(|| "bench".into());
            let mut tasks = Vec::new();
            for _ in 0..n {
                let url = url.clone();
                let model = model.clone();
                tasks.push(tokio::spawn(async move {
                    let mut sender = connect(&addr_of(&url)).await;
                    let resp = sender.send_request(request(&url, &model, true)).await.unwrap();
                    let mut body = resp.into_body();
                    let first = body.frame().await.is_some();
                    tokio::time::sleep(Duration::from_secs(secs)).await;
                    drop(body);
                    first
                }));
            }
            let mut open = 0;
            for t in tasks {
                if t.await.unwrap_or(false) {
                    open += 1;
                }
            }
            println!("held {open} streams for {secs}s");
        }
        _ => {
            eprintln!("usage: bench-client ttfb|whole URL N MODEL | bench-client hold URL N SECONDS MODEL");
            std::process::exit(2);
        }
    }
}
