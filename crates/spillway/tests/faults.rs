//! The fault wall (issue 18 §2): sixteen provider faults, each driven
//! end to end through the composition root (`App::start`) against one
//! upstream whose model name picks the fault
//! (`test_upstreams::faults::wall`), streamed and whole where both apply.
//! Each test asserts what the client got (the complete text, nothing
//! repeated at a seam, the right error) and what the upstream saw
//! (attempt counts and spacing). Time is paused: the wall's 20-second
//! first tokens and 60-second outages pass in milliseconds, and deadlines
//! are the defaults unless a test says otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::Duration;
use test_upstreams::faults::wall::{answer, FaultWall};
use tokio::time::Instant;

/// A gateway with the wall as provider `wall` and cascade `chat` over
/// `models` (`id` or `id, context: N`), each priced at $1 per token, with
/// `health` as the `health:` section (empty: the defaults).
async fn gateway(wall: &FaultWall, models: &[&str], health: &str) -> TestGateway {
    let mut yaml = format!(
        "providers:\n  wall:\n    kind: openai\n    base_url: {}\n    api_key: k\n    models:\n",
        wall.base_url()
    );
    for m in models {
        yaml.push_str(&format!("      - {{ id: {m}, price_per_1m: {{ input: 1000000, output: 1000000 }} }}\n"));
    }
    let refs: Vec<String> = models.iter().map(|m| format!("wall/{}", m.split(',').next().unwrap())).collect();
    yaml.push_str(health);
    yaml.push_str(&format!("cascades:\n  chat:\n    models: [{}]\n", refs.join(", ")));
    start(&yaml).await
}

/// What the client got.
struct Got {
    status: u16,
    model: String,
    text: String,
    /// The SSE payloads of a stream, or the one JSON body.
    events: Vec<String>,
    body: Value,
}

async fn ask(gw: &TestGateway, stream: bool) -> Got {
    let mut body = chat("chat", stream);
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    let resp = gw.post(&body).await;
    let status = resp.status().as_u16();
    let model = header(&resp, "x-spillway-model").to_string();
    if stream && status == 200 {
        let events = sse_events(resp).await;
        let text = streamed_text(&events);
        Got { status, model, text, events, body: Value::Null }
    } else {
        let body: Value = resp.json().await.unwrap();
        let text = body["choices"][0]["message"]["content"].as_str().unwrap_or_default().to_string();
        Got { status, model, text, events: Vec::new(), body }
    }
}

impl Got {
    /// The last JSON event of a stream.
    fn last_chunk(&self) -> Value {
        self.events.iter().rev().find_map(|e| serde_json::from_str(e).ok()).unwrap_or(Value::Null)
    }

    /// The usage a stream's usage chunk or a whole body reported.
    fn usage(&self) -> Value {
        if self.events.is_empty() {
            return self.body["usage"].clone();
        }
        self.events
            .iter()
            .filter_map(|e| serde_json::from_str::<Value>(e).ok())
            .find_map(|v| v.get("usage").filter(|u| u.is_object()).cloned())
            .unwrap_or(Value::Null)
    }

    /// A complete, successful answer: 200, the whole text, and for a
    /// stream `[DONE]` at the end.
    fn complete(&self) {
        assert_eq!(self.status, 200, "{:?}", self.body);
        assert_eq!(self.text, answer(), "the whole answer, nothing repeated, nothing missing");
        if !self.events.is_empty() {
            assert_eq!(self.events.last().map(String::as_str), Some("[DONE]"));
        }
    }
}

const BOTH: [bool; 2] = [true, false];

#[tokio::test(start_paused = true)]
async fn fault_01_429_with_retry_after_fails_over_at_once_unless_the_wait_is_allowed() {
    for stream in BOTH {
        let wall = FaultWall::start().await;
        let gw = gateway(&wall, &["f01-retry-after-once", "healthy"], "").await;
        let t = Instant::now();
        let got = ask(&gw, stream).await;
        got.complete();
        assert_eq!(got.model, "wall/healthy", "a 429 is a dead mark: the next model, at once");
        assert!(t.elapsed() < Duration::from_secs(1), "no wait for Retry-After by default");
        assert_eq!(wall.calls("f01-retry-after-once"), 1);

        let wall = FaultWall::start().await;
        let health = "health:\n  retries: { wait_retry_after_up_to: 2s }\n";
        let gw = gateway(&wall, &["f01-retry-after-once", "healthy"], health).await;
        let got = ask(&gw, stream).await;
        got.complete();
        assert_eq!(got.model, "wall/f01-retry-after-once", "waited and retried the same model once");
        let calls = wall.calls_of("f01-retry-after-once");
        assert_eq!(calls.len(), 2);
        assert!(calls[1].at - calls[0].at >= Duration::from_secs(2), "the retry waited Retry-After");
        assert_eq!(wall.calls("healthy"), 0);
    }
}

#[tokio::test(start_paused = true)]
async fn fault_02_persistent_429_is_a_dead_mark_and_never_hammered() {
    let wall = FaultWall::start().await;
    let gw = gateway(&wall, &["f02-rate-limited", "healthy"], "").await;
    for i in 0..6 {
        let got = ask(&gw, i % 2 == 0).await;
        got.complete();
        assert_eq!(got.model, "wall/healthy");
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
    assert_eq!(wall.calls("f02-rate-limited"), 1, "one attempt on the primary per dead period");
    assert_eq!(wall.calls("healthy"), 6);
}

#[tokio::test(start_paused = true)]
async fn fault_03_500_once_fails_over_or_retries_the_same_model_when_configured() {
    for stream in BOTH {
        let wall = FaultWall::start().await;
        let gw = gateway(&wall, &["f03-500-once", "healthy"], "").await;
        let got = ask(&gw, stream).await;
        got.complete();
        assert_eq!(got.model, "wall/healthy", "fail over by default");
        assert_eq!(wall.calls("f03-500-once"), 1);

        let wall = FaultWall::start().await;
        let health = "health:\n  retries: { on_status: [500, 502, 503], backoff: 200ms }\n";
        let gw = gateway(&wall, &["f03-500-once", "healthy"], health).await;
        let got = ask(&gw, stream).await;
        got.complete();
        assert_eq!(got.model, "wall/f03-500-once", "retried the same model once");
        let calls = wall.calls_of("f03-500-once");
        assert_eq!(calls.len(), 2);
        assert!(calls[1].at - calls[0].at >= Duration::from_millis(200), "with backoff first");
        assert_eq!(wall.calls("healthy"), 0);
    }
}

#[tokio::test(start_paused = true)]
async fn fault_04_persistent_503_is_bounded_and_fails_over() {
    let wall = FaultWall::start().await;
    let gw = gateway(&wall, &["f04-503", "healthy"], "").await;
    for i in 0..4 {
        let got = ask(&gw, i % 2 == 0).await;
        got.complete();
        assert_eq!(got.model, "wall/healthy");
        assert_eq!(wall.calls("f04-503"), i + 1, "one attempt per request, no retries of a 503 by default");
    }
    // With retries of 503 configured: still bounded, two per request.
    let wall = FaultWall::start().await;
    let gw = gateway(&wall, &["f04-503", "healthy"], "health:\n  retries: { on_status: [503] }\n").await;
    for stream in BOTH {
        ask(&gw, stream).await.complete();
    }
    assert_eq!(wall.calls("f04-503"), 4);
}

/// With `on_status`, every call is an attempt: the breaker opens after
/// `consecutive_failures` (5) failed *calls*, not requests; a half-open
/// probe is one call (its failure re-opens the breaker, and the retry is
/// refused); and `/admin/state` and the metrics count what the upstream saw.
#[tokio::test(start_paused = true)]
async fn on_status_retries_count_as_attempts_and_a_probe_is_one_call() {
    let wall = FaultWall::start().await;
    let health = "server:\n  admin_token: t0ken\nhealth:\n  retries: { on_status: [500, 502, 503] }\n";
    let gw = gateway(&wall, &["f04-503", "healthy"], health).await;
    let mut calls = Vec::new();
    for i in 0..4 {
        ask(&gw, i % 2 == 1).await.complete();
        calls.push(wall.calls("f04-503"));
    }
    assert_eq!(calls, [2, 4, 5, 5], "retried once while closed; open after 5 failed calls");
    let state = gw.admin_get("/admin/state", "t0ken").await;
    let m = &state["cascades"][0]["models"][0];
    assert_eq!((m["model"].as_str(), m["attempts"].as_u64()), (Some("wall/f04-503"), Some(5)), "{state}");
    assert_eq!(m["failures"].as_u64(), Some(5));
    // Past open_min (10 s) one request probes: one call, whole or streamed.
    for (round, stream) in BOTH.into_iter().enumerate() {
        tokio::time::sleep(Duration::from_secs(if round == 0 { 11 } else { 21 })).await;
        let before = wall.calls("f04-503");
        ask(&gw, stream).await.complete();
        assert_eq!(wall.calls("f04-503"), before + 1, "a probe is one call (stream: {stream})");
    }
    assert!(
        gw.metric(
            "spillway_attempts_total{cascade=\"chat\",provider=\"wall\",model=\"f04-503\",result=\"upstream_error\"}"
        )
        .await
            >= 7.0
    );
}

#[tokio::test(start_paused = true)]
async fn fault_05_reset_before_headers_is_retried_and_answered() {
    for stream in BOTH {
        let wall = FaultWall::start().await;
        let gw = gateway(&wall, &["f05-reset-once", "healthy"], "").await;
        let got = ask(&gw, stream).await;
        got.complete();
        assert_eq!(got.model, "wall/f05-reset-once", "the same model, retried");
        let calls = wall.calls_of("f05-reset-once");
        assert_eq!(calls.len(), 2);
        assert!(calls[1].at - calls[0].at >= Duration::from_millis(50), "after the retry backoff");
        assert_eq!(wall.calls("healthy"), 0);
    }
}

#[tokio::test(start_paused = true)]
async fn fault_06_no_response_fails_over_at_first_token() {
    for stream in BOTH {
        let wall = FaultWall::start().await;
        let gw = gateway(&wall, &["f06-silent", "healthy"], "").await;
        let t = Instant::now();
        let got = ask(&gw, stream).await;
        got.complete();
        assert_eq!(got.model, "wall/healthy");
        let took = t.elapsed();
        assert!(took >= Duration::from_secs(15) && took < Duration::from_secs(16), "at first_token (15s): {took:?}");
        assert_eq!(wall.calls("f06-silent"), 1);
    }
}

#[tokio::test(start_paused = true)]
async fn fault_07_a_first_token_after_20s_fails_over_at_first_token() {
    for stream in BOTH {
        let wall = FaultWall::start().await;
        let gw = gateway(&wall, &["f07-first-token-20s", "healthy"], "").await;
        let t = Instant::now();
        let got = ask(&gw, stream).await;
        got.complete();
        assert_eq!(got.model, "wall/healthy");
        assert!(t.elapsed() < Duration::from_secs(16), "{:?}", t.elapsed());
        assert_eq!(wall.calls("f07-first-token-20s"), 1);
    }
}

#[tokio::test(start_paused = true)]
async fn fault_08_a_stream_cut_after_40_of_60_tokens_is_continued() {
    let wall = FaultWall::start().await;
    let gw = gateway(&wall, &["f08-cut-40-of-60", "healthy"], "").await;
    let got = ask(&gw, true).await;
    got.complete();
    assert_eq!(got.last_chunk()["spillway"]["models"], json!(["wall/f08-cut-40-of-60", "wall/healthy"]));
    // Handed the partial answer (instruct mode, the default here), it
    // repeated the seam's last token: the client did not get it twice.
    let handed = &wall.calls_of("healthy")[0].body;
    let messages = handed["messages"].as_array().unwrap();
    let partial = &messages[messages.len() - 2];
    assert_eq!(partial["role"], "assistant", "the next model was handed the partial answer");
    assert_eq!(partial["content"].as_str().unwrap().split_whitespace().count(), 40);

    // Whole: never a truncated success.
    let got = ask(&gw, false).await;
    got.complete();
    assert_eq!(wall.calls("f08-cut-40-of-60"), 2);
}

#[tokio::test(start_paused = true)]
async fn fault_09_a_30s_stall_is_detected_at_idle_and_continued() {
    let wall = FaultWall::start().await;
    let gw = gateway(&wall, &["f09-stall-60s", "healthy"], "").await;
    let t = Instant::now();
    let got = ask(&gw, true).await;
    got.complete();
    let took = t.elapsed();
    assert!(took >= Duration::from_secs(30) && took < Duration::from_secs(31), "at idle (30s): {took:?}");
    assert_eq!(got.last_chunk()["spillway"]["models"], json!(["wall/f09-stall-60s", "wall/healthy"]));

    let got = ask(&gw, false).await;
    got.complete();
    // The gateway stays healthy: it answers at once afterwards.
    assert_eq!(gw.get("/healthz").await.status(), 200);
    let t = Instant::now();
    let gw2 = gateway(&wall, &["healthy"], "").await;
    ask(&gw2, true).await.complete();
    assert!(t.elapsed() < Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn fault_10_one_malformed_chunk_is_skipped_and_counted_repeated_garbage_fails() {
    let wall = FaultWall::start().await;
    let gw = gateway(&wall, &["f10-one-garbage", "healthy"], "").await;
    let skipped = r#"spillway_stream_events_skipped_total{cascade="chat",provider="wall"}"#;
    for (i, stream) in BOTH.into_iter().enumerate() {
        let got = ask(&gw, stream).await;
        got.complete();
        assert_eq!(got.model, "wall/f10-one-garbage");
        let text = gw.get("/metrics").await.text().await.unwrap();
        assert!(
            text.contains(&format!("{skipped} {}", i + 1)),
            "{}",
            text.lines().filter(|l| l.contains("skipped")).collect::<Vec<_>>().join("\n")
        );
    }
    assert_eq!(wall.calls("healthy"), 0, "nothing failed over");

    // Five garbage events are more than `streams.max_skipped_events` (3):
    // a broken body, continued (streamed) or failed over (whole).
    let wall = FaultWall::start().await;
    let gw = gateway(&wall, &["f10-garbage-5", "healthy"], "").await;
    let got = ask(&gw, true).await;
    got.complete();
    assert_eq!(got.last_chunk()["spillway"]["models"], json!(["wall/f10-garbage-5", "wall/healthy"]));
    let broken =
        r#"spillway_attempt_failures_total{cascade="chat",provider="wall",model="f10-garbage-5",reason="broken_body"}"#;
    assert_eq!(gw.metric(broken).await, 1.0);
    let got = ask(&gw, false).await;
    got.complete();
    assert_eq!(got.model, "wall/healthy");
}

#[tokio::test(start_paused = true)]
async fn fault_11_a_stream_without_done_but_with_a_finish_reason_is_finalised_at_once() {
    for model in ["f11-no-done", "f11-no-done-open"] {
        let wall = FaultWall::start().await;
        let gw = gateway(&wall, &[model, "healthy"], "").await;
        let t = Instant::now();
        let got = ask(&gw, true).await;
        got.complete();
        assert!(t.elapsed() < Duration::from_secs(5), "{model}: not left to idle out: {:?}", t.elapsed());
        assert_eq!(got.usage()["completion_tokens"], 60, "{model}: usage reported");
        assert!(got.last_chunk()["spillway"].is_null(), "{model}: not continued");
        let got = ask(&gw, false).await;
        got.complete();
        assert_eq!(got.usage()["completion_tokens"], 60);
        assert_eq!(wall.calls("healthy"), 0, "{model}");
        assert_eq!(gw.metric(r#"spillway_requests_total{cascade="chat",outcome="ok"}"#).await, 2.0);
    }
}

#[tokio::test(start_paused = true)]
async fn fault_12_context_length_is_not_retried_and_a_larger_model_answers() {
    for stream in BOTH {
        let wall = FaultWall::start().await;
        let models = ["f12-context-length, context: 8192", "small, context: 4096", "healthy, context: 128000"];
        let gw = gateway(&wall, &models, "").await;
        let got = ask(&gw, stream).await;
        got.complete();
        assert_eq!(got.model, "wall/healthy");
        assert_eq!(wall.calls("f12-context-length"), 1, "not retried");
        assert_eq!(wall.calls("small"), 0, "a smaller model is not tried");
    }
}

#[tokio::test(start_paused = true)]
async fn fault_13_a_content_filter_400_is_returned_with_its_reason() {
    for stream in BOTH {
        let wall = FaultWall::start().await;
        let gw = gateway(&wall, &["f13-content-filter", "healthy"], "").await;
        let got = ask(&gw, stream).await;
        assert_eq!(got.status, 400);
        assert_eq!(got.body["error"]["code"], "content_filter", "{}", got.body);
        assert!(got.body["error"]["message"].as_str().unwrap().contains("content management policy"));
        assert_eq!(wall.calls("f13-content-filter"), 1, "no retry");
        assert_eq!(wall.calls("healthy"), 0, "no fallback");
    }
}

#[tokio::test(start_paused = true)]
async fn fault_14_a_rejected_prefill_moves_on_or_ends_with_the_original_error() {
    let wall = FaultWall::start().await;
    let gw = gateway(&wall, &["f08-cut-40-of-60", "f14-rejects-prefill, continuation: prefill", "healthy"], "").await;
    let got = ask(&gw, true).await;
    got.complete();
    assert_eq!(got.last_chunk()["spillway"]["models"], json!(["wall/f08-cut-40-of-60", "wall/healthy"]));
    let asked = &wall.calls_of("f14-rejects-prefill")[0].body;
    assert_eq!(asked["messages"].as_array().unwrap().last().unwrap()["role"], "assistant");

    // Nobody left to continue: the error event names the cut, not the 400.
    let wall = FaultWall::start().await;
    let gw = gateway(&wall, &["f08-cut-40-of-60", "f14-rejects-prefill, continuation: prefill"], "").await;
    let got = ask(&gw, true).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.last_chunk()["error"]["code"], "broken_body", "{:?}", got.last_chunk());
    assert_eq!(wall.calls("f14-rejects-prefill"), 1);

    // Whole: nothing reached the client, so the next model answers afresh.
    let got = ask(&gw, false).await;
    got.complete();
    assert_eq!(got.model, "wall/f14-rejects-prefill");
}

#[tokio::test(start_paused = true)]
async fn fault_15_a_60s_outage_is_served_by_the_fallback_and_traffic_returns() {
    let wall = FaultWall::start().await;
    let gw = gateway(&wall, &["f15-down-60s", "healthy"], "").await;
    let mut back_at = None;
    for i in 0..20 {
        let got = ask(&gw, i % 2 == 0).await;
        got.complete();
        let now = wall.elapsed();
        if now < Duration::from_secs(60) {
            assert_eq!(got.model, "wall/healthy", "during the outage: the fallback ({now:?})");
        } else if got.model == "wall/f15-down-60s" && back_at.is_none() {
            back_at = Some(now);
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    let back = back_at.expect("traffic came back to the primary");
    let primary = wall.calls_of("f15-down-60s");
    let in_outage = primary.iter().filter(|c| c.at < Duration::from_secs(60)).count();
    eprintln!("fault 15: {in_outage} primary calls during the outage; back on the primary at {back:?}");
    assert!(in_outage <= 8, "the breaker kept traffic off the primary: {in_outage} calls");
    // The breaker opens at ~20 s (five failures, a request every 5 s); its
    // probes at ~30, ~45 and ~67 s (periods doubled, but at most half the
    // outage so far) find the primary back ~10 s after it recovered.
    assert!(back <= Duration::from_secs(60 + 15), "back within ~15 s of the recovery: {back:?}");
}

#[tokio::test(start_paused = true)]
async fn fault_16_the_fallback_is_named_and_only_its_usage_is_billed() {
    let wall = FaultWall::start().await;
    let gw = gateway(&wall, &["f04-503", "healthy"], "").await;
    for stream in BOTH {
        let got = ask(&gw, stream).await;
        got.complete();
        assert_eq!(got.model, "wall/healthy");
        let named = if stream { got.last_chunk()["model"].clone() } else { got.body["model"].clone() };
        assert_eq!(named, "wall/healthy");
        assert_eq!(got.usage()["completion_tokens"], 60);
        assert_eq!(got.usage()["prompt_tokens"], 5);
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let healthy = r#"spillway_cost_usd_total{cascade="chat",provider="wall",model="healthy"}"#;
    assert_eq!(gw.metric(healthy).await, 2.0 * 65.0, "$1 a token, 65 tokens each");
    let text = gw.get("/metrics").await.text().await.unwrap();
    assert!(!text.contains(r#"spillway_cost_usd_total{cascade="chat",provider="wall",model="f04-503"}"#));
}

/// Issue 18 §3: a whole answer is read from the upstream as a stream, so
/// `first_token` bounds its first token and `idle` its gaps, not its length.
#[tokio::test(start_paused = true)]
async fn a_60s_whole_generation_completes_with_first_token_2s() {
    let wall = FaultWall::start().await;
    let health = "health:\n  timeouts: { first_token: 2s, idle: 5s }\n";
    let gw = gateway(&wall, &["slow-60s", "healthy"], health).await;
    let t = Instant::now();
    let got = ask(&gw, false).await;
    got.complete();
    assert!(t.elapsed() >= Duration::from_secs(60), "{:?}", t.elapsed());
    assert_eq!(got.model, "wall/slow-60s");
    assert_eq!(got.usage()["completion_tokens"], 60, "usage from the upstream's usage chunk");
    assert_valid("CreateChatCompletionResponse", &got.body);
    let sent = &wall.calls_of("slow-60s")[0].body;
    assert_eq!(sent["stream"], true, "asked upstream as a stream");
    assert_eq!(sent["stream_options"]["include_usage"], true);
    assert_eq!(wall.calls("healthy"), 0);

    // The pass-through path still serves what the assembler does not
    // rebuild: log probabilities (and `n > 1`).
    let mut body = chat("chat", false);
    body["logprobs"] = json!(true);
    let gw = gateway(&wall, &["healthy"], health).await;
    assert_eq!(gw.post(&body).await.status(), 200);
    assert_eq!(wall.calls_of("healthy").last().unwrap().body["stream"], false, "sent whole");

    // A dead upstream is still left at first_token.
    let gw = gateway(&wall, &["f06-silent", "healthy"], health).await;
    let t = Instant::now();
    ask(&gw, false).await.complete();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

/// `whole_as_stream: false` keeps the whole-body pass-through for a
/// provider (cheaper for the gateway), and `first_token` then bounds the
/// whole answer again.
#[tokio::test(start_paused = true)]
async fn whole_as_stream_false_sends_whole_requests_whole() {
    let wall = FaultWall::start().await;
    let health = "health:\n  timeouts: { first_token: 2s, idle: 5s }\n";
    let mut yaml = format!(
        "providers:\n  wall:\n    kind: openai\n    base_url: {}\n    api_key: k\n    whole_as_stream: false\n    models: [{{ id: healthy }}, {{ id: slow-60s }}]\n",
        wall.base_url()
    );
    yaml.push_str(health);
    yaml.push_str("cascades:\n  chat:\n    models: [wall/slow-60s, wall/healthy]\n");
    let gw = start(&yaml).await;
    let got = ask(&gw, false).await;
    got.complete();
    assert_eq!(got.model, "wall/healthy", "the 60 s answer, sent whole, ran past first_token");
    assert_eq!(wall.calls_of("healthy").last().unwrap().body["stream"], false, "sent whole");
    assert_eq!(wall.calls_of("slow-60s").last().unwrap().body["stream"], false, "sent whole");
}

/// §3 for a native kind: an Anthropic whole answer is read as a stream too.
#[tokio::test(start_paused = true)]
async fn an_anthropic_whole_answer_is_read_as_a_stream() {
    let up = FakeUpstream::start_at("/v1/messages").await;
    let pieces: Vec<String> = (1..=40).map(|i| format!("w{i} ")).collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let mut reply = test_upstreams::anthropic::stream(&refs);
    for i in (3..43).rev() {
        reply = reply.pause_after(i, Duration::from_millis(1_500));
    }
    up.push(reply);
    let yaml = format!(
        "providers:\n  claude:\n    kind: anthropic\n    base_url: {}\n    api_key: k\nhealth:\n  timeouts: {{ first_token: 2s, idle: 5s }}\ncascades:\n  chat:\n    models: [claude/claude-sonnet-4-5]\n",
        up.origin()
    );
    let gw = start(&yaml).await;
    let t = Instant::now();
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert!(t.elapsed() >= Duration::from_secs(55), "{:?}", t.elapsed());
    assert_eq!(body["choices"][0]["message"]["content"], pieces.concat());
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_valid("CreateChatCompletionResponse", &body);
    assert_eq!(up.requests()[0]["stream"], true);
}
