//! Cost and budgets: usage × price goes to `spillway_cost_usd_total` and
//! `spillway_tokens_total`; a model without a price costs 0 and is counted
//! as unpriced; a cascade past its `budget.daily_usd` switches to its free
//! models for the rest of the UTC day, with an alert.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;

use common::*;
use serde_json::{json, Value};
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

/// Whole answers passed through one after another (the provider keeps the
/// last one's shape and checks the next against it): each client gets its
/// own answer's content and usage, and each answer is counted by its own
/// usage — in the layout upstreams write (compact, the stamp's fields
/// first) and in serde's (keys sorted), with one answer of another
/// structure between and an in-band error that must not pass.
#[tokio::test]
async fn whole_answers_in_a_row_are_each_read_and_counted_as_their_own() {
    let up = FakeUpstream::start().await;
    let yaml = format!(
        "providers:\n{}    whole_as_stream: false\n    models: [{{ id: m }}]\n{FAST_HEALTH}cascades:\n  chat:\n    models: [up/m]\n",
        openai_provider("up", &up)
    );
    let gw = start(&yaml).await;
    let compact = |n: u64, content: &str, finish: &str| {
        format!(
            r#"{{"id":"chatcmpl-{n}","object":"chat.completion","created":{},"model":"m-2025","choices":[{{"index":0,"message":{{"role":"assistant","content":{},"refusal":null}},"logprobs":null,"finish_reason":"{finish}"}}],"usage":{{"prompt_tokens":{},"completion_tokens":{n},"total_tokens":{}}},"system_fingerprint":"fp_{n}"}}"#,
            1_760_000_000 + n,
            serde_json::to_string(content).unwrap(),
            10 * n,
            11 * n
        )
    };
    let sorted = |n: u64, content: &str| {
        let mut v = test_upstreams::reply::completion(content);
        v["id"] = json!(format!("chatcmpl-{n}"));
        v["usage"] = json!({"prompt_tokens": 10 * n, "completion_tokens": n, "total_tokens": 11 * n});
        Reply::json(v)
    };
    let answers: Vec<(Reply, Option<(&str, u64)>)> = vec![
        (Reply::raw(200, "application/json", compact(1, "first", "stop")), Some(("first", 1))),
        (
            Reply::raw(200, "application/json", compact(2, "second, longer\nwith a newline", "stop")),
            Some(("second, longer\nwith a newline", 2)),
        ),
        (Reply::raw(200, "application/json", compact(3, "cut short", "length")), Some(("cut short", 3))),
        (Reply::raw(200, "application/json", compact(4, "Привет", "length")), Some(("Привет", 4))),
        (
            Reply::raw(
                200,
                "application/json",
                compact(5, "broken", "stop").replace("\"logprobs\":null", "\"logprobs\":null,\"x\":1").replacen(
                    '{',
                    "{\"error\":{\"message\":\"boom\"},",
                    1,
                ),
            ),
            None,
        ),
        (sorted(6, "sorted keys"), Some(("sorted keys", 6))),
        (sorted(7, "sorted again"), Some(("sorted again", 7))),
    ];
    let mut output = 0;
    for (reply, want) in answers {
        up.push(reply);
        let resp = gw.post(&chat("chat", false)).await;
        let Some((content, n)) = want else {
            assert_ne!(resp.status(), 200, "an in-band error passed");
            continue;
        };
        assert_eq!(resp.status(), 200);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["choices"][0]["message"]["content"], content, "{body}");
        assert_eq!(body["usage"]["completion_tokens"], n, "{body}");
        assert_eq!(body["usage"]["prompt_tokens"], 10 * n, "{body}");
        assert_ne!(body["id"], format!("chatcmpl-{n}"), "the gateway's own id");
        assert_eq!(body["object"], "chat.completion");
        output += n;
        let counted = "spillway_tokens_total{provider=\"up\",model=\"m\",kind=\"output\"}";
        assert_eq!(metric_eventually(&gw, counted).await, Some(output as f64), "after answer {n}");
    }
}
