//! Streaming through the gateway: held until the first token, then
//! forwarded chunk by chunk; failures before it are invisible, after it
//! they end the stream with an error event.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

mod common;

use common::*;
use futures_util::StreamExt;
use serde_json::Value;
use std::time::Duration;

fn config(a: &FakeUpstream, b: &FakeUpstream) -> String {
    format!(
        "providers:\n{}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/model-a, b/model-b]\n",
        openai_provider("a", a),
        openai_provider("b", b)
    )
}

async fn pair() -> (FakeUpstream, FakeUpstream) {
    (FakeUpstream::start().await, FakeUpstream::start().await)
}

#[tokio::test]
async fn stream_round_trip_is_conformant_and_stable() {
    let (a, b) = pair().await;
    a.push(Reply::stream(&["Hel", "lo", "!"]));
    let gw = start(&config(&a, &b)).await;
    let resp = gw.post(&chat("chat", true)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "content-type"), "text/event-stream");
    assert_eq!(header(&resp, "x-spillway-model"), "a/model-a");
    let events = sse_events(resp).await;
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    assert_eq!(streamed_text(&events), "Hello!");
    let chunks: Vec<Value> = events[..events.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    for c in &chunks {
        assert_valid("CreateChatCompletionStreamResponse", c);
        assert_eq!(c["id"], chunks[0]["id"], "the id is stable across the stream");
        assert_eq!(c["model"], "a/model-a");
    }
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
}

#[tokio::test]
async fn include_usage_is_honoured() {
    let (a, b) = pair().await;
    let usage = r#"data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#;
    let reply = Reply::sse_raw(&[
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"x\"},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        &format!("{usage}\n\n"),
        "data: [DONE]\n\n",
    ]);
    a.push(reply.clone());
    a.push(reply);
    let gw = start(&config(&a, &b)).await;
    let mut body = chat("chat", true);
    body["stream_options"] = serde_json::json!({"include_usage": true});
    let events = sse_events(gw.post(&body).await).await;
    let usage_chunk: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_valid("CreateChatCompletionStreamResponse", &usage_chunk);
    assert_eq!(usage_chunk["usage"]["total_tokens"], 4);
    assert_eq!(a.requests()[0]["stream_options"]["include_usage"], true);
    // Without include_usage the usage chunk is not passed on.
    let events = sse_events(gw.post(&chat("chat", true)).await).await;
    assert!(events.iter().all(|e| !e.contains("\"usage\":{")), "{events:?}");
}

#[tokio::test]
async fn stream_is_not_buffered() {
    let (a, b) = pair().await;
    // Chunk 1 now, the rest after a pause of a second.
    a.push(Reply::stream(&["first ", "second"]).pause_after(1, Duration::from_secs(1)));
    let gw = start(&config(&a, &b)).await;
    let resp = gw.post(&chat("chat", true)).await;
    let mut body = resp.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("first ") {
        let bytes = body.next().await.unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&bytes));
    }
    // The client holds chunk 1 while the upstream is still inside its pause:
    // nothing in between waited for the rest.
    assert_eq!(a.finished(), 0, "chunk 1 arrived only after the upstream finished");
    assert!(!seen.contains("second"));
    let mut rest = String::new();
    while let Some(b) = body.next().await {
        rest.push_str(&String::from_utf8_lossy(&b.unwrap()));
    }
    assert!(rest.contains("second") && rest.contains("[DONE]"));
    assert!(a.wait_for(Duration::from_secs(2), |u| u.finished() == 1).await);
}

#[tokio::test]
async fn failure_before_the_first_token_is_invisible() {
    let (a, b) = pair().await;
    // a: role chunk, then the connection breaks before any content.
    a.push(Reply::stream(&["never"]).cut_after(1));
    a.set_default(Reply::garbage());
    b.push(Reply::stream(&["from ", "b"]));
    let gw = start(&config(&a, &b)).await;
    let resp = gw.post(&chat("chat", true)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-model"), "b/model-b");
    let events = sse_events(resp).await;
    assert_eq!(streamed_text(&events), "from b");
    assert!(events.iter().all(|e| !e.contains("error")), "{events:?}");
    for e in &events[..events.len() - 1] {
        let v: Value = serde_json::from_str(e).unwrap();
        assert_eq!(v["model"], "b/model-b");
    }
}

#[tokio::test]
async fn error_status_and_in_band_errors_before_first_token_fall_through() {
    let (a, b) = pair().await;
    b.set_default(Reply::stream(&["ok"]));
    let gw = start(&config(&a, &b)).await;
    for bad in [
        Reply::error(502, "bad_gateway", "down"),
        Reply::sse_raw(&["data: {\"error\":{\"message\":\"overloaded\"}}\n\n"]),
        Reply::sse_raw(&[
            ": OPENROUTER PROCESSING\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"error\"}]}\n\n",
        ]),
        Reply::sse_raw(&[
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        ]),
    ] {
        a.push(bad);
        let resp = gw.post(&chat("chat", true)).await;
        assert_eq!(header(&resp, "x-spillway-model"), "b/model-b");
        assert_eq!(streamed_text(&sse_events(resp).await), "ok");
    }
}

#[tokio::test]
async fn mid_stream_failure_ends_with_an_error_event_without_continuation() {
    let (a, b) = pair().await;
    a.push(Reply::stream(&["partial ", "more"]).cut_after(2));
    // (Continuation is on by default: tests/continuation.rs; off, the old rule.)
    let gw = start(&format!("{}    continue_streams: false\n", config(&a, &b))).await;
    let resp = gw.post(&chat("chat", true)).await;
    assert_eq!(resp.status(), 200);
    let events = sse_events(resp).await;
    assert_eq!(streamed_text(&events), "partial ");
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_valid("ErrorResponse", &last);
    assert_eq!(b.calls(), 0, "no fallback after the first byte when continuation is off");
}

#[tokio::test]
async fn stream_without_finish_or_done_is_a_failure() {
    let (a, b) = pair().await;
    // Content, then a clean close — but no finish_reason and no [DONE].
    a.push(Reply::sse_raw(&[
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"trunc\"},\"finish_reason\":null}]}\n\n",
    ]));
    let gw = start(&config(&a, &b)).await;
    let events = sse_events(gw.post(&chat("chat", true)).await).await;
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert!(last.get("error").is_some(), "{events:?}");
}

#[tokio::test]
async fn stalled_stream_ends_with_an_error_event() {
    let (a, b) = pair().await;
    a.push(Reply::stream(&["one ", "two"]).hang_after(2));
    let yaml = config(&a, &b).replace("idle: 3s", "idle: 200ms");
    let gw = start(&yaml).await;
    let events = sse_events(gw.post(&chat("chat", true)).await).await;
    assert_eq!(streamed_text(&events), "one ");
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "timeout");
}

#[tokio::test]
async fn timeouts_total_bounds_a_trickling_stream() {
    let (a, b) = pair().await;
    // A token every 150 ms, each under `idle`, for far longer than `total`.
    let mut trickle = Reply::sse_raw(&[r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}

"#]);
    for _ in 0..100 {
        let piece = r#"data: {"choices":[{"index":0,"delta":{"content":"tok "}}]}

"#;
        trickle = trickle
            .then(test_upstreams::Step::Wait(Duration::from_millis(150)))
            .then(test_upstreams::Step::Bytes(piece.into()));
    }
    a.push(trickle);
    let yaml = config(&a, &b).replace("idle: 3s", "idle: 1s").replace("total: 10s", "total: 1s");
    let gw = start(&yaml).await;
    let started = tokio::time::Instant::now();
    let events = sse_events(gw.post(&chat("chat", true)).await).await;
    assert!(started.elapsed() < Duration::from_secs(3), "the stream ran for {:?}", started.elapsed());
    assert!(streamed_text(&events).starts_with("tok "), "{events:?}");
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "timeout");
    assert!(last["error"]["message"].as_str().unwrap().contains("timeouts.total"), "{last}");
}

#[tokio::test]
async fn client_disconnect_cancels_the_upstream() {
    let (a, b) = pair().await;
    a.push(Reply::stream(&["first ", "second"]).hang_after(2));
    let gw = start(&config(&a, &b)).await;
    let resp = gw.post(&chat("chat", true)).await;
    let mut body = resp.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("first ") {
        seen.push_str(&String::from_utf8_lossy(&body.next().await.unwrap().unwrap()));
    }
    assert_eq!(a.cancelled(), 0);
    drop(body);
    assert!(
        a.wait_for(Duration::from_secs(5), |u| u.cancelled() == 1).await,
        "the upstream response was not cancelled after the client left"
    );
}

#[tokio::test]
async fn first_token_deadline_moves_on() {
    let (a, b) = pair().await;
    a.push(Reply::stream(&["late"]).delay(Duration::from_secs(5)));
    b.push(Reply::stream(&["on time"]));
    let yaml = config(&a, &b).replace("first_token: 3s", "first_token: 200ms");
    let gw = start(&yaml).await;
    let resp = gw.post(&chat("chat", true)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "b/model-b");
    assert_eq!(streamed_text(&sse_events(resp).await), "on time");
}
