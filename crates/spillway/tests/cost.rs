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
    let gw = one_provider(&up, "    whole_as_stream: false\n").await;
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

/// The gateway, started as `serve` starts it, with one cascade `chat` of
/// one model `up/m` on `up` (`extra`: more of the provider's settings).
async fn one_provider(up: &FakeUpstream, extra: &str) -> TestGateway {
    let yaml = format!(
        "providers:\n{}{extra}    models: [{{ id: m }}]\n{FAST_HEALTH}cascades:\n  chat:\n    models: [up/m]\n",
        openai_provider("up", up)
    );
    start(&yaml).await
}

/// Polls `/metrics` until the series reads `want` (a stream's usage is
/// counted when the server drops it, just after the client read the last
/// byte), up to 5 s; the last value read.
async fn metric_reaches(gw: &TestGateway, prefix: &str, want: f64) -> Option<f64> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let text = gw.get("/metrics").await.text().await.unwrap();
        let read = metric(&text, prefix);
        if read == Some(want) || tokio::time::Instant::now() > deadline {
            return read;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Streams of one provider one after another, written as OpenAI writes
/// them (a new `obfuscation` string in every chunk, `"usage":null` until
/// the usage chunk), each with its own id, `created`, content and counts:
/// after the first, every chunk is read against the shapes the provider's
/// earlier chunks left. Each client gets its own content and usage,
/// streamed and assembled into a whole answer alike, and
/// `spillway_tokens_total` counts each stream's own completion tokens; a
/// stream cut short by another finish reason is read as itself, and one
/// with an in-band error fails.
#[tokio::test]
async fn streams_in_a_row_are_each_read_and_counted_as_their_own() {
    let up = FakeUpstream::start().await;
    let gw = one_provider(&up, "").await;
    let events = |n: u64, texts: &[&str], finish: &str| -> Vec<String> {
        let head = format!(
            r#"{{"id":"chatcmpl-{n}","object":"chat.completion.chunk","created":{},"model":"m-2025","service_tier":"default","system_fingerprint":"fp_{n}","choices":["#,
            1_760_000_000 + n
        );
        let choice = |delta: String, finish: &str| {
            format!(r#"{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish}}}],"usage":null"#)
        };
        let mut rests = vec![choice(r#"{"role":"assistant","content":"","refusal":null}"#.into(), "null")];
        rests.extend(texts.iter().map(|t| choice(json!({ "content": t }).to_string(), "null")));
        rests.push(choice("{}".into(), &format!("\"{finish}\"")));
        rests.push(format!(
            r#"],"usage":{{"prompt_tokens":{},"completion_tokens":{n},"total_tokens":{},"prompt_tokens_details":{{"cached_tokens":{},"audio_tokens":0}},"completion_tokens_details":{{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}}"#,
            10 * n,
            11 * n,
            n % 2
        ));
        rests
            .iter()
            .enumerate()
            .map(|(i, rest)| format!("data: {head}{rest},\"obfuscation\":\"{:x}\"}}\n\n", (n * 31 + i as u64) * 7919))
            .chain(["data: [DONE]\n\n".to_string()])
            .collect()
    };
    let texts: [&[&str]; 6] = [
        &["Hello", " world"],
        &["line\none ", "\"quoted\"", " \u{e9}"],
        &["Привет", ", ", "мир"],
        &["cut", " short"],
        &["and", " the", " last", ""],
        &["again", " and"],
    ];
    let mut output = 0;
    for (i, parts) in texts.iter().enumerate() {
        let n = i as u64 + 1;
        let finish = if n == 4 { "length" } else { "stop" };
        let mut pieces = events(n, parts, finish);
        if n == 6 {
            // An in-band error after the first content: the attempt fails
            // (last: what the client was sent of it is counted).
            pieces.insert(2, format!("data: {{\"error\":{{\"message\":\"boom {n}\"}}}}\n\n"));
        }
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        up.push(Reply::sse_raw(&refs));
        let streamed = n % 2 == 1;
        let mut body = chat("chat", streamed);
        if streamed {
            body["stream_options"] = json!({"include_usage": true});
        }
        let resp = gw.post(&body).await;
        let want: String = parts.concat();
        if n == 6 {
            if streamed {
                let events = sse_events(resp).await;
                assert!(events.iter().any(|e| e.contains("\"error\"")), "{events:?}");
            } else {
                assert_ne!(resp.status(), 200, "an in-band error passed");
            }
            continue;
        }
        assert_eq!(resp.status(), 200);
        if streamed {
            let events = sse_events(resp).await;
            assert_eq!(streamed_text(&events), want, "stream {n}");
            let usage: Vec<Value> = events
                .iter()
                .filter_map(|e| serde_json::from_str::<Value>(e).ok())
                .filter(|v| v["usage"].is_object())
                .collect();
            assert_eq!(usage.len(), 1, "stream {n}: {events:?}");
            assert_eq!(usage[0]["usage"]["completion_tokens"], n);
            assert_eq!(usage[0]["usage"]["prompt_tokens"], 10 * n);
            for e in events.iter().filter(|e| e.as_str() != "[DONE]") {
                let v: Value = serde_json::from_str(e).unwrap();
                assert_ne!(v["id"], format!("chatcmpl-{n}"), "the gateway's own id");
                assert_eq!(v["object"], "chat.completion.chunk");
            }
        } else {
            let body: Value = resp.json().await.unwrap();
            assert_eq!(body["choices"][0]["message"]["content"], want, "{body}");
            assert_eq!(body["choices"][0]["finish_reason"], finish, "{body}");
            assert_eq!(body["usage"]["completion_tokens"], n, "{body}");
        }
        output += n;
        let counted = "spillway_tokens_total{provider=\"up\",model=\"m\",kind=\"output\"}";
        assert_eq!(metric_reaches(&gw, counted, output as f64).await, Some(output as f64), "after stream {n}");
    }
}
