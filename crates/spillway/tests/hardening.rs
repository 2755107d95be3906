//! Bad input from clients and upstreams (the "Hardening" issue): what a
//! hostile model id, event stream or error body can and cannot do.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

mod common;

use common::*;
use serde_json::Value;

fn one_provider(up: &FakeUpstream) -> String {
    format!("providers:\n{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m]\n", openai_provider("a", up))
}

/// Every line of a page is a comment the formats define or a sample the
/// load monitor's parser reads, and only `spillway_*` series exist.
fn assert_well_formed(page: &str) {
    for line in page.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let kind = rest.split(' ').next().unwrap_or("");
            assert!(["HELP", "TYPE", "UNIT", "EOF"].contains(&kind), "stray comment: {line:?}");
            continue;
        }
        for s in spillway::load::prometheus::parse(line).unwrap_or_else(|e| panic!("{e}: {line:?}")) {
            assert!(s.name.starts_with("spillway_"), "forged series: {line:?}");
        }
    }
}

#[tokio::test]
async fn a_model_id_cannot_write_lines_into_metrics() {
    let up = FakeUpstream::start().await;
    let gw = start(&one_provider(&up)).await;
    // A newline in `model` is refused before anything else happens.
    let resp = gw.post(&chat("a/x\"} 1\nforged_series 1", false)).await;
    assert_eq!(resp.status(), 400);
    let err: Value = resp.json().await.unwrap();
    assert_valid("ErrorResponse", &err);
    assert_eq!(err["error"]["param"], "model");
    assert_eq!(up.calls(), 0);
    // Quotes and braces are a legal model id; they reach the labels escaped.
    let sneaky = "x\"} 1 forged_series{a=\"\\";
    assert_eq!(gw.post(&chat(&format!("a/{sneaky}"), false)).await.status(), 200);
    let text = gw.get("/metrics").await.text().await.unwrap();
    let openmetrics = client()
        .get(format!("{}/metrics", gw.url))
        .header("accept", "application/openmetrics-text")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for page in [&text, &openmetrics] {
        assert_well_formed(page);
        // The id reads back as it was sent, on the series that counted it.
        let served = spillway::load::prometheus::parse(page)
            .unwrap()
            .into_iter()
            .find(|s| {
                s.name == "spillway_attempts_total"
                    && s.label("model") == Some(sneaky)
                    && s.label("result") == Some("ok")
            })
            .unwrap_or_else(|| panic!("no series of the direct model:\n{page}"));
        assert_eq!(served.value, 1.0, "{page}");
    }
}

#[tokio::test]
async fn an_event_that_never_ends_fails_the_attempt_as_broken_body() {
    let bad = FakeUpstream::start().await;
    // 9 MiB of `data:` lines without a blank line: over the 8 MiB cap.
    bad.push(test_upstreams::faults::endless_event(64 * 1024, 144));
    let good = FakeUpstream::start().await;
    good.push(Reply::stream(&["ok"]));
    let yaml = format!(
        "providers:\n{}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, b/m]\n",
        openai_provider("a", &bad),
        openai_provider("b", &good)
    );
    // Generous deadlines: the attempt must fail for its size, not for time
    // (a debug build on a busy machine reads 8 MiB slowly).
    let yaml = yaml.replace("first_token: 3s, idle: 3s, total: 10s", "first_token: 60s, idle: 60s, total: 120s");
    let gw = start(&yaml).await;
    let resp = gw.post(&chat("chat", true)).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    assert_eq!(header(&resp, "x-spillway-model"), "b/m");
    assert_eq!(streamed_text(&sse_events(resp).await), "ok");
    let text = gw.get("/metrics").await.text().await.unwrap();
    assert!(
        text.contains(
            r#"spillway_attempt_failures_total{cascade="chat",provider="a",model="m",reason="broken_body"} 1"#
        ),
        "{text}"
    );
}

/// Collects the log lines written while it is the default subscriber.
#[derive(Clone, Default)]
struct Logs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test]
async fn upstream_error_text_is_redacted_for_clients_and_logs() {
    use test_upstreams::faults::EchoUpstream;
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // The test runtime has one thread: the gateway's tasks log through this.
    let _guard = tracing::subscriber::set_default(subscriber);
    let (rejects, fails, streams) =
        (EchoUpstream::start(400).await, EchoUpstream::start(500).await, EchoUpstream::start(200).await);
    let provider = |name: &str, url: String| {
        format!("  {name}:\n    kind: openai\n    base_url: {url}\n    api_key: sk-live-{name}-0123456789\n")
    };
    let yaml = format!(
        "providers:\n{}{}{}{FAST_HEALTH}cascades:\n  rejected:\n    models: [r/m]\n  failed:\n    models: [f/m, s/m]\n",
        provider("r", rejects.base_url()),
        provider("f", fails.base_url()),
        provider("s", streams.base_url()),
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
    let logs = logs.text();
    assert!(logs.contains("Bearer ***"), "the attempts were logged:\n{logs}");
    for text in [message, &logs, &body.to_string()] {
        assert!(!text.contains("0123456789"), "a key leaked:\n{text}");
    }
}
