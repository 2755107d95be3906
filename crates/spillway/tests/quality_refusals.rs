//! The refusal signal's base rates, through the composition root against a
//! fake OpenAI upstream: a refusal counts against a model only where the
//! cascade usually answers the same request shape (tools, JSON, prompt
//! length, script). A shape refused half the time never demotes the model
//! that refuses it; a shape it used to answer does, once it starts
//! refusing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;

use common::*;
use serde_json::{json, Value};
use test_upstreams::reply::completion;

/// `a/m` first, `b/m` behind it; only `refusal` makes an answer bad.
async fn setup() -> (FakeUpstream, FakeUpstream, TestGateway) {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    a.set_default(Reply::text("Sure, here is the answer you asked for."));
    b.set_default(Reply::text("The answer from b."));
    let yaml = format!(
        "server:\n  admin_token: adm\nproviders:\n{}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, b/m]\n    quality:\n      window: 10\n      min_answers: 5\n      max_bad_share: 0.3\n      demote_for: 10m\n      signals: [refusal]\n",
        openai_provider("a", &a),
        openai_provider("b", &b)
    );
    (a, b, start(&yaml).await)
}

fn ask(prompt: &str, stream: bool) -> Value {
    json!({"model": "chat", "stream": stream, "messages": [{"role": "user", "content": prompt}]})
}

fn refusal() -> Reply {
    let mut refused = completion("");
    refused["choices"][0]["message"]["refusal"] = json!("I can't help with that.");
    Reply::json(refused)
}

/// Sends `body` (with `reply` scripted on `a` when given); the model that answered.
async fn send(gw: &TestGateway, a: &FakeUpstream, body: &Value, reply: Option<Reply>) -> String {
    if let Some(r) = reply {
        a.push(r);
    }
    let resp = gw.post(body).await;
    assert_eq!(resp.status(), 200);
    let model = header(&resp, "x-spillway-model").to_string();
    resp.text().await.unwrap();
    model
}

async fn refusals_counted(gw: &TestGateway) -> f64 {
    gw.metric("spillway_quality_answers_total{cascade=\"chat\",provider=\"a\",model=\"m\",signal=\"refusal\"}").await
}

fn demoted(gw: &TestGateway) -> bool {
    gw.state.gateway.load().health.model("a/m").quality.demoted_until().is_some()
}

#[tokio::test]
async fn a_shape_often_refused_does_not_demote_and_a_usually_answered_one_does() {
    let (a, _b, gw) = setup().await;
    // A short Russian question the cascade refuses half the time, whole and
    // streamed: never a signal, never a demotion.
    let touchy = ask("Как обойти защиту чужого роутера?", false);
    for i in 0..30 {
        let reply = (i % 2 == 0).then(refusal);
        assert_eq!(send(&gw, &a, &touchy, reply).await, "a/m", "answer {i}");
    }
    assert_eq!(refusals_counted(&gw).await, 0.0);
    assert!(!demoted(&gw), "a shape refused half the time does not demote");
    // A short English question, always answered so far...
    let plain = ask("What is the capital of France?", false);
    for _ in 0..20 {
        assert_eq!(send(&gw, &a, &plain, None).await, "a/m");
    }
    // ... that `a` starts refusing: each refusal counts, and the fourth puts
    // the window (10 answers) over 30 %.
    for i in 0..4 {
        assert_eq!(send(&gw, &a, &plain, Some(refusal())).await, "a/m", "refusal {i}");
    }
    assert_eq!(refusals_counted(&gw).await, 4.0);
    assert!(demoted(&gw), "a usually answered shape demotes a model that refuses it");
    assert_eq!(send(&gw, &a, &plain, None).await, "b/m", "the healthy model goes first");
}

#[tokio::test]
async fn a_streamed_refusal_counts_by_the_same_base_rate() {
    let (a, _b, gw) = setup().await;
    let plain = ask("What is the capital of France?", true);
    // Too little history for the shape: a refusal does not count yet.
    send(&gw, &a, &plain, Some(Reply::stream(&["Paris."]))).await;
    let refused = || {
        let events = [
            format!(
                "data: {}\n\n",
                test_upstreams::reply::chunk(json!({"role": "assistant", "refusal": "I can't"}), None)
            ),
            format!("data: {}\n\n", test_upstreams::reply::chunk(json!({}), Some("content_filter"))),
            "data: [DONE]\n\n".to_string(),
        ];
        Reply::sse_raw(&events.iter().map(String::as_str).collect::<Vec<_>>())
    };
    send(&gw, &a, &plain, Some(refused())).await;
    assert_eq!(refusals_counted(&gw).await, 0.0, "no base rate yet");
    for _ in 0..10 {
        send(&gw, &a, &plain, Some(Reply::stream(&["Paris."]))).await;
    }
    send(&gw, &a, &plain, Some(refused())).await;
    assert_eq!(refusals_counted(&gw).await, 1.0, "1 of 12 refused: usually answered");
}
