//! Stored responses: what a second turn of the Responses API takes from the
//! first (`previous_response_id`, `item_reference`), `GET`, `DELETE` and
//! `input_items`, whole and streamed, per client key, in the embedded store
//! and in Redis; `store: false` and `responses.store: false` keep nothing.

use super::common::*;
use super::redis_support;
use super::support::*;
use serde_json::{json, Value};
use test_upstreams::schema::assert_valid_responses;

fn temp_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("spillway-stored-{name}-{}-{}", std::process::id(), fastrand::u64(..)))
}

/// A gateway on one upstream with client keys `k1`, `k2` and `state`.
fn config(up: &FakeUpstream, state: &str, extra: &str) -> String {
    format!(
        "server:\n  api_keys: [k1, k2]\n{state}providers:\n{}    models: [{{ id: m }}]\n{FAST_HEALTH}cascades:\n  chat:\n    models: [up/m]\n{extra}",
        openai_provider("up", up)
    )
}

async fn call(
    gw: &TestGateway,
    key: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<&Value>,
) -> reqwest::Response {
    let mut r = client().request(method, format!("{}{path}", gw.url)).bearer_auth(key);
    if let Some(b) = body {
        r = r.json(b);
    }
    r.send().await.unwrap()
}

/// `POST /v1/responses` as `key`; the response object (from the last event when streamed).
async fn turn(gw: &TestGateway, key: &str, body: Value) -> Value {
    let stream = body["stream"].as_bool() == Some(true);
    let resp = call(gw, key, reqwest::Method::POST, "/v1/responses", Some(&body)).await;
    assert_eq!(resp.status(), 200, "{body}");
    if stream {
        let events = named_events(resp).await;
        events.last().unwrap().1["response"].clone()
    } else {
        resp.json().await.unwrap()
    }
}

async fn get(gw: &TestGateway, key: &str, path: &str) -> (u16, Value) {
    let resp = call(gw, key, reqwest::Method::GET, path, None).await;
    (resp.status().as_u16(), resp.json().await.unwrap())
}

/// The whole conversation across turns, whole and streamed, by
/// `previous_response_id` and by item references.
async fn conversation(gw: &TestGateway, up: &FakeUpstream) {
    for stream in [false, true] {
        let reply = |t: &str| if stream { Reply::stream(&[t]) } else { Reply::text(t) };
        up.push(reply("Paris."));
        let first = turn(gw, "k1", json!({"model": "chat", "input": "Capital of France?", "stream": stream})).await;
        assert_eq!(first["store"], true);
        let id = first["id"].as_str().unwrap().to_string();
        // Readable at once, by its key only.
        let (status, got) = get(gw, "k1", &format!("/v1/responses/{id}")).await;
        assert_eq!(status, 200);
        assert_valid_responses("Response", &got);
        assert_eq!(got["output"][0]["content"][0]["text"], "Paris.");
        let (status, e) = get(gw, "k2", &format!("/v1/responses/{id}")).await;
        assert_eq!((status, e["error"]["message"].as_str().unwrap().contains(&id)), (404, true));
        // The next turn by previous_response_id: the upstream gets the history.
        up.push(reply("About 2 million."));
        let second = turn(
            gw,
            "k1",
            json!({"model": "chat", "input": "Its population?", "previous_response_id": id,
            "instructions": "Be brief.", "stream": stream}),
        )
        .await;
        assert_eq!(second["previous_response_id"], id.as_str());
        let sent = up.requests().last().unwrap().clone();
        let texts: Vec<String> =
            sent["messages"].as_array().unwrap().iter().map(|m| m["content"].to_string()).collect();
        assert_eq!(sent["messages"][0], json!({"role": "system", "content": "Be brief."}), "{texts:?}");
        assert!(
            texts[1].contains("Capital of France?")
                && texts[2].contains("Paris.")
                && texts[3].contains("Its population?"),
            "{texts:?}"
        );
        // A third turn by item references (the AI SDK's way), chained on.
        let out_id = second["output"][0]["id"].as_str().unwrap().to_string();
        up.push(reply("Yes."));
        let third = turn(
            gw,
            "k1",
            json!({"model": "chat", "stream": stream, "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Its population?"}]},
            {"type": "item_reference", "id": out_id},
            {"role": "user", "content": "Sure?"}]}),
        )
        .await;
        let sent = up.requests().last().unwrap().clone();
        assert_eq!(sent["messages"][1], json!({"role": "assistant", "content": "About 2 million."}));
        // input_items: this turn's own items, references resolved, newest first.
        let third_id = third["id"].as_str().unwrap();
        let (status, list) = get(gw, "k1", &format!("/v1/responses/{third_id}/input_items")).await;
        assert_eq!(status, 200);
        assert_eq!((list["object"].as_str(), list["has_more"].as_bool()), (Some("list"), Some(false)));
        let data = list["data"].as_array().unwrap();
        assert_eq!(data.len(), 3);
        assert_eq!(data[1]["id"], out_id.as_str());
        assert_eq!(data[0]["content"], "Sure?");
        // Another key's references and chains find nothing.
        let resp = call(
            gw,
            "k2",
            reqwest::Method::POST,
            "/v1/responses",
            Some(&json!({"model": "chat", "input": "x", "previous_response_id": id, "stream": stream})),
        )
        .await;
        assert_eq!(resp.status(), 400);
        let e: Value = resp.json().await.unwrap();
        assert_eq!(
            (e["error"]["code"].as_str(), e["error"]["param"].as_str()),
            (Some("previous_response_not_found"), Some("previous_response_id"))
        );
        let resp = call(
            gw,
            "k2",
            reqwest::Method::POST,
            "/v1/responses",
            Some(&json!({"model": "chat", "input": [{"id": out_id}], "stream": stream})),
        )
        .await;
        assert_eq!(resp.status(), 400);
        assert_eq!(resp.json::<Value>().await.unwrap()["error"]["param"], "input[0]");
        // Deleted, then gone; another key cannot delete it.
        let resp = call(gw, "k2", reqwest::Method::DELETE, &format!("/v1/responses/{id}"), None).await;
        assert_eq!(resp.status(), 404);
        let resp = call(gw, "k1", reqwest::Method::DELETE, &format!("/v1/responses/{id}"), None).await;
        assert_eq!(resp.json::<Value>().await.unwrap(), json!({"id": id, "object": "response", "deleted": true}));
        assert_eq!(get(gw, "k1", &format!("/v1/responses/{id}")).await.0, 404);
        // `store: false`: answered, not kept.
        up.push(reply("Fine."));
        let unkept = turn(gw, "k1", json!({"model": "chat", "input": "x", "store": false, "stream": stream})).await;
        assert_eq!(unkept["store"], false);
        assert_eq!(get(gw, "k1", &format!("/v1/responses/{}", unkept["id"].as_str().unwrap())).await.0, 404);
    }
    let (status, e) = get(gw, "nope", "/v1/responses/resp_1").await;
    assert_eq!((status, e["error"]["code"].as_str()), (401, Some("invalid_api_key")));
}

#[tokio::test]
async fn turns_build_on_stored_responses_in_the_embedded_store() {
    let up = FakeUpstream::start().await;
    let dir = temp_dir("sqlite");
    let gw = start(&config(&up, &format!("state:\n  data_dir: {}\n", dir.display()), "")).await;
    conversation(&gw, &up).await;
    assert!(dir.join("responses.sqlite3").exists());
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn turns_build_on_stored_responses_in_redis_across_instances() {
    let Some((url, _server)) = redis_support::any_redis("stored responses in redis").await else { return };
    let up = FakeUpstream::start().await;
    let dir = temp_dir("redis");
    let state = format!(
        "state:\n  backend: redis\n  redis_url: {url}\n  key_prefix: \"{}\"\n  data_dir: {}\n",
        redis_support::unique_prefix("stored"),
        dir.display()
    );
    let gw = start(&config(&up, &state, "")).await;
    conversation(&gw, &up).await;
    // Another instance on the same Redis reads what this one stored.
    up.push(Reply::text("Kept."));
    let r = turn(&gw, "k1", json!({"model": "chat", "input": "hi"})).await;
    let other = start(&config(&up, &state, "")).await;
    let (status, got) = get(&other, "k1", &format!("/v1/responses/{}", r["id"].as_str().unwrap())).await;
    assert_eq!((status, got["output"][0]["content"][0]["text"].as_str()), (200, Some("Kept.")));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_gateway_that_keeps_nothing_says_so() {
    let up = FakeUpstream::start().await;
    up.set_default(Reply::text("ok"));
    let gw = start(&config(&up, "", "responses:\n  store: false\n")).await;
    let r = turn(&gw, "k1", json!({"model": "chat", "input": "hi"})).await;
    assert_eq!(r["store"], false);
    assert_eq!(get(&gw, "k1", &format!("/v1/responses/{}", r["id"].as_str().unwrap())).await.0, 404);
    for body in [
        json!({"model": "chat", "input": "x", "previous_response_id": r["id"]}),
        json!({"model": "chat", "input": [{"type": "item_reference", "id": "msg_1"}]}),
    ] {
        let resp = call(&gw, "k1", reqwest::Method::POST, "/v1/responses", Some(&body)).await;
        assert_eq!(resp.status(), 400);
        let msg = resp.json::<Value>().await.unwrap()["error"]["message"].as_str().unwrap().to_string();
        assert!(msg.contains("responses.store: false") && msg.contains("store: false"), "{msg}");
    }
    let bad = config(&up, "", "responses:\n  retention: 0s\n  max_stored: 0\n");
    let err = spillway::config::load_str(&bad, None, &|_| None).unwrap_err().to_string();
    assert!(err.contains("responses.retention") && err.contains("responses.max_stored"), "{err}");
}
