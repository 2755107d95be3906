//! Native adapters in a cascade: a tool-calling conversation that crosses
//! wire formats (`gigachat → yandex → local`) with the OpenAI Python SDK's
//! request shapes, and GigaChat's OAuth token cache (one refresh under
//! concurrency, refresh before expiry, one retry after a 401).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

mod common;

use common::*;
use serde_json::{json, Value};
use test_upstreams::{gigachat, yandex};

struct Support {
    giga: FakeUpstream,
    oauth: FakeUpstream,
    ya: FakeUpstream,
    local: FakeUpstream,
    gw: TestGateway,
}

async fn support() -> Support {
    let giga = FakeUpstream::start_at(gigachat::CHAT_PATH).await;
    let oauth = FakeUpstream::start_at(gigachat::OAUTH_PATH).await;
    oauth.set_default(gigachat::token("tok-1", gigachat::expiry_in(1800)));
    let ya = FakeUpstream::start_at(yandex::COMPLETION_PATH).await;
    let local = FakeUpstream::start().await;
    let yaml = format!(
        "providers:
  gigachat:
    kind: gigachat
    base_url: {giga}/api/v1
    auth_url: {oauth}{oauth_path}
    auth_key: dGVzdDp0ZXN0
    scope: GIGACHAT_API_PERS
  yandex:
    kind: yandex
    base_url: {ya}
    api_key: test-yandex-key
    folder_id: b1gfolder
{local}{FAST_HEALTH}cascades:
  support:
    models: [gigachat/GigaChat-Pro, yandex/yandexgpt/latest, local/t-lite]
",
        giga = giga.origin(),
        oauth = oauth.origin(),
        oauth_path = gigachat::OAUTH_PATH,
        ya = ya.origin(),
        local = openai_provider("local", &local),
    );
    let gw = start(&yaml).await;
    Support { giga, oauth, ya, local, gw }
}

fn tools() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])
}

/// What `client.chat.completions.create(model=..., messages=..., tools=...,
/// tool_choice="auto")` sends.
fn sdk_request(messages: Value) -> Value {
    json!({"model": "support", "messages": messages, "tools": tools(), "tool_choice": "auto"})
}

/// The assistant message as the SDK sends it back in the history
/// (`messages.append(response.choices[0].message)`).
fn echo_assistant(message: &Value) -> Value {
    json!({"role": "assistant", "content": message["content"], "refusal": null,
           "tool_calls": message["tool_calls"]})
}

#[tokio::test]
async fn tool_conversation_crosses_wire_formats() {
    let s = support().await;
    let user = json!({"role": "user", "content": "Погода в Осло?"});

    // Turn 1: GigaChat calls the function; the client sees an OpenAI call.
    s.giga.push(gigachat::function_call("get_weather", json!({"city": "Oslo"})));
    let resp = s.gw.post(&sdk_request(json!([user]))).await;
    assert_eq!(header(&resp, "x-spillway-model"), "gigachat/GigaChat-Pro");
    let body: Value = resp.json().await.unwrap();
    assert_valid("CreateChatCompletionResponse", &body);
    let message = &body["choices"][0]["message"];
    let call = &message["tool_calls"][0];
    let call_id = call["id"].as_str().unwrap().to_string();
    assert!(call_id.starts_with("call_"));
    assert_eq!(
        call["function"]["arguments"].as_str().map(|a| serde_json::from_str::<Value>(a).unwrap()),
        Some(json!({"city": "Oslo"}))
    );

    // Turn 2: GigaChat is down (a 5xx, so no dead mark); Yandex gets the result, matched to
    // the function through GigaChat's made-up id, and calls again.
    let history = json!([user, echo_assistant(message),
        {"role": "tool", "tool_call_id": call_id, "content": "{\"temp_c\": 4}"}]);
    s.giga.push(gigachat::error(503, "Unavailable"));
    s.ya.push(yandex::tool_call("get_weather", json!({"city": "Bergen"})));
    let resp = s.gw.post(&sdk_request(history.clone())).await;
    assert_eq!(header(&resp, "x-spillway-model"), "yandex/yandexgpt/latest");
    let body: Value = resp.json().await.unwrap();
    assert_valid("CreateChatCompletionResponse", &body);
    let ya_req = &s.ya.requests()[0];
    let results = ya_req["messages"].as_array().unwrap().iter().find_map(|m| m.get("toolResultList")).unwrap();
    assert_eq!(results["toolResults"][0]["functionResult"]["name"], "get_weather");
    assert_eq!(results["toolResults"][0]["functionResult"]["content"], "{\"temp_c\": 4}");
    let message2 = &body["choices"][0]["message"];
    let call2_id = message2["tool_calls"][0]["id"].as_str().unwrap().to_string();
    assert_ne!(call2_id, call_id);

    // Turn 3: GigaChat and Yandex fail; the local OpenAI model gets both
    // foreign ids unchanged and answers.
    let mut history = history.as_array().unwrap().clone();
    history.push(echo_assistant(message2));
    history.push(json!({"role": "tool", "tool_call_id": call2_id, "content": "{\"temp_c\": 7}"}));
    s.giga.push(gigachat::error(502, "Bad gateway"));
    s.ya.push(yandex::error(500, 13, "internal"));
    s.local.push(Reply::text("Oslo 4 °C, Bergen 7 °C."));
    let resp = s.gw.post(&sdk_request(Value::Array(history))).await;
    assert_eq!(header(&resp, "x-spillway-model"), "local/t-lite");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "Oslo 4 °C, Bergen 7 °C.");
    let local_req = &s.local.requests()[0];
    assert_eq!(local_req["messages"][1]["tool_calls"][0]["id"], call_id.as_str());
    assert_eq!(local_req["messages"][4]["tool_call_id"], call2_id.as_str());
    assert_eq!(local_req["tools"], tools());
    // One token served every GigaChat call.
    assert_eq!(s.oauth.calls(), 1);
    assert_eq!(s.giga.calls(), 3);
}

#[tokio::test]
async fn gigachat_sends_the_oauth_request_sber_expects() {
    let s = support().await;
    s.gw.post(&chat("support", false)).await;
    let headers = &s.oauth.request_headers()[0];
    assert_eq!(headers["authorization"], "Basic dGVzdDp0ZXN0");
    let rquid = headers["rquid"].to_str().unwrap();
    assert_eq!(rquid.len(), 36);
    assert_eq!(&rquid[14..15], "4", "a uuid4: {rquid}");
    assert_eq!(headers["content-type"], "application/x-www-form-urlencoded");
    assert_eq!(&s.oauth.raw_requests()[0][..], b"scope=GIGACHAT_API_PERS");
    assert_eq!(s.giga.request_headers()[0]["authorization"], "Bearer tok-1");
}

#[tokio::test]
async fn one_token_refresh_under_concurrency() {
    let s = support().await;
    s.oauth.set_default(
        gigachat::token("tok-slow", gigachat::expiry_in(1800)).delay(std::time::Duration::from_millis(200)),
    );
    let body = chat("support", false);
    let posts = (0..20).map(|_| s.gw.post(&body));
    let responses = futures_util::future::join_all(posts).await;
    assert!(responses.iter().all(|r| r.status() == 200));
    assert_eq!(s.oauth.calls(), 1, "one refresh for 20 concurrent requests");
    assert_eq!(s.giga.calls(), 20);
}

#[tokio::test]
async fn token_is_refreshed_before_it_expires() {
    let s = support().await;
    // Expires in 10 s: inside the refresh margin, so the next request
    // refreshes; the second token lasts and is reused.
    s.oauth.push(gigachat::token("tok-short", gigachat::expiry_in(10)));
    s.oauth.push(gigachat::token("tok-long", gigachat::expiry_in(1800)));
    for _ in 0..3 {
        assert_eq!(s.gw.post(&chat("support", false)).await.status(), 200);
    }
    assert_eq!(s.oauth.calls(), 2);
    let used: Vec<String> =
        s.giga.request_headers().iter().map(|h| h["authorization"].to_str().unwrap().to_string()).collect();
    assert_eq!(used, ["Bearer tok-short", "Bearer tok-long", "Bearer tok-long"]);
}

#[tokio::test]
async fn a_401_refreshes_once_and_retries() {
    let s = support().await;
    s.oauth.push(gigachat::token("tok-revoked", gigachat::expiry_in(1800)));
    s.oauth.push(gigachat::token("tok-new", gigachat::expiry_in(1800)));
    s.giga.push(gigachat::error(401, "Token has expired"));
    s.giga.push(gigachat::text("after refresh"));
    let resp = s.gw.post(&chat("support", false)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "gigachat/GigaChat-Pro");
    assert_eq!(s.oauth.calls(), 2);
    assert_eq!(s.giga.request_headers()[1]["authorization"], "Bearer tok-new");
    // A 401 that survives the refresh is a wrong key: the next model serves.
    s.giga.push(gigachat::error(401, "Unauthorized"));
    s.giga.push(gigachat::error(401, "Unauthorized"));
    s.ya.push(yandex::text("from yandex"));
    let resp = s.gw.post(&chat("support", false)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "yandex/yandexgpt/latest");
    assert_eq!(s.oauth.calls(), 3);
    assert_eq!(s.giga.calls(), 4);
}
