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
    for resp in [gw.get("/v1/completions").await, client().post(format!("{}/v1/nope", gw.url)).send().await.unwrap()] {
        assert_eq!(resp.status(), 404);
        let e: Value = resp.json().await.unwrap();
        assert_valid("ErrorResponse", &e);
        let msg = e["error"]["message"].as_str().unwrap();
        for route in ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/embeddings", "/v1/models/{id}"] {
            assert!(msg.contains(route), "{msg}");
        }
    }
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
