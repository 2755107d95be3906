//! Streams that survive (SPEC §6, after the first byte): a stream that
//! breaks mid-answer is finished by the next model, on the same client
//! stream, with no repeated and no missing text — in each continuation
//! mode, against mocks and against fake OpenAI and Anthropic upstreams.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::Duration;

const REPLY: &str = "The quick brown fox jumps over the lazy dog and keeps running far into the evening.";

fn mock_config(b_extra: &str, cascade_extra: &str) -> String {
    format!(
        "providers:\n  m:\n    kind: mock\n    models:\n      - {{ id: a, behavior: {{ reply: \"{REPLY}\", cut_rate: 1.0 }} }}\n      - {{ id: b, behavior: {{ reply: \"{REPLY}\" }}{b_extra} }}\n{FAST_HEALTH}cascades:\n  chat:\n    models: [m/a, m/b]\n{cascade_extra}"
    )
}

/// The events of a streamed answer, the text, and the last JSON chunk.
async fn stream(gw: &TestGateway, body: &Value) -> (Vec<String>, String) {
    let resp = gw.post(body).await;
    assert_eq!(resp.status(), 200);
    let events = sse_events(resp).await;
    let text = streamed_text(&events);
    (events, text)
}

fn last_chunk(events: &[String]) -> Value {
    events.iter().rev().filter(|e| *e != "[DONE]").find_map(|e| serde_json::from_str(e).ok()).unwrap()
}

fn roles(events: &[String]) -> usize {
    events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e).ok())
        .filter(|v| !v["choices"][0]["delta"]["role"].is_null())
        .count()
}

#[tokio::test]
async fn a_cut_stream_is_finished_by_the_next_mock_by_prefill() {
    let gw = start(&mock_config("", "")).await;
    let (events, text) = stream(&gw, &chat("chat", true)).await;
    assert_eq!(text, REPLY, "one answer, nothing repeated, nothing missing");
    assert_eq!(events.last().unwrap(), "[DONE]");
    assert_eq!(roles(&events), 1, "the role is announced once");
    let last = last_chunk(&events);
    assert_eq!(last["spillway"]["models"], json!(["m/a", "m/b"]));
    for e in events.iter().filter(|e| *e != "[DONE]") {
        assert_valid("CreateChatCompletionStreamResponse", &serde_json::from_str(e).unwrap());
    }
    let ok = r#"spillway_continuations_total{cascade="chat",from="m/a",to="m/b",mode="prefill",result="ok"}"#;
    assert_eq!(gw.metric(ok).await, 1.0);
    assert_eq!(gw.metric(r#"spillway_requests_total{cascade="chat",outcome="ok"}"#).await, 1.0);
    let broke = r#"spillway_attempts_total{cascade="chat",provider="m",model="a",result="upstream_error"}"#;
    assert_eq!(gw.metric(broke).await, 1.0, "the broken attempt still counts against its model");
}

#[tokio::test]
async fn an_instructed_continuation_has_its_seam_trimmed() {
    let gw = start(&mock_config(", continuation: instruct", "")).await;
    let (events, text) = stream(&gw, &chat("chat", true)).await;
    assert_eq!(text, REPLY, "the mock repeated the seam; the client did not get it twice");
    let instructed = r#"spillway_continuations_total{cascade="chat",from="m/a",to="m/b",mode="instruct",result="ok"}"#;
    assert_eq!(gw.metric(instructed).await, 1.0);
    assert_eq!(last_chunk(&events)["spillway"]["continued"], true);
}

#[tokio::test]
async fn continue_streams_false_keeps_the_error_event() {
    let gw = start(&mock_config("", "    continue_streams: false\n")).await;
    let (events, text) = stream(&gw, &chat("chat", true)).await;
    assert!(REPLY.starts_with(&text) && text.len() < REPLY.len(), "{text}");
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "broken_body");
    assert_eq!(gw.metric(r#"spillway_requests_total{cascade="chat",outcome="error"}"#).await, 1.0);
}

/// Providers `a` (breaks), `b`, `c` as fake OpenAI upstreams.
fn fake_config(a: &FakeUpstream, b: &FakeUpstream, c: &FakeUpstream, b_extra: &str) -> String {
    format!(
        "providers:\n{}{}{b_extra}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, b/m, c/m]\n",
        openai_provider("a", a),
        openai_provider("b", b),
        openai_provider("c", c)
    )
}

async fn three() -> (FakeUpstream, FakeUpstream, FakeUpstream) {
    (FakeUpstream::start().await, FakeUpstream::start().await, FakeUpstream::start().await)
}

#[tokio::test]
async fn an_openai_upstream_continues_by_instruction_and_the_repeat_is_cut() {
    let (a, b, c) = three().await;
    a.push(Reply::stream(&["The quick ", "brown fox ", "jumps"]).cut_after(3));
    // b repeats the end of what it was given, as instructed models do.
    b.push(Reply::stream(&["brown fox ", "jumps over ", "the lazy dog."]));
    let gw = start(&fake_config(&a, &b, &c, "")).await;
    let (events, text) = stream(&gw, &chat("chat", true)).await;
    assert_eq!(text, "The quick brown fox jumps over the lazy dog.");
    assert_eq!(events.last().unwrap(), "[DONE]");
    let sent = &b.requests()[0];
    let messages = sent["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 2], json!({"role": "assistant", "content": "The quick brown fox "}));
    assert_eq!(messages[n - 1]["role"], "user");
    assert!(messages[n - 1]["content"].as_str().unwrap().contains("Continue exactly where it stopped"));
    assert_eq!(c.calls(), 0);
}

#[tokio::test]
async fn a_rejected_prefill_moves_on_and_does_not_mask_the_original_failure() {
    let (a, b, c) = three().await;
    let prefill = "    continuation: prefill\n";
    a.push(Reply::stream(&["Half ", "an ", "answer"]).cut_after(3));
    b.set_default(Reply::error(400, "invalid_request_error", "This model does not support assistant message prefill."));
    c.push(Reply::stream(&["an ", "answer, finished."]));
    let gw = start(&fake_config(&a, &b, &c, prefill)).await;
    let (_, text) = stream(&gw, &chat("chat", true)).await;
    assert_eq!(text, "Half an answer, finished.", "c continued after b refused");
    assert_eq!(
        b.requests()[0]["messages"].as_array().unwrap().last().unwrap()["role"],
        "assistant",
        "b was asked to prefill"
    );
    let rejected = r#"spillway_continuations_total{cascade="chat",from="-",to="b/m",mode="prefill",result="rejected"}"#;
    assert_eq!(gw.metric(rejected).await, 1.0);

    // When no one can continue, the error names why the stream broke.
    a.push(Reply::stream(&["Half ", "an ", "answer"]).cut_after(3));
    c.push(Reply::error(400, "invalid_request_error", "no"));
    let (events, _) = stream(&gw, &chat("chat", true)).await;
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "broken_body", "the original failure, not a continuation's 400: {last}");
}

#[tokio::test]
async fn a_stall_and_an_in_band_error_are_continued_too() {
    let (a, b, c) = three().await;
    let yaml = fake_config(&a, &b, &c, "").replace("idle: 3s", "idle: 300ms");
    let gw = start(&yaml).await;
    a.push(Reply::stream(&["One ", "two ", "three"]).hang_after(3));
    b.push(Reply::stream(&["three ", "four."]));
    assert_eq!(stream(&gw, &chat("chat", true)).await.1, "One two three four.");
    let in_band = r#"data: {"error":{"message":"overloaded","type":"server_error","code":null}}

"#;
    a.push(Reply::sse_raw(&[
        r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Alpha "}}]}

"#,
        in_band,
    ]));
    b.push(Reply::stream(&["beta."]));
    assert_eq!(stream(&gw, &chat("chat", true)).await.1, "Alpha beta.");
}

#[tokio::test]
async fn a_cut_inside_a_tool_call_is_not_continued() {
    let (a, b, c) = three().await;
    let head = r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"ci"}}]}}]}

"#;
    a.push(
        Reply::sse_raw(&[head])
            .then(test_upstreams::Step::Wait(Duration::from_millis(20)))
            .then(test_upstreams::Step::Cut),
    );
    let gw = start(&fake_config(&a, &b, &c, "")).await;
    let (events, _) = stream(&gw, &chat("chat", true)).await;
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "broken_body");
    assert_eq!(b.calls() + c.calls(), 0, "half a tool call is never handed to another model");
}

#[tokio::test]
async fn usage_is_the_sum_of_every_attempt_and_both_are_billed() {
    let (a, b, c) = three().await;
    a.push(Reply::stream(&["Twelve chars", " and more"]).cut_after(2));
    let usage = r#"data: {"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":5,"total_tokens":35}}

"#;
    b.push(Reply::sse_raw(&[
        r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":" and more"}}]}

"#,
        r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

"#,
        usage,
        "data: [DONE]\n\n",
    ]));
    let gw = start(&fake_config(&a, &b, &c, "")).await;
    let mut body = chat("chat", true);
    body["stream_options"] = json!({"include_usage": true});
    let (events, text) = stream(&gw, &body).await;
    assert_eq!(text, "Twelve chars and more");
    let last = last_chunk(&events);
    let u = &last["usage"];
    // b's own usage plus a's estimate: its prompt and "Twelve chars" (3 tokens at 4 chars a token).
    assert!(u["prompt_tokens"].as_u64().unwrap() > 30, "{u}");
    assert_eq!(u["completion_tokens"], 5 + 3, "{u}");
    assert_eq!(u["total_tokens"].as_u64(), Some(u["prompt_tokens"].as_u64().unwrap() + 8));
    assert_eq!(last["spillway"]["models"], json!(["a/m", "b/m"]));
    let tokens = |p: &str| format!("spillway_tokens_total{{provider=\"{p}\",model=\"m\",kind=\"output\"}}");
    assert_eq!(gw.metric(&tokens("a")).await, 3.0, "the broken attempt is billed for what it sent");
    assert_eq!(gw.metric(&tokens("b")).await, 5.0);
}

#[tokio::test]
async fn an_anthropic_upstream_continues_by_prefill_without_trailing_space() {
    use test_upstreams::anthropic;
    let a = FakeUpstream::start().await;
    let claude = FakeUpstream::start_at("/v1/messages").await;
    a.push(Reply::stream(&["The answer ", "is "]).cut_after(3));
    // Whether Claude sends the cut space again is not documented: it does here.
    claude.push(anthropic::stream(&[" forty-two."]));
    let yaml = format!(
        "providers:\n{}  claude:\n    kind: anthropic\n    base_url: {}/v1\n    api_key: k\n{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, claude/claude-sonnet-4-5]\n",
        openai_provider("a", &a),
        claude.origin()
    );
    let gw = start(&yaml).await;
    let (_, text) = stream(&gw, &chat("chat", true)).await;
    assert_eq!(text, "The answer is forty-two.");
    let sent = &claude.requests()[0];
    let last = sent["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "assistant");
    let content = last["content"].to_string();
    assert!(content.contains("The answer is") && !content.contains("is \""), "trailing whitespace cut: {content}");
}

/// A partial answer of `chars` characters, in sentences that differ.
fn long_answer(chars: usize) -> String {
    const WORDS: [&str; 5] = ["river", "lantern", "orchard", "signal", "harbor"];
    let mut s = String::new();
    let mut i = 0;
    while s.len() < chars {
        s.push_str(&format!("Point {i} is about the {} of item {}. ", WORDS[i % 5], i * 7 + 3));
        i += 1;
    }
    s.truncate(chars);
    s
}

/// `text` in pieces of at most 100 bytes (ASCII).
fn pieces(text: &str) -> Vec<&str> {
    text.as_bytes().chunks(100).map(|c| std::str::from_utf8(c).unwrap()).collect()
}

const MORE: &str = "And that is where the answer goes on to its end.";

/// `a` sends `partial` and breaks; `b`, told to continue, sends `restart`.
async fn restarted(partial: &str, restart: &str) -> String {
    let (a, b, c) = three().await;
    let sent = pieces(partial);
    a.push(Reply::stream(&sent).cut_after(sent.len() + 1));
    b.push(Reply::stream(&pieces(restart)));
    let gw = start(&fake_config(&a, &b, &c, "")).await;
    let (events, text) = stream(&gw, &chat("chat", true)).await;
    assert_eq!(events.last().unwrap(), "[DONE]");
    let sent = &b.requests()[0];
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages[messages.len() - 2]["content"], partial, "b was given the whole partial answer");
    text
}

#[tokio::test]
async fn a_next_model_that_starts_over_from_the_first_word_is_not_repeated() {
    for chars in [600, 5_000, 100_000] {
        let partial = long_answer(chars);
        let text = restarted(&partial, &format!("{partial}{MORE}")).await;
        assert_eq!(text.len(), chars + MORE.len(), "partial of {chars}: the answer was repeated");
        assert_eq!(text, format!("{partial}{MORE}"));
    }
}

#[tokio::test]
async fn a_next_model_that_starts_over_from_a_middle_sentence_is_not_repeated() {
    for chars in [600, 5_000, 100_000] {
        let partial = long_answer(chars);
        let middle = chars / 2 + partial[chars / 2..].find("Point ").unwrap();
        let text = restarted(&partial, &format!("{}{MORE}", &partial[middle..])).await;
        assert_eq!(text, format!("{partial}{MORE}"), "partial of {chars}");
    }
}

#[tokio::test]
async fn a_next_model_that_repeats_only_the_end_still_has_it_cut() {
    let partial = long_answer(5_000);
    let text = restarted(&partial, &format!("{}{MORE}", &partial[partial.len() - 40..])).await;
    assert_eq!(text, format!("{partial}{MORE}"));
}
