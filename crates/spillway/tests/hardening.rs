//! Bad input from clients and upstreams (the "Hardening" issue): what a
//! hostile model id, event stream or error body can and cannot do.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

mod common;

use common::*;
use serde_json::Value;

fn one_provider(up: &FakeUpstream) -> String {
    // `allow_any_model`: the ids below are the client's own invention.
    let provider = openai_provider("a", up).replace("test-key-a\n", "test-key-a\n    allow_any_model: true\n");
    format!("providers:\n{provider}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m]\n")
}

/// Every line of a page is a comment the formats define or a sample the
/// load monitor's parser reads, and only `spillway_*` series (and the
/// process's own `process_*`) exist.
fn assert_well_formed(page: &str) {
    for line in page.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let kind = rest.split(' ').next().unwrap_or("");
            assert!(["HELP", "TYPE", "UNIT", "EOF"].contains(&kind), "stray comment: {line:?}");
            continue;
        }
        for s in spillway::load::prometheus::parse(line).unwrap_or_else(|e| panic!("{e}: {line:?}")) {
            assert!(s.name.starts_with("spillway_") || s.name.starts_with("process_"), "forged series: {line:?}");
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
