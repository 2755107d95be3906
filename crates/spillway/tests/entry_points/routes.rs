//! `GET /v1/models/{id}` and the OpenAI-shaped 404 of unknown routes.

use super::common::*;
use serde_json::Value;

fn yaml() -> &'static str {
    "providers:\n  p:\n    kind: mock\n    models: [{ id: m }, { id: e, dimensions: 8 }]\ncascades:\n  chat:\n    models: [p/m]\n  vectors:\n    kind: embedding\n    models: [p/e]\n"
}

#[tokio::test]
async fn one_model_by_id_cascade_or_ref() {
    let gw = start(yaml()).await;
    let m: Value = gw.get("/v1/models/chat").await.json().await.unwrap();
    assert_valid("Model", &m);
    assert_eq!((m["id"].as_str(), m["spillway_models"][0].as_str()), (Some("chat"), Some("p/m")));
    let resp = gw.get("/v1/models/p/e").await;
    assert_eq!(resp.status(), 200);
    let m: Value = resp.json().await.unwrap();
    assert_valid("Model", &m);
    assert_eq!((m["id"].as_str(), m["owned_by"].as_str()), (Some("p/e"), Some("p")));
    let list: Value = gw.get("/v1/models").await.json().await.unwrap();
    assert_valid("ListModelsResponse", &list);
    assert!(list["data"].as_array().unwrap().iter().any(|m| m["id"] == "vectors" && m["spillway_kind"] == "embedding"));
    let resp = gw.get("/v1/models/nope").await;
    assert_eq!(resp.status(), 404);
    let e: Value = resp.json().await.unwrap();
    assert_valid("ErrorResponse", &e);
    assert_eq!(e["error"]["code"], "model_not_found");
}

#[tokio::test]
async fn an_unknown_route_is_an_openai_404_naming_the_routes() {
    let gw = start(yaml()).await;
    for resp in [gw.get("/v1/nothing-here").await, client().post(format!("{}/v1/nope", gw.url)).send().await.unwrap()] {
        assert_eq!(resp.status(), 404);
        let e: Value = resp.json().await.unwrap();
        assert_valid("ErrorResponse", &e);
        let msg = e["error"]["message"].as_str().unwrap();
        for route in [
            "/v1/chat/completions",
            "/v1/completions",
            "/v1/responses",
            "/v1/responses/{id}",
            "/v1/messages",
            "/v1/embeddings",
            "/v1/models/{id}",
            "/health",
        ] {
            assert!(msg.contains(route), "{msg}");
        }
    }
}

#[tokio::test]
async fn litellm_habits_routes_without_v1_health_and_legacy_completions() {
    let up = FakeUpstream::start().await;
    let yaml = format!(
        "providers:\n{}    models: [{{ id: m }}]\n{FAST_HEALTH}cascades:\n  chat:\n    models: [up/m]\n",
        openai_provider("up", &up)
    );
    let gw = start(&yaml).await;
    // /health answers as /readyz does; the client routes answer without /v1.
    let health: Value = gw.get("/health").await.json().await.unwrap();
    assert_eq!(health["status"], "ready");
    assert_eq!(gw.get("/models").await.status(), 200);
    assert_eq!(gw.get("/models/chat").await.status(), 200);
    up.push(Reply::text("Hi there"));
    let resp = client().post(format!("{}/chat/completions", gw.url)).json(&chat("chat", false)).send().await.unwrap();
    assert_eq!((resp.status().as_u16(), header(&resp, "x-spillway-model")), (200, "up/m"));
    // Legacy completions: a prompt as one user message, 16 tokens unless asked, a text_completion back.
    up.push(Reply::text("Hello"));
    let body = serde_json::json!({"model": "chat", "prompt": "Say hi", "echo": true});
    let resp = client().post(format!("{}/v1/completions", gw.url)).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let c: Value = resp.json().await.unwrap();
    assert_eq!(
        (c["object"].as_str(), c["choices"][0]["text"].as_str()),
        (Some("text_completion"), Some("Say hiHello"))
    );
    let sent = up.requests().last().unwrap().clone();
    assert_eq!(sent["messages"], serde_json::json!([{"role": "user", "content": "Say hi"}]));
    assert_eq!(sent["max_tokens"], 16);
    up.push(Reply::stream(&["Hel", "lo"]));
    let body = serde_json::json!({"model": "chat", "prompt": "Say hi", "stream": true, "max_tokens": 5});
    let resp = client().post(format!("{}/completions", gw.url)).json(&body).send().await.unwrap();
    let events = sse_events(resp).await;
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let text: String = events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e).ok())
        .inspect(|v| assert_eq!(v["object"], "text_completion"))
        .filter_map(|v| v["choices"][0]["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(text, "Hello");
    let resp = client()
        .post(format!("{}/v1/completions", gw.url))
        .json(&serde_json::json!({"model": "chat", "prompt": [1, 2]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["param"], "prompt");
}

/// A known path with the wrong method is a 405 in its API's shape — OpenAI's
/// error object, Anthropic's under `/v1/messages` — with `allow` kept.
#[tokio::test]
async fn a_wrong_method_is_a_405_in_the_routes_own_shape_with_allow() {
    let gw = start(yaml()).await;
    let c = client();
    let openai = [
        c.get(format!("{}/v1/chat/completions", gw.url)).send().await.unwrap(),
        c.get(format!("{}/v1/responses", gw.url)).send().await.unwrap(),
        c.get(format!("{}/v1/embeddings", gw.url)).send().await.unwrap(),
        c.delete(format!("{}/v1/chat/completions", gw.url)).send().await.unwrap(),
    ];
    for resp in openai {
        assert_eq!(resp.status(), 405);
        assert_eq!(header(&resp, "allow"), "POST");
        assert!(!header(&resp, "x-request-id").is_empty());
        let e: Value = resp.json().await.unwrap();
        assert_valid("ErrorResponse", &e);
        assert_eq!(e["error"]["code"], "method_not_allowed");
        assert!(e["error"]["message"].as_str().unwrap().contains("allow"), "{e}");
    }
    let resp = c.post(format!("{}/v1/models", gw.url)).send().await.unwrap();
    assert_eq!((resp.status().as_u16(), header(&resp, "allow")), (405, "GET,HEAD"));
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["type"], "invalid_request_error");
    for path in ["/v1/messages", "/v1/messages/count_tokens"] {
        let resp = c.get(format!("{}{path}", gw.url)).send().await.unwrap();
        assert_eq!((resp.status().as_u16(), header(&resp, "allow")), (405, "POST"));
        let id = header(&resp, "request-id").to_string();
        let e: Value = resp.json().await.unwrap();
        assert_eq!((e["type"].as_str(), e["error"]["type"].as_str()), (Some("error"), Some("invalid_request_error")));
        assert_eq!(e["request_id"].as_str(), Some(id.as_str()));
    }
}
