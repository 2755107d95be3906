//! What a gateway user expects of every response (issue 19 §3): request
//! ids (echoed, generated, logged, forwarded upstream, the upstream's own
//! returned), CORS, and the back-off hints of errors — on whole and
//! streamed answers and on every entry point.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;

use common::*;
use serde_json::{json, Value};
use std::sync::Arc;

const X_ID: &str = "x-request-id";

fn yaml(up: &FakeUpstream, emb: &FakeUpstream, extra: &str) -> String {
    format!(
        "{extra}providers:\n{}{}    models: [{{ id: emb, dimensions: 2 }}]\n{FAST_HEALTH}cascades:\n  chat:\n    models: [up/m]\n  vectors:\n    kind: embedding\n    models: [emb/emb]\n",
        openai_provider("up", up),
        openai_provider("emb", emb),
    )
}

async fn post(gw: &TestGateway, path: &str, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut r = client().post(format!("{}{path}", gw.url)).json(body);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.send().await.unwrap()
}

fn vectors() -> Reply {
    Reply::json(
        json!({"object": "list", "model": "emb", "data": [{"object": "embedding", "index": 0, "embedding": [0.6, 0.8]}],
        "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
    )
}

/// One entry point's request: path, body, extra headers.
type Call = (&'static str, Value, Vec<(&'static str, &'static str)>);

/// Every client entry point, whole and streamed.
fn entry_points() -> Vec<Call> {
    let anthropic = vec![("anthropic-version", "2023-06-01")];
    vec![
        ("/v1/chat/completions", chat("chat", false), vec![]),
        ("/v1/chat/completions", chat("chat", true), vec![]),
        ("/v1/responses", json!({"model": "chat", "input": "Hi"}), vec![]),
        ("/v1/responses", json!({"model": "chat", "input": "Hi", "stream": true}), vec![]),
        (
            "/v1/messages",
            json!({"model": "chat", "max_tokens": 20, "messages": [{"role": "user", "content": "Hi"}]}),
            anthropic.clone(),
        ),
        (
            "/v1/messages",
            json!({"model": "chat", "max_tokens": 20, "stream": true, "messages": [{"role": "user", "content": "Hi"}]}),
            anthropic,
        ),
    ]
}

#[tokio::test]
async fn a_client_request_id_is_returned_and_forwarded_upstream_on_every_entry_point() {
    let (up, emb) = (FakeUpstream::start().await, FakeUpstream::start_at("/embeddings").await);
    emb.set_default(vectors());
    let gw = start(&yaml(&up, &emb, "")).await;
    for (i, (path, body, headers)) in entry_points().into_iter().enumerate() {
        if body["stream"] == true {
            up.push(Reply::stream(&["Hel", "lo"]).header("x-request-id", "up-stream"));
        } else {
            up.push(Reply::text("Hello").header("x-request-id", "up-whole"));
        }
        let id = format!("client-id-{i}");
        let mut hs = headers.clone();
        hs.push((X_ID, &id));
        let resp = post(&gw, path, &body, &hs).await;
        assert_eq!(resp.status(), 200, "{path} {body}");
        assert_eq!(header(&resp, X_ID), id, "{path} {body}");
        let upstream = if body["stream"] == true { "up-stream" } else { "up-whole" };
        assert_eq!(header(&resp, "x-spillway-upstream-request-id"), upstream, "{path} {body}");
        let _ = resp.text().await.unwrap();
        assert_eq!(up.request_headers()[i][X_ID], id.as_str(), "forwarded upstream: {path} {body}");
    }
    // Embeddings: the same, on the embeddings call.
    let resp = post(&gw, "/v1/embeddings", &json!({"model": "vectors", "input": "x"}), &[(X_ID, "emb-1")]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, X_ID), "emb-1");
    assert_eq!(emb.request_headers()[0][X_ID], "emb-1");
}

#[tokio::test]
async fn a_request_id_is_made_when_the_client_sends_none_or_an_unusable_one() {
    let (up, emb) = (FakeUpstream::start().await, FakeUpstream::start_at("/embeddings").await);
    let gw = start(&yaml(&up, &emb, "")).await;
    let a = gw.post(&chat("chat", false)).await;
    let b = post(&gw, "/v1/chat/completions", &chat("chat", true), &[(X_ID, "has space")]).await;
    let (ida, idb) = (header(&a, X_ID).to_string(), header(&b, X_ID).to_string());
    assert_eq!((ida.len(), idb.len()), (36, 36), "{ida} {idb}");
    assert!(ida.starts_with("req_") && idb.starts_with("req_"), "{ida} {idb}");
    assert_ne!(ida, idb);
    let _ = b.text().await.unwrap();
    assert_eq!(up.request_headers()[1][X_ID], idb.as_str(), "the made id goes upstream too");
    // Routes outside the cascades: still an id.
    for path in ["/healthz", "/v1/models", "/no/such/route"] {
        assert_eq!(header(&gw.get(path).await, X_ID).len(), 36, "{path}");
    }
}

#[tokio::test]
async fn errors_carry_the_request_id_and_the_attempts_made() {
    let (up, emb) = (FakeUpstream::start().await, FakeUpstream::start_at("/embeddings").await);
    let gw = start(&yaml(&up, &emb, "")).await;
    // Before the runner: no upstream call.
    for (path, body) in [
        ("/v1/chat/completions", chat("nope", false)),
        ("/v1/chat/completions", chat("nope", true)),
        ("/v1/responses", json!({"model": "nope", "input": "x"})),
        ("/v1/embeddings", json!({"model": "nope", "input": "x"})),
        ("/v1/chat/completions", json!({"model": "chat"})),
    ] {
        let resp = post(&gw, path, &body, &[(X_ID, "err-1")]).await;
        assert!(resp.status().is_client_error(), "{path} {body}");
        assert_eq!((header(&resp, X_ID), header(&resp, "x-spillway-attempts")), ("err-1", "0"), "{path} {body}");
    }
    let resp = post(&gw, "/v1/messages", &json!({"model": "chat"}), &[(X_ID, "err-2")]).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(header(&resp, "request-id"), "err-2", "Anthropic's own header names the same id");
    assert_eq!(header(&resp, "x-spillway-attempts"), "0");
    // An unknown route.
    let resp = client().get(format!("{}/v1/nothing", gw.url)).header(X_ID, "err-3").send().await.unwrap();
    assert_eq!(
        (resp.status().as_u16(), header(&resp, X_ID), header(&resp, "x-spillway-attempts")),
        (404, "err-3", "0")
    );
}

#[tokio::test(start_paused = true)]
async fn all_models_failed_says_when_the_soonest_model_is_back_on_every_entry_point() {
    let (up, emb) = (FakeUpstream::start().await, FakeUpstream::start_at("/embeddings").await);
    // 429 with Retry-After 40: the model is dead for 40 s.
    up.set_default(Reply::error(429, "rate_limit_exceeded", "slow down").header("retry-after", "40"));
    emb.set_default(Reply::error(429, "rate_limit_exceeded", "slow down").header("retry-after", "25"));
    let gw = start(&yaml(&up, &emb, "")).await;
    let mut paths = entry_points();
    paths.push(("/v1/embeddings", json!({"model": "vectors", "input": "x"}), vec![]));
    for (i, (path, body, headers)) in paths.into_iter().enumerate() {
        let resp = post(&gw, path, &body, &headers).await;
        assert_eq!(resp.status(), 503, "{path} {body}");
        let retry: u64 = header(&resp, "retry-after").parse().unwrap_or_else(|_| panic!("{path} {body}"));
        let most = if path == "/v1/embeddings" { 25 } else { 40 };
        assert!((1..=most).contains(&retry), "{path} {body}: retry-after {retry}");
        // The first call hit the upstream; later ones found the model dead.
        let calls = if i == 0 || path == "/v1/embeddings" { "1" } else { "0" };
        assert_eq!(header(&resp, "x-spillway-attempts"), calls, "{path} {body}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_sets_retry_after_on_whole_and_streamed_requests() {
    let up = FakeUpstream::start().await;
    let emb = FakeUpstream::start_at("/embeddings").await;
    up.set_default(Reply::error(500, "server_error", "boom"));
    let breaker =
        "health:\n  retries: { max: 0, backoff: 1ms, jitter: 0 }\n  breaker: { consecutive_failures: 1, open_min: 30s, open_for: 30s }\n";
    let cfg = yaml(&up, &emb, "").replace(FAST_HEALTH, breaker);
    let gw = start(&cfg).await;
    for stream in [false, true] {
        let resp = gw.post(&chat("chat", stream)).await;
        assert_eq!(resp.status(), 503);
        let retry: u64 = header(&resp, "retry-after").parse().unwrap();
        assert!((20..=30).contains(&retry), "stream {stream}: the breaker opened for 30 s, got {retry}");
    }
}

#[tokio::test]
async fn every_log_line_about_a_request_names_its_id_whole_and_streamed() {
    // Other tests log into the global subscriber too, so this one's models
    // have names of their own.
    let logs = Logs::capture("spillway=debug");
    let (up, emb) = (FakeUpstream::start().await, FakeUpstream::start_at("/embeddings").await);
    let cfg = yaml(&up, &emb, "")
        .replace("    models: [up/m]\n", "    models: [logged/m, logged/n]\n")
        .replace("  up:\n", "  logged:\n");
    let gw = start(&cfg).await;
    for (stream, id) in [(false, "log-whole"), (true, "log-stream")] {
        up.push(Reply::error(500, "server_error", "boom"));
        up.push(if stream { Reply::stream(&["a", "b"]).cut_after(1) } else { Reply::text("fine") });
        let resp = post(&gw, "/v1/chat/completions", &chat("chat", stream), &[(X_ID, id)]).await;
        let _ = resp.text().await;
    }
    let text = logs.text();
    let about: Vec<&str> = text.lines().filter(|l| l.contains("logged/")).collect();
    assert!(about.len() >= 3, "the failures and the cut stream are logged:\n{text}");
    for line in &about {
        assert!(line.contains("request_id=log-whole") || line.contains("request_id=log-stream"), "{line}");
    }
    assert!(
        about.iter().any(|l| l.contains("request_id=log-stream") && l.contains("logged/n")),
        "the stream's end:\n{text}"
    );
}

#[tokio::test]
async fn a_handoff_item_keeps_the_request_id() {
    let up = FakeUpstream::start().await;
    up.set_default(Reply::error(500, "server_error", "boom"));
    let dir = std::env::temp_dir().join(format!("spillway-conv-{}", std::process::id()));
    let cfg = format!(
        "server:\n  admin_token: adm\nstate:\n  data_dir: {}\nproviders:\n{}{FAST_HEALTH}cascades:\n  chat:\n    models: [up/m]\n    handoff: true\n",
        dir.display(),
        openai_provider("up", &up)
    );
    let gw = start(&cfg).await;
    let resp = post(&gw, "/v1/chat/completions", &chat("chat", false), &[(X_ID, "ho-req")]).await;
    let hid = header(&resp, "x-spillway-handoff-id").to_string();
    assert!(!hid.is_empty());
    let list = gw.admin_get("/admin/handoff?status=open", "adm").await;
    let item = list["data"].as_array().unwrap().iter().find(|i| i["id"] == hid.as_str()).unwrap().clone();
    assert_eq!(item["request_id"], "ho-req");
    let _ = std::fs::remove_dir_all(dir);
}

const CORS: &str = "server:\n  cors:\n    allow_origins: [\"https://app.example.com\"]\n    max_age: 5m\n";

async fn options(gw: &TestGateway, path: &str, origin: &str) -> reqwest::Response {
    client()
        .request(reqwest::Method::OPTIONS, format!("{}{path}", gw.url))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization, content-type")
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn cors_preflight_is_answered_for_allowed_origins_only() {
    let (up, emb) = (FakeUpstream::start().await, FakeUpstream::start_at("/embeddings").await);
    let gw = start(&yaml(&up, &emb, CORS)).await;
    for path in ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/embeddings", "/v1/models"] {
        let resp = options(&gw, path, "https://app.example.com").await;
        assert_eq!(resp.status(), 204, "{path}");
        assert_eq!(header(&resp, "access-control-allow-origin"), "https://app.example.com");
        assert!(header(&resp, "access-control-allow-methods").contains("POST"));
        assert!(header(&resp, "access-control-allow-headers").contains("authorization"));
        assert!(header(&resp, "access-control-allow-headers").contains("x-request-id"));
        assert_eq!(header(&resp, "access-control-max-age"), "300");
    }
    let other = options(&gw, "/v1/chat/completions", "https://evil.example.com").await;
    assert_eq!(other.status(), 204);
    assert_eq!(header(&other, "access-control-allow-origin"), "", "no allowance for another origin");
    assert_eq!(up.calls(), 0, "a preflight never reaches a model");
    // The real requests, whole and streamed: the origin allowed, the gateway's headers readable.
    for stream in [false, true] {
        if stream {
            up.push(Reply::stream(&["a", "b"]));
        }
        let resp =
            post(&gw, "/v1/chat/completions", &chat("chat", stream), &[("origin", "https://app.example.com")]).await;
        assert_eq!(header(&resp, "access-control-allow-origin"), "https://app.example.com");
        let exposed = header(&resp, "access-control-expose-headers");
        assert!(exposed.contains("x-request-id") && exposed.contains("x-spillway-model"), "{exposed}");
        let _ = resp.text().await;
    }
    // Errors too (a browser must be able to read them).
    let resp = post(&gw, "/v1/chat/completions", &chat("nope", false), &[("origin", "https://app.example.com")]).await;
    assert_eq!(
        (resp.status().as_u16(), header(&resp, "access-control-allow-origin")),
        (404, "https://app.example.com")
    );
    let resp = post(&gw, "/v1/chat/completions", &chat("chat", false), &[("origin", "https://evil.example.com")]).await;
    assert_eq!(header(&resp, "access-control-allow-origin"), "");
}

/// What openai-node and the Anthropic TypeScript SDK ask for in a browser
/// (`dangerouslyAllowBrowser`), and a Stainless header yet to be invented.
const SDK_HEADERS: &str = "authorization, content-type, accept, x-stainless-lang, x-stainless-package-version, \
x-stainless-os, x-stainless-arch, x-stainless-runtime, x-stainless-runtime-version, x-stainless-retry-count, \
x-stainless-timeout, x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access, anthropic-beta, \
openai-organization, openai-project, user-agent, x-spillway-user, X-Stainless-Brand-New";

#[tokio::test]
async fn cors_defaults_cover_what_the_browser_sdks_send() {
    let (up, emb) = (FakeUpstream::start().await, FakeUpstream::start_at("/embeddings").await);
    let gw = start(&yaml(&up, &emb, CORS)).await;
    for (path, method) in
        [("/v1/chat/completions", "POST"), ("/v1/messages", "POST"), ("/v1/responses/resp_1", "DELETE")]
    {
        let resp = client()
            .request(reqwest::Method::OPTIONS, format!("{}{path}", gw.url))
            .header("origin", "https://app.example.com")
            .header("access-control-request-method", method)
            .header("access-control-request-headers", SDK_HEADERS)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 204);
        assert!(header(&resp, "access-control-allow-methods").contains(method), "{path}");
        let allowed: Vec<&str> = header(&resp, "access-control-allow-headers").split(", ").collect();
        for asked in SDK_HEADERS.split(", ") {
            assert!(allowed.contains(&asked.to_ascii_lowercase().as_str()), "{asked} not in {allowed:?}");
        }
        assert!(!allowed.contains(&"x-stainless-*"), "the prefix itself is not sent: {allowed:?}");
    }
    // A configured list keeps to itself, its own prefixes included.
    let own = "server:\n  cors:\n    allow_origins: [\"https://app.example.com\"]\n    allow_headers: [\"authorization\", \"x-app-*\"]\n";
    let gw = start(&yaml(&up, &emb, own)).await;
    let resp = client()
        .request(reqwest::Method::OPTIONS, format!("{}/v1/chat/completions", gw.url))
        .header("origin", "https://app.example.com")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization, x-app-tenant, x-stainless-os")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&resp, "access-control-allow-headers"), "authorization, x-app-tenant");
}

#[tokio::test]
async fn cors_is_off_by_default() {
    let (up, emb) = (FakeUpstream::start().await, FakeUpstream::start_at("/embeddings").await);
    let gw = start(&yaml(&up, &emb, "")).await;
    let resp = options(&gw, "/v1/chat/completions", "https://app.example.com").await;
    assert_ne!(resp.status(), 204);
    assert_eq!(header(&resp, "access-control-allow-origin"), "");
    let resp = post(&gw, "/v1/chat/completions", &chat("chat", false), &[("origin", "https://app.example.com")]).await;
    assert_eq!(header(&resp, "access-control-allow-origin"), "");
}

#[tokio::test]
async fn cors_any_origin_and_config_errors() {
    let (up, emb) = (FakeUpstream::start().await, FakeUpstream::start_at("/embeddings").await);
    let any = "server:\n  cors:\n    allow_origins: [\"*\"]\n    allow_headers: [\"*\"]\n";
    let gw = start(&yaml(&up, &emb, any)).await;
    let resp = options(&gw, "/v1/responses", "https://anything.example").await;
    assert_eq!(resp.status(), 204);
    assert_eq!(header(&resp, "access-control-allow-origin"), "*");
    assert_eq!(header(&resp, "access-control-allow-headers"), "authorization, content-type");
    let bad = "server:\n  cors:\n    allow_origins: [\"app.example.com\", \"https://x.example/path\"]\n    allow_headers: [\"bad header\"]\n    max_age: soon\n";
    let err = spillway::config::load_str(&yaml(&up, &emb, bad), None, &|_| None).unwrap_err().to_string();
    for path in [
        "server.cors.allow_origins[0]",
        "server.cors.allow_origins[1]",
        "server.cors.allow_headers[0]",
        "server.cors.max_age",
    ] {
        assert!(err.contains(path), "{path} in:\n{err}");
    }
}

#[tokio::test]
async fn in_flight_attempts_are_counted_per_cascade_and_provider_whole_and_streamed() {
    let (up, emb) = (FakeUpstream::start().await, FakeUpstream::start_at("/embeddings").await);
    let gw = Arc::new(start(&yaml(&up, &emb, "")).await);
    let series = "spillway_in_flight{cascade=\"chat\",provider=\"up\"}";
    for stream in [false, true] {
        // Whole: the body never ends; streamed: it stops after its first token.
        up.push(if stream { Reply::stream(&["a", "b"]).hang_after(1) } else { Reply::hang() });
        let g = gw.clone();
        let request = tokio::spawn(async move {
            let resp = g.post(&chat("chat", stream)).await;
            resp.text().await
        });
        let mut seen = 0.0;
        for _ in 0..400 {
            seen = gw.metric(series).await;
            if seen == 1.0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(seen, 1.0, "stream {stream}: one attempt in flight");
        request.abort();
        let mut after = 1.0;
        for _ in 0..400 {
            after = gw.metric(series).await;
            if after == 0.0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(after, 0.0, "stream {stream}: the client left, the attempt ended");
    }
    let text = gw.get("/metrics").await.text().await.unwrap();
    assert!(text.contains("# TYPE spillway_in_flight gauge"), "{text}");
    assert!(text.contains("spillway_build_info{"), "{text}");
    assert!(text.contains("process_resident_memory_bytes "), "{text}");
}
