//! `kind: gemini`: the model's URL (`:generateContent`, or
//! `:streamGenerateContent?alt=sse`, which whole requests use too), the
//! `x-goog-api-key` header, JSON mode as `responseMimeType` +
//! `responseJsonSchema`, a stream that ends without a finish, and a free
//! tier found by discovery serving a `free_only` cascade.

use super::common::*;
use super::file_gateway::{FileGateway, TempDir};
use super::json_request;
use serde_json::{json, Value};
use test_upstreams::gemini;

fn config(up: &FakeUpstream, extra: &str) -> String {
    format!(
        "providers:
  g:
    kind: gemini
    base_url: {}{}
    api_key: test-key-g
    models: [ {{ id: gemini-2.5-flash }} ]
{extra}{FAST_HEALTH}cascades:
  chat: {{ models: [g/gemini-2.5-flash] }}
",
        up.origin(),
        gemini::ROOT
    )
}

#[tokio::test]
async fn calls_name_the_model_and_send_the_key_in_its_header() {
    let up = FakeUpstream::start_at_any(&gemini::PATHS).await;
    let gw = start(&config(&up, "")).await;
    up.push(gemini::stream(&["who", "le"]));
    up.push(gemini::stream(&["stre", "amed"]));
    let body: Value = gw.post(&chat("chat", false)).await.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "whole");
    let events = sse_events(gw.post(&chat("chat", true)).await).await;
    assert_eq!(streamed_text(&events), "streamed");
    // A whole request is read as a stream (`whole_as_stream`), so both
    // went to the streaming URL.
    for (uri, headers) in up.request_uris().iter().zip(up.request_headers()) {
        assert_eq!(uri, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
        assert_eq!(headers["x-goog-api-key"], "test-key-g");
        assert!(headers.get("authorization").is_none());
    }
    let whole = FakeUpstream::start_at_any(&gemini::PATHS).await;
    let gw = start(&config(&whole, "    whole_as_stream: false\n")).await;
    whole.push(gemini::text("one body"));
    let body: Value = gw.post(&chat("chat", false)).await.json().await.unwrap();
    assert_valid("CreateChatCompletionResponse", &body);
    assert_eq!(body["choices"][0]["message"]["content"], "one body");
    assert_eq!(body["usage"]["completion_tokens"], 19, "candidates + thoughts");
    assert_eq!(whole.request_uris()[0], "/v1beta/models/gemini-2.5-flash:generateContent");
}

#[tokio::test]
async fn json_mode_is_the_response_mime_type_and_schema_whole_and_streamed() {
    let up = FakeUpstream::start_at_any(&gemini::PATHS).await;
    let gw = start(&config(&up, "")).await;
    up.push(gemini::stream(&["{\"city\": ", "\"Oslo\"}"]));
    up.push(gemini::stream(&["{\"city\": ", "\"Bergen\"}"]));
    let body: Value = gw.post(&json_request(false)).await.json().await.unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap(),
        json!({"city": "Oslo"})
    );
    let events = sse_events(gw.post(&json_request(true)).await).await;
    assert_eq!(serde_json::from_str::<Value>(&streamed_text(&events)).unwrap(), json!({"city": "Bergen"}));
    for req in up.requests() {
        assert_eq!(req["generationConfig"]["responseMimeType"], "application/json", "{req}");
        assert_eq!(req["generationConfig"]["responseJsonSchema"]["required"], json!(["city"]));
        assert!(req.get("response_format").is_none());
    }
}

#[tokio::test]
async fn a_stream_that_closes_without_a_finish_reason_ends_with_an_error() {
    let up = FakeUpstream::start_at_any(&gemini::PATHS).await;
    let gw = start(&config(&up, "")).await;
    // The events of a text answer without the last one (which has the finishReason).
    let events = gemini::stream_events(&["Once", " upon", " a time"]);
    let raw: Vec<String> = events[..2].iter().map(|e| format!("data: {e}\n\n")).collect();
    up.push(Reply::sse_raw(&raw.iter().map(String::as_str).collect::<Vec<_>>()));
    let events = sse_events(gw.post(&chat("chat", true)).await).await;
    assert_eq!(streamed_text(&events), "Once upon");
    assert!(events.iter().any(|e| e.contains("\"error\"")), "the client is told: {events:?}");
}

#[tokio::test]
async fn the_free_tier_is_discovered_and_serves_a_free_only_cascade() {
    let up = FakeUpstream::start_at_any(&gemini::PATHS).await;
    up.route(
        &format!("{}/models", gemini::ROOT),
        gemini::models(
            &[
                ("gemini-2.5-flash", 1_048_576, &["generateContent", "countTokens"]),
                ("gemini-2.5-pro", 1_048_576, &["generateContent"]),
                ("text-embedding-004", 2048, &["embedContent"]),
            ],
            Some("the-same-page"),
        ),
    );
    let dir = TempDir::new("cloud-gemini-free");
    let yaml = format!(
        "state: {{ data_dir: {} }}
providers:
  g:
    kind: gemini
    base_url: {}{}
    api_key: test-key-g
    discovery: {{ enabled: true }}
  paid:
    kind: openai
    base_url: {}
    models: [ {{ id: big, price_per_1m: {{ input: 1, output: 1 }} }} ]
discovery: {{ interval: 12h, cache_ttl: 24h }}
cascades:
  free:
    strategy: quality_first
    providers: [g, paid]
    filters: {{ free_only: true, min_context: 100000 }}
    size: 5
{FAST_HEALTH}",
        dir.path().display(),
        up.origin(),
        gemini::ROOT,
        up.base_url(),
    );
    let gw = FileGateway::start(dir.path(), &yaml).await;
    let mut plan = gw.wait_plan("free", |p| p.len() == 2).await;
    plan.sort();
    assert_eq!(plan, ["g/gemini-2.5-flash", "g/gemini-2.5-pro"], "the free tier's models, not the paid one");
    up.push(gemini::stream(&["free"]));
    let resp =
        client().post(format!("{}/v1/chat/completions", gw.url)).json(&chat("free", false)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(header(&resp, "x-spillway-model").starts_with("g/gemini-2.5-"));
    gw.stop().await;
}
