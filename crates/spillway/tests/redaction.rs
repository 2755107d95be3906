//! Upstream error text reaches clients and logs without secrets: fake
//! upstreams echo the `Authorization` header into a 400 body, a 500 message
//! and a stream's error event. The only test in its binary, because it
//! installs the process's log subscriber (a thread-local one misses events
//! whose call sites other tests' threads registered first).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

mod common;

use common::*;
use serde_json::Value;

#[tokio::test]
async fn upstream_error_text_is_redacted_for_clients_and_logs() {
    use test_upstreams::faults::EchoUpstream;
    let logs = Logs::capture("trace");
    let (rejects, fails, streams, midway) = (
        EchoUpstream::start(400).await,
        EchoUpstream::start(500).await,
        EchoUpstream::start(200).await,
        EchoUpstream::start_mid_stream().await,
    );
    let provider = |name: &str, url: String| {
        format!("  {name}:\n    kind: openai\n    base_url: {url}\n    api_key: sk-live-{name}-0123456789\n")
    };
    let yaml = format!(
        "providers:\n{}{}{}{}{FAST_HEALTH}cascades:\n  rejected:\n    models: [r/m]\n  failed:\n    models: [f/m, s/m]\n  \
         midway:\n    models: [m/m]\n",
        provider("r", rejects.base_url()),
        provider("f", fails.base_url()),
        provider("s", streams.base_url()),
        provider("m", midway.base_url()),
    );
    let gw = start(&yaml).await;
    // A 400 goes back as the upstream wrote it, less the key.
    let resp = gw.post(&chat("rejected", false)).await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["code"], "bad_header");
    assert_eq!(body["error"]["param"], "messages");
    assert_eq!(
        body["error"]["message"],
        "rejected headers {authorization: Bearer ***}; the key *** is not allowed here"
    );
    // A 500 message and a stream's error event end up in the 503 list.
    let resp = gw.post(&chat("failed", true)).await;
    assert_eq!(resp.status(), 503);
    let body: Value = resp.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("f/m: upstream_error") && message.contains("s/m:"), "{message}");
    assert!(message.contains("the key *** is not allowed"), "{message}");
    // An error event after the first token: the client already has content,
    // so it ends the stream as an error event of its own, redacted too.
    let resp = gw.post(&chat("midway", true)).await;
    assert_eq!(resp.status(), 200);
    let events = resp.text().await.unwrap();
    assert!(events.contains("Hello"), "the first token went out:\n{events}");
    assert!(events.contains("the key *** is not allowed"), "the error event went out, redacted:\n{events}");
    let logs = logs.text();
    assert!(logs.contains("Bearer ***"), "the attempts were logged:\n{logs}");
    for text in [message, &logs, &body.to_string(), &events] {
        assert!(!text.contains("0123456789"), "a key leaked:\n{text}");
    }
}
