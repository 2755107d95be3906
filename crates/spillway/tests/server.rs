//! The server's own rules: client errors in OpenAI shape, keys, limits,
//! slow clients, graceful shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn config(up: &FakeUpstream, server: &str) -> String {
    format!(
        "server:\n{server}\nproviders:\n{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m]\n",
        openai_provider("a", up)
    )
}

async fn error_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap();
    assert_valid("ErrorResponse", &body);
    (status, body)
}

#[tokio::test]
async fn bad_requests_get_openai_errors_naming_the_field() {
    let up = FakeUpstream::start().await;
    let gw = start(&config(&up, "  listen: 127.0.0.1:0")).await;
    let raw = |body: &'static str| {
        let url = format!("{}/v1/chat/completions", gw.url);
        async move { client().post(url).header("content-type", "application/json").body(body).send().await.unwrap() }
    };
    let (status, body) = error_of(raw("{not json").await).await;
    assert_eq!((status, body["error"]["type"].as_str()), (400, Some("invalid_request_error")));
    for (body, param) in [
        (json!({"messages": [{"role": "user", "content": "x"}]}), "model"),
        (json!({"model": "chat"}), "messages"),
        (json!({"model": "chat", "messages": [{"role": "user"}]}), "messages[0].content"),
        (json!({"model": "chat", "messages": [{"role": "user", "content": "x"}], "stream": 1}), "stream"),
        (json!({"model": "chat", "messages": [{"role": "user", "content": "x"}], "max_tokens": "ten"}), "max_tokens"),
    ] {
        let (status, err) = error_of(gw.post(&body).await).await;
        assert_eq!(status, 400);
        assert_eq!(err["error"]["param"], param, "{body}");
    }
    let (status, err) = error_of(gw.post(&chat("no-such-cascade", false)).await).await;
    assert_eq!(status, 404);
    assert_eq!(err["error"]["code"], "model_not_found");
    let (status, err) = error_of(gw.post(&chat("nope/model", false)).await).await;
    assert_eq!((status, err["error"]["code"].as_str()), (404, Some("model_not_found")));
    let (status, _) = error_of(gw.get("/v2/whatever").await).await;
    assert_eq!(status, 404);
    assert_eq!(up.calls(), 0, "no bad request reached an upstream");
}

#[tokio::test]
async fn body_over_the_limit_is_413() {
    let up = FakeUpstream::start().await;
    let gw = start(&config(&up, "  max_body_bytes: 1KiB")).await;
    let mut body = chat("chat", false);
    body["messages"][0]["content"] = Value::String("x".repeat(2000));
    let (status, err) = error_of(gw.post(&body).await).await;
    assert_eq!(status, 413);
    assert_eq!(err["error"]["code"], "request_too_large");
    // Without a Content-Length (chunked), the limit still holds.
    let chunks = futures_util::stream::iter(vec![Ok::<_, std::io::Error>(serde_json::to_vec(&body).unwrap())]);
    let resp = client()
        .post(format!("{}/v1/chat/completions", gw.url))
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    assert_eq!(up.calls(), 0);
}

#[tokio::test]
async fn client_keys_are_enforced() {
    let up = FakeUpstream::start().await;
    let gw = start(&config(&up, "  api_keys: [k-one, k-two]")).await;
    let (status, err) = error_of(gw.post(&chat("chat", false)).await).await;
    assert_eq!((status, err["error"]["code"].as_str()), (401, Some("invalid_api_key")));
    let url = format!("{}/v1/chat/completions", gw.url);
    let resp = client().post(&url).bearer_auth("wrong").json(&chat("chat", false)).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    let resp = client().post(&url).bearer_auth("k-two").json(&chat("chat", false)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    // The client's key is never forwarded upstream.
    assert_eq!(up.request_headers()[0]["authorization"], "Bearer test-key-a");
    assert_eq!(gw.get("/v1/models").await.status(), 401);
}

#[tokio::test]
async fn concurrency_limit_answers_503_with_retry_after() {
    let up = FakeUpstream::start().await;
    up.push(Reply::text("slow").delay(Duration::from_millis(800)));
    let gw = start(&config(&up, "  max_concurrent_requests: 1")).await;
    let url = format!("{}/v1/chat/completions", gw.url);
    let first =
        tokio::spawn(async move { client().post(url).json(&chat("chat", false)).send().await.unwrap().status() });
    assert!(up.wait_for(Duration::from_secs(2), |u| u.calls() == 1).await);
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(header(&resp, "retry-after"), "1");
    assert_eq!(first.await.unwrap(), 200);
    // The slot is free again.
    assert_eq!(gw.post(&chat("chat", false)).await.status(), 200);
}

#[tokio::test]
async fn slow_bodies_hold_no_slot_and_get_408() {
    let up = FakeUpstream::start().await;
    up.set_default(Reply::text("served"));
    let gw = start(&config(&up, "  max_concurrent_requests: 2\n  body_read_timeout: 400ms")).await;
    let addr = gw.url.trim_start_matches("http://").to_string();
    // Five clients send their headers and a byte of a 100-byte body, then stall.
    let mut slow = Vec::new();
    for _ in 0..5 {
        let mut sock = tokio::net::TcpStream::connect(&addr).await.unwrap();
        sock.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
            .await
            .unwrap();
        slow.push(sock);
    }
    // Everyone else is still served: the stalled bodies hold no slot.
    for _ in 0..3 {
        assert_eq!(gw.post(&chat("chat", false)).await.status(), 200);
    }
    // And each stalled client gets a 408 once its body is overdue.
    for mut sock in slow {
        let mut buf = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), sock.read_to_end(&mut buf)).await;
        assert!(read.is_ok(), "the stalled body was never answered");
        let text = String::from_utf8_lossy(&buf);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        assert!(text.contains("request_timeout"), "{text}");
    }
}

#[tokio::test]
async fn slow_clients_are_dropped_by_the_header_timeout() {
    let up = FakeUpstream::start().await;
    let gw = start(&config(&up, "  header_read_timeout: 200ms")).await;
    let addr = gw.url.trim_start_matches("http://");
    let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
    sock.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    // Never finish the headers: the server must close the connection.
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), sock.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the connection stayed open past the header timeout");
}

#[tokio::test]
async fn graceful_shutdown_lets_requests_in_flight_finish() {
    let up = FakeUpstream::start().await;
    up.push(Reply::text("finished anyway").delay(Duration::from_millis(500)));
    let mut gw = start(&config(&up, "  shutdown_grace: 5s")).await;
    let url = format!("{}/v1/chat/completions", gw.url);
    let in_flight = tokio::spawn(async move {
        let r = client().post(url).json(&chat("chat", false)).send().await.unwrap();
        (r.status(), r.text().await.unwrap())
    });
    assert!(up.wait_for(Duration::from_secs(2), |u| u.calls() == 1).await);
    gw.shutdown.cancel();
    let (status, text) = in_flight.await.unwrap();
    assert_eq!(status, 200);
    assert!(text.contains("finished anyway"));
    gw.stopped(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn new_connections_are_refused_after_shutdown() {
    let up = FakeUpstream::start().await;
    let mut gw = start(&config(&up, "  shutdown_grace: 1s")).await;
    let addr = gw.url.trim_start_matches("http://").to_string();
    gw.shutdown.cancel();
    gw.stopped(Duration::from_secs(5)).await.unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn several_serving_threads_answer_and_drain_on_shutdown() {
    let up = FakeUpstream::start().await;
    let mut gw = start_workers(&config(&up, "  shutdown_grace: 5s"), 3).await;
    let url = format!("{}/v1/chat/completions", gw.url);
    // Each request on its own connection, all at once: they spread over the threads.
    let answers = futures_util::future::join_all((0..24).map(|_| {
        let url = url.clone();
        async move { client().post(url).json(&chat("chat", false)).send().await.unwrap().status() }
    }))
    .await;
    assert!(answers.iter().all(|s| *s == 200), "{answers:?}");
    assert_eq!(up.calls(), 24);
    up.push(Reply::text("finished anyway").delay(Duration::from_millis(500)));
    let in_flight = tokio::spawn(async move {
        let r = client().post(url).json(&chat("chat", false)).send().await.unwrap();
        (r.status(), r.text().await.unwrap())
    });
    assert!(up.wait_for(Duration::from_secs(2), |u| u.calls() == 25).await);
    gw.shutdown.cancel();
    let (status, text) = in_flight.await.unwrap();
    assert_eq!(status, 200);
    assert!(text.contains("finished anyway"));
    gw.stopped(Duration::from_secs(5)).await.unwrap();
}

/// A serving thread that holds more connections than its share hands the
/// ones it accepts to the thread that holds the fewest, which serves them
/// (whole and streamed); each thread's open connections are a gauge, back
/// down as they close.
#[tokio::test]
async fn a_thread_over_its_share_hands_new_connections_to_the_least_loaded() {
    let up = FakeUpstream::start().await;
    let gw = start_workers(&config(&up, "  shutdown_grace: 5s"), 2).await;
    let gauge = |worker: &str| {
        gw.state.metrics.connections.get_or_create(&spillway::metrics::WorkerLabels { worker: worker.into() }).clone()
    };
    // Thread 1 looks busy: a hundred connections it does not have.
    gauge("1").set(100);
    let url = format!("{}/v1/chat/completions", gw.url);
    let mut clients = Vec::new();
    for i in 0..10 {
        // A client each: a connection each, kept open.
        up.push(if i % 2 == 1 { Reply::stream(&["Hel", "lo"]) } else { Reply::text("Hello") });
        let c = client();
        let resp = c.post(&url).json(&chat("chat", i % 2 == 1)).send().await.unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        assert_eq!(status, 200, "request {i}: {text}");
        if i % 2 == 1 {
            assert!(text.contains("\"Hel\"") && text.trim_end().ends_with("data: [DONE]"), "{text}");
        } else {
            let body: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(body["choices"][0]["message"]["content"], "Hello", "{text}");
        }
        clients.push(c);
    }
    assert_eq!((gauge("1").get(), gauge("2").get()), (100, 10), "every new connection went to thread 2");
    drop(clients);
    let closed = async {
        while gauge("2").get() != 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), closed).await.expect("the closed connections were counted out");
    assert_eq!(gauge("1").get(), 100);
    let text = gw.get("/metrics").await.text().await.unwrap();
    assert!(text.contains("spillway_server_connections{worker=\"2\"} 1\n"), "{text}");
}

/// `/metrics` speaks the Prometheus text format 0.0.4 by default — every
/// sample under a `# TYPE` of its own name (a counter's `_total`, a
/// histogram's `_bucket`/`_sum`/`_count`) — and OpenMetrics to a scraper
/// that asks for it.
#[tokio::test]
async fn metrics_are_prometheus_text_or_openmetrics_on_request() {
    let up = FakeUpstream::start().await;
    let gw = start(&format!("providers:\n{}cascades:\n  chat:\n    models: [u/m]\n", openai_provider("u", &up))).await;
    assert_eq!(gw.post(&chat("chat", false)).await.status(), 200);
    let resp = gw.get("/metrics").await;
    assert_eq!(header(&resp, "content-type"), "text/plain; version=0.0.4; charset=utf-8");
    let text = resp.text().await.unwrap();
    assert!(!text.contains("# EOF") && !text.contains("# UNIT"), "{text}");
    assert!(text.contains("# TYPE spillway_requests_total counter\n"), "{text}");
    let mut types = std::collections::HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            types.insert(name.to_string(), kind.to_string());
        } else if !line.starts_with('#') && !line.is_empty() {
            let name = line.split(['{', ' ']).next().unwrap();
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s).filter(|base| types.get(*base).is_some_and(|k| k == "histogram")))
                .unwrap_or(name);
            assert!(types.contains_key(family), "`{name}` has no # TYPE before it");
        }
    }
    let resp = client()
        .get(format!("{}/metrics", gw.url))
        .header("accept", "application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5")
        .send()
        .await
        .unwrap();
    assert!(header(&resp, "content-type").starts_with("application/openmetrics-text"));
    let text = resp.text().await.unwrap();
    assert!(text.trim_end().ends_with("# EOF") && text.contains("# TYPE spillway_requests counter"), "{text}");
}
