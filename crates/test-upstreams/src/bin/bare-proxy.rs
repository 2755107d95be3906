//! The floor for `bench/overhead.sh`: the least a JSON-rewriting proxy can
//! do on this machine, measured in the same run as Spillway.
//!
//! `bare-proxy --port P --upstream PORT` answers every POST by parsing the
//! JSON body, setting `model`, sending it to `127.0.0.1:PORT/v1/chat/completions`
//! over a kept-alive connection, parsing the answer, setting its `model`
//! and returning it. No validation, no cascade, no metrics, no timeouts.
//! It is built like Spillway's serving path (one single-threaded event loop
//! per CPU on a shared listening socket, hyper on both sides, an idle
//! connection list per thread), so the difference between the two is the
//! gateway's own work.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // a bench tool

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::cell::RefCell;
use std::convert::Infallible;

thread_local! {
    static IDLE: RefCell<Vec<SendRequest<Full<Bytes>>>> = const { RefCell::new(Vec::new()) };
}

async fn connection(upstream: u16) -> SendRequest<Full<Bytes>> {
    if let Some(mut sender) = IDLE.with(|idle| idle.borrow_mut().pop()) {
        if sender.ready().await.is_ok() {
            return sender;
        }
    }
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::task::spawn_local(conn);
    sender
}

fn rewrite(bytes: &[u8], model: &str) -> Bytes {
    let mut v: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    if let Some(obj) = v.as_object_mut() {
        obj.insert("model".into(), Value::String(model.into()));
    }
    serde_json::to_vec(&v).unwrap().into()
}

async fn handle(req: Request<hyper::body::Incoming>, upstream: u16) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let out = Request::post("/v1/chat/completions")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(Full::new(rewrite(&body, "bench")))
        .unwrap();
    let mut sender = connection(upstream).await;
    let resp = sender.send_request(out).await.unwrap();
    let answer = resp.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    IDLE.with(|idle| idle.borrow_mut().push(sender));
    let resp = Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(rewrite(&answer, "bare/bench")))
        .unwrap();
    Ok(resp)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| -> u16 {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    let upstream = arg("--upstream");
    let listener = test_upstreams::listen(arg("--port")).unwrap();
    println!("listening on {}", listener.local_addr().unwrap());
    let threads: Vec<_> = (0..std::thread::available_parallelism().map_or(1, |n| n.get()))
        .map(|_| {
            let socket = listener.try_clone().unwrap();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                let local = tokio::task::LocalSet::new();
                local.block_on(&rt, async move {
                    let listener = tokio::net::TcpListener::from_std(socket).unwrap();
                    loop {
                        let Ok((stream, _)) = listener.accept().await else { continue };
                        let _ = stream.set_nodelay(true);
                        tokio::task::spawn_local(async move {
                            let svc = hyper::service::service_fn(move |req| handle(req, upstream));
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), svc)
                                .await;
                        });
                    }
                });
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}
