//! Cost and budgets: usage × price goes to `spillway_cost_usd_total` and
//! `spillway_tokens_total`; a model without a price costs 0 and is counted
//! as unpriced; a cascade past its `budget.daily_usd` switches to its free
//! models for the rest of the UTC day, with an alert.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;

use common::*;
use std::time::Duration;

/// Every fake answer has usage 5 prompt + 2 completion tokens; at
/// $100,000 per 1M tokens each answer of `paid/m` costs $0.70.
fn yaml(paid: &FakeUpstream, hook: &FakeUpstream) -> String {
    format!(
        "providers:\n{}    models: [{{ id: m, price_per_1m: {{ input: 100000, output: 100000 }} }}]\n{}    models: [{{ id: m }}]\n  free:\n    kind: mock\n    models:\n      - {{ id: m, price_per_1m: {{ input: 0, output: 0 }}, behavior: {{ reply: \"free answer\" }} }}\n{FAST_HEALTH}cascades:\n  chat:\n    models: [paid/m, free/m]\n    budget: {{ daily_usd: 1.0 }}\n  other:\n    models: [unpriced/m]\nalerts:\n  webhook: {{ url: \"{}/alerts\" }}\n",
        openai_provider("paid", paid),
        openai_provider("unpriced", paid),
        hook.origin()
    )
}

fn metric(text: &str, prefix: &str) -> Option<f64> {
    text.lines().find(|l| l.starts_with(prefix)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok())
}

#[tokio::test]
async fn budget_exhaustion_switches_to_free_models() {
    let paid = FakeUpstream::start().await;
    let hook = FakeUpstream::start_at("/alerts").await;
    let gw = start(&yaml(&paid, &hook)).await;
    for _ in 0..2 {
        let resp = gw.post(&chat("chat", false)).await;
        assert_eq!(header(&resp, "x-spillway-model"), "paid/m");
    }
    // $1.40 spent of $1.00: paid models are skipped now.
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-model"), "free/m");
    assert_eq!(paid.calls(), 2);

    let text = gw.get("/metrics").await.text().await.unwrap();
    let cost = metric(&text, "spillway_cost_usd_total{cascade=\"chat\",provider=\"paid\",model=\"m\"}").unwrap();
    assert!((cost - 1.4).abs() < 1e-9, "{cost}");
    assert_eq!(metric(&text, "spillway_tokens_total{provider=\"paid\",model=\"m\",kind=\"input\"}"), Some(10.0));
    assert_eq!(metric(&text, "spillway_tokens_total{provider=\"paid\",model=\"m\",kind=\"output\"}"), Some(4.0));

    assert!(hook.wait_for(Duration::from_secs(5), |h| h.calls() >= 1).await);
    let alert = hook.requests().into_iter().find(|b| b["kind"] == "budget_exhausted").unwrap();
    assert!(alert["text"].as_str().unwrap().contains("chat spent $1.40 of its $1.00 daily budget"), "{alert}");
}

#[tokio::test]
async fn an_unpriced_model_costs_nothing_and_is_counted() {
    let paid = FakeUpstream::start().await;
    let hook = FakeUpstream::start_at("/alerts").await;
    let gw = start(&yaml(&paid, &hook)).await;
    assert_eq!(gw.post(&chat("other", false)).await.status(), 200);
    let text = gw.get("/metrics").await.text().await.unwrap();
    assert_eq!(metric(&text, "spillway_unpriced_answers_total{provider=\"unpriced\",model=\"m\"}"), Some(1.0));
    assert_eq!(metric(&text, "spillway_tokens_total{provider=\"unpriced\",model=\"m\",kind=\"input\"}"), Some(5.0));
    assert!(!text.contains("spillway_cost_usd_total{cascade=\"other\""), "{text}");
}

#[tokio::test]
async fn a_streamed_answer_is_priced_from_its_usage_chunk() {
    let paid = FakeUpstream::start().await;
    let hook = FakeUpstream::start_at("/alerts").await;
    let gw = start(&yaml(&paid, &hook)).await;
    let usage =
        serde_json::json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 7, "total_tokens": 10}});
    let pieces: Vec<String> = [
        test_upstreams::reply::chunk(serde_json::json!({"role": "assistant", "content": "Hi"}), None),
        test_upstreams::reply::chunk(serde_json::json!({}), Some("stop")),
        usage,
    ]
    .iter()
    .map(|v| format!("data: {v}\n\n"))
    .chain(["data: [DONE]\n\n".to_string()])
    .collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    paid.push(Reply::sse_raw(&refs));
    let mut body = chat("chat", true);
    body["stream_options"] = serde_json::json!({"include_usage": true});
    let resp = gw.post(&body).await;
    assert_eq!(header(&resp, "x-spillway-model"), "paid/m");
    let _ = sse_events(resp).await;
    let text = gw.get("/metrics").await.text().await.unwrap();
    let cost = metric(&text, "spillway_cost_usd_total{cascade=\"chat\",provider=\"paid\",model=\"m\"}").unwrap();
    assert!((cost - 1.0).abs() < 1e-9, "{cost}");
    assert_eq!(metric(&text, "spillway_tokens_total{provider=\"paid\",model=\"m\",kind=\"output\"}"), Some(7.0));
}

/// Waits up to 5 s for a metric to appear (a stream's end is recorded when
/// the server drops it, just after the client read the last byte).
async fn metric_eventually(gw: &TestGateway, prefix: &str) -> Option<f64> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let text = gw.get("/metrics").await.text().await.unwrap();
        if let Some(v) = metric(&text, prefix) {
            return Some(v);
        }
        if tokio::time::Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn answers_without_usage_are_priced_from_an_estimate() {
    let paid = FakeUpstream::start().await;
    let hook = FakeUpstream::start_at("/alerts").await;
    let gw = start(&yaml(&paid, &hook)).await;
    // A stream whose client did not ask for usage (so the upstream sends
    // none): 20 characters of answer are 5 tokens.
    paid.push(Reply::stream(&["Hello there, ", "friend!"]));
    let resp = gw.post(&chat("chat", true)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "paid/m");
    let events = sse_events(resp).await;
    assert!(!events.iter().any(|e| e.contains("\"usage\":{")), "no usage chunk the client did not ask for");
    let output = "spillway_tokens_total{provider=\"paid\",model=\"m\",kind=\"output\"}";
    assert_eq!(metric_eventually(&gw, output).await, Some(5.0));
    let input = metric_eventually(&gw, "spillway_tokens_total{provider=\"paid\",model=\"m\",kind=\"input\"}").await;
    assert!(input.is_some_and(|n| n >= 1.0), "the prompt's estimate: {input:?}");
    assert!(metric_eventually(&gw, "spillway_cost_usd_total{cascade=\"chat\",provider=\"paid\",model=\"m\"}")
        .await
        .is_some_and(|c| c > 0.0));

    // A whole answer without usage: the same estimate.
    let mut body = test_upstreams::reply::completion("twelve chars");
    body.as_object_mut().unwrap().remove("usage");
    paid.push(Reply::json(body));
    assert_eq!(gw.post(&chat("other", false)).await.status(), 200);
    let text = gw.get("/metrics").await.text().await.unwrap();
    assert_eq!(metric(&text, "spillway_tokens_total{provider=\"unpriced\",model=\"m\",kind=\"output\"}"), Some(3.0));
}
