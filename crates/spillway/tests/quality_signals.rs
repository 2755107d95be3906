//! Each quality signal, whole and streamed, through the composition root
//! against a fake OpenAI upstream: the answer is judged once where it ends,
//! counted in `spillway_quality_answers_total`, and a whole answer names
//! its signals in `x-spillway-quality`. The false-positive guards hold end
//! to end: a code answer to a Russian prompt and a short answer to a short
//! question count as `ok`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;

use common::*;
use serde_json::{json, Value};
use test_upstreams::reply::{chunk, completion};

const RU: &str = "Расскажи, пожалуйста, как работает кэширование в браузере и зачем оно нужно?";

/// `a/m` first, `b/m` behind it; every signal on, no demotion in sight
/// (`min_answers` is the window).
async fn setup() -> (FakeUpstream, FakeUpstream, TestGateway) {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    b.set_default(Reply::text(r#"{"from": "b"}"#));
    let yaml = format!(
        "server:\n  admin_token: adm\nproviders:\n{}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, b/m]\n    quality:\n      window: 100\n      min_answers: 100\n      min_chars: 20\n      signals: [json_repaired, json_invalid, tool_args_invalid, empty, refusal, wrong_script, repetition, continued]\n",
        openai_provider("a", &a),
        openai_provider("b", &b)
    );
    (a, b, start(&yaml).await)
}

fn ask(prompt: &str, stream: bool) -> Value {
    json!({"model": "chat", "stream": stream, "messages": [{"role": "user", "content": prompt}]})
}

fn json_ask(stream: bool) -> Value {
    let mut body = ask("Give me the object as JSON.", stream);
    body["response_format"] = json!({"type": "json_object"});
    body
}

async fn count(gw: &TestGateway, signal: &str) -> f64 {
    gw.metric(&format!(
        "spillway_quality_answers_total{{cascade=\"chat\",provider=\"a\",model=\"m\",signal=\"{signal}\"}}"
    ))
    .await
}

/// Sends `body` with `reply` scripted on `a`; asserts `signal` was counted
/// once more for `a/m`, and (whole) named in `x-spillway-quality`.
async fn expect(gw: &TestGateway, a: &FakeUpstream, body: Value, reply: Reply, signal: &str) {
    let stream = body["stream"] == true;
    let before = count(gw, signal).await;
    a.push(reply);
    let resp = gw.post(&body).await;
    assert_eq!(resp.status(), 200, "{signal} (stream {stream})");
    let named = header(&resp, "x-spillway-quality").to_string();
    let text = resp.text().await.unwrap();
    assert!(!text.contains("\"error\""), "{signal} (stream {stream}): {text}");
    assert_eq!(count(gw, signal).await, before + 1.0, "{signal} (stream {stream})");
    // An answer that failed its check moved on to `b`: its header is `b`'s.
    let moved_on = matches!(signal, "json_invalid" | "tool_args_invalid");
    if signal == "ok" {
        assert_eq!(named, "", "a good answer has no x-spillway-quality");
    } else if !stream && !moved_on {
        assert!(named.split(',').any(|s| s == signal), "x-spillway-quality `{named}` names {signal}");
    }
}

#[tokio::test]
async fn text_signals_are_counted_whole_and_streamed() {
    let (a, _b, gw) = setup().await;
    let english = "The browser keeps a copy of each response and reuses it while it is still fresh.";
    let looping = "the cat sat on the mat and ".repeat(8);
    let long = "Explain in detail, with examples, how TCP congestion control reacts to packet loss.";
    for stream in [false, true] {
        let reply = |text: &str| if stream { Reply::stream(&[text]) } else { Reply::text(text) };
        expect(&gw, &a, ask(RU, stream), reply(english), "wrong_script").await;
        expect(&gw, &a, ask("Tell me a story", stream), reply(&looping), "repetition").await;
        expect(&gw, &a, ask(long, stream), reply("Ok."), "empty").await;
        // The guards: a code answer to a Russian prompt, a short answer to a short question.
        let code = "```rust\nfn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n```";
        expect(&gw, &a, ask("Напиши функцию сложения на Rust", stream), reply(code), "ok").await;
        expect(&gw, &a, ask("What is 2+2?", stream), reply("4"), "ok").await;
    }
}

#[tokio::test]
async fn a_refusal_is_counted_whole_and_streamed() {
    let (a, _b, gw) = setup().await;
    // A refusal counts where the request's shape is usually answered: ten
    // answers of this shape first (see tests/quality_refusals.rs).
    for _ in 0..10 {
        expect(&gw, &a, ask("Hi there", false), Reply::text("Hello! How can I help you today?"), "ok").await;
    }
    let mut refused = completion("");
    refused["choices"][0]["message"]["refusal"] = json!("I can't help with that.");
    expect(&gw, &a, ask("Hi there", false), Reply::json(refused), "refusal").await;
    let events = [
        format!("data: {}\n\n", chunk(json!({"role": "assistant", "content": "", "refusal": "I can't"}), None)),
        format!("data: {}\n\n", chunk(json!({"content": "I cannot help with that."}), None)),
        format!("data: {}\n\n", chunk(json!({}), Some("content_filter"))),
        "data: [DONE]\n\n".to_string(),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    expect(&gw, &a, ask("Hi there", true), Reply::sse_raw(&events), "refusal").await;
}

#[tokio::test]
async fn json_signals_are_counted_whole_and_streamed() {
    let (a, b, gw) = setup().await;
    let fenced = "Here it is:\n```json\n{\"a\": 1}\n```";
    for stream in [false, true] {
        let reply = |text: &str| if stream { Reply::stream(&[text]) } else { Reply::text(text) };
        expect(&gw, &a, json_ask(stream), reply(fenced), "json_repaired").await;
        // Invalid after repair: the request moves on to `b`, and `a` counts it.
        if stream {
            b.push(Reply::stream(&[r#"{"from": "b"}"#]));
        }
        expect(&gw, &a, json_ask(stream), reply("no JSON here at all"), "json_invalid").await;
        expect(&gw, &a, json_ask(stream), reply(r#"{"a": 1}"#), "ok").await;
    }
}

fn weather_ask(stream: bool) -> Value {
    let mut body = ask("What's the weather in Paris?", stream);
    body["tools"] = json!([{"type": "function", "function": {"name": "weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    body
}

/// A streamed tool call, its arguments in two pieces.
fn streamed_call(name: &str, args: [&str; 2]) -> Reply {
    let call = |first: bool, piece: &str| {
        let mut tc = json!({"index": 0, "function": {"arguments": piece}});
        if first {
            tc = json!({"index": 0, "id": "c1", "type": "function", "function": {"name": name, "arguments": piece}});
        }
        format!("data: {}\n\n", chunk(json!({"tool_calls": [tc]}), None))
    };
    let events = [
        format!("data: {}\n\n", chunk(json!({"role": "assistant", "content": null}), None)),
        call(true, args[0]),
        call(false, args[1]),
        format!("data: {}\n\n", chunk(json!({}), Some("tool_calls"))),
        "data: [DONE]\n\n".to_string(),
    ];
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    Reply::sse_raw(&events)
}

#[tokio::test]
async fn invalid_tool_arguments_are_counted() {
    let (a, b, gw) = setup().await;
    let mut call = completion("");
    call["choices"][0]["message"] = json!({"role": "assistant", "content": null,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "not json"}}]});
    call["choices"][0]["finish_reason"] = json!("tool_calls");
    b.push(Reply::text("It is sunny."));
    expect(&gw, &a, weather_ask(false), Reply::json(call), "tool_args_invalid").await;
}

/// A stream without `response_format` is forwarded, not buffered: its tool
/// calls reach the client unchecked, and are judged at its end against the
/// tool's schema — the answer stands, the model's window counts it.
#[tokio::test]
async fn streamed_tool_arguments_are_judged_at_the_end_without_a_json_check() {
    let (a, _b, gw) = setup().await;
    // Arguments that miss the required `city`, sent in two pieces.
    expect(&gw, &a, weather_ask(true), streamed_call("weather", [r#"{"town""#, r#": "Paris"}"#]), "tool_args_invalid")
        .await;
    // Not JSON at all; and a tool the request did not offer.
    expect(&gw, &a, weather_ask(true), streamed_call("weather", ["{city: ", "Paris"]), "tool_args_invalid").await;
    expect(&gw, &a, weather_ask(true), streamed_call("news", [r#"{"city""#, r#": "Paris"}"#]), "tool_args_invalid")
        .await;
    // Valid as sent: `ok`.
    expect(&gw, &a, weather_ask(true), streamed_call("weather", [r#"{"city""#, r#": "Paris"}"#]), "ok").await;
    assert_eq!(count(&gw, "tool_args_invalid").await, 3.0);
    // The stream was served by `a` as it came: nothing moved on.
    assert_eq!(a.calls(), 4);
}

#[tokio::test]
async fn a_stream_that_needed_a_continuation_counts_for_the_model_that_broke() {
    let (a, b, gw) = setup().await;
    b.push(Reply::stream(&["ответа на вопрос."]));
    let broken = Reply::stream(&["Начало ", "ответа "]).cut_after(2);
    expect(&gw, &a, ask(RU, true), broken, "continued").await;
}

#[tokio::test]
async fn admin_state_shows_each_models_quality() {
    let (a, _b, gw) = setup().await;
    let english = "The browser keeps a copy of each response and reuses it while it is still fresh.";
    expect(&gw, &a, ask(RU, false), Reply::text(english), "wrong_script").await;
    expect(&gw, &a, ask("What is 2+2?", false), Reply::text("4"), "ok").await;
    let st = gw.admin_get("/admin/state", "adm").await;
    let m = &st["cascades"][0]["models"][0];
    assert_eq!(m["model"], "a/m");
    assert_eq!(m["quality"]["answers"], 2, "{m}");
    assert_eq!(m["quality"]["bad_share"], 0.5, "{m}");
    assert_eq!(m["quality"]["signals"]["wrong_script"], 0.5, "{m}");
    assert!(m["quality"]["demoted"].is_null(), "{m}");
}

/// `POST /v1/feedback` rates an answer by its request id, once: `bad`
/// counts the `feedback` signal in the answering model's window.
#[tokio::test]
async fn feedback_on_an_answer_feeds_its_models_window() {
    let (a, _b, gw) = setup().await;
    a.push(Reply::text("Paris is the capital of France."));
    let resp = client()
        .post(format!("{}/v1/chat/completions", gw.url))
        .header("x-request-id", "fb-1")
        .json(&ask("What is the capital of France?", false))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let feedback = |body: Value| {
        let url = format!("{}/v1/feedback", gw.url);
        async move { client().post(url).json(&body).send().await.unwrap() }
    };
    let r = feedback(json!({"request_id": "fb-1", "rating": "bad"})).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["model"], "a/m");
    assert_eq!(count(&gw, "feedback").await, 1.0);
    let st = gw.admin_get("/admin/state", "adm").await;
    assert_eq!(st["cascades"][0]["models"][0]["quality"]["answers"], 2, "the answer and its rating");
    // Once per answer; unknown ids and other ratings are refused.
    assert_eq!(feedback(json!({"request_id": "fb-1", "rating": "bad"})).await.status(), 404);
    assert_eq!(feedback(json!({"request_id": "nope", "rating": "good"})).await.status(), 404);
    assert_eq!(feedback(json!({"request_id": "fb-1", "rating": "meh"})).await.status(), 400);
}

/// With client keys, an answer is rated only by the caller that asked for
/// it: the virtual key that made the request (another key gets the 404 of
/// an unknown id, in OpenAI's error shape, and the answer stays rateable),
/// the `server.api_keys` key, or the admin token; no key is a 401.
#[tokio::test]
async fn feedback_is_accepted_only_from_the_key_that_made_the_request() {
    let a = FakeUpstream::start().await;
    a.set_default(Reply::text("Paris is the capital of France."));
    let yaml = format!(
        "server:\n  admin_token: adm\n  api_keys: [plain-key-1]\nproviders:\n{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m]\n    quality: {{ window: 100, min_answers: 100 }}\nkeys:\n  - {{ id: team-a, key: sk-team-a-secret }}\n  - {{ id: team-b, key: sk-team-b-secret }}\n",
        openai_provider("a", &a)
    );
    let gw = start(&yaml).await;
    let asked = |key: &'static str, id: &'static str| {
        let url = format!("{}/v1/chat/completions", gw.url);
        async move {
            let body = ask("What is the capital of France?", false);
            let r = client().post(url).bearer_auth(key).header("x-request-id", id).json(&body).send().await.unwrap();
            assert_eq!(r.status(), 200, "{key}");
        }
    };
    let rate = |key: Option<&'static str>, id: &'static str| {
        let url = format!("{}/v1/feedback", gw.url);
        async move {
            let mut r = client().post(url).json(&json!({"request_id": id, "rating": "bad"}));
            if let Some(k) = key {
                r = r.bearer_auth(k);
            }
            let r = r.send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap_or_default())
        }
    };
    asked("sk-team-a-secret", "fb-team-a").await;
    asked("plain-key-1", "fb-plain").await;
    asked("sk-team-a-secret", "fb-admin").await;
    // Another virtual key, or a plain key: the 404 of an unknown id.
    let (status, body) = rate(Some("sk-team-b-secret"), "fb-team-a").await;
    assert_eq!(status, 404, "{body}");
    assert!(body["error"]["message"].is_string() && body["error"]["type"].is_string(), "OpenAI's error shape: {body}");
    assert_eq!(rate(Some("plain-key-1"), "fb-team-a").await.0, 404);
    assert_eq!(rate(None, "fb-team-a").await.0, 401);
    assert_eq!(rate(Some("sk-unknown"), "fb-team-a").await.0, 401);
    // The key that made it may, once.
    let (status, body) = rate(Some("sk-team-a-secret"), "fb-team-a").await;
    assert_eq!((status, body["model"].as_str()), (200, Some("a/m")), "{body}");
    assert_eq!(rate(Some("sk-team-a-secret"), "fb-team-a").await.0, 404);
    // A plain key's request: not a virtual key's to rate; the plain key's.
    assert_eq!(rate(Some("sk-team-a-secret"), "fb-plain").await.0, 404);
    assert_eq!(rate(Some("plain-key-1"), "fb-plain").await.0, 200);
    // The admin token may rate any answer.
    assert_eq!(rate(Some("adm"), "fb-admin").await.0, 200);
    assert_eq!(count(&gw, "feedback").await, 3.0);
}
