//! `POST /v1/embeddings`: embedding cascades with fallback across models
//! of one dimension on the chat health rules, base64 and batches, the
//! mock's deterministic vectors, cost and metrics, and the config rule
//! that keeps an embedding cascade to one dimension.

use super::common::*;
use super::support::*;
use base64::Engine as _;
use serde_json::{json, Value};
use test_upstreams::schema::assert_valid_responses;

fn vectors_reply(vectors: &[Vec<f32>]) -> Reply {
    let data: Vec<Value> =
        vectors.iter().enumerate().map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v})).collect();
    Reply::json(
        json!({"object": "list", "data": data, "model": "emb", "usage": {"prompt_tokens": 6, "total_tokens": 6}}),
    )
}

fn yaml(a: &FakeUpstream, b: &FakeUpstream) -> String {
    format!(
        "providers:\n{}    models: [{{ id: emb, dimensions: 4, price_per_1m: {{ input: 1000000, output: 0 }} }}]\n{}    models: [{{ id: emb, dimensions: 4 }}]\n  mock:\n    kind: mock\n    models: [{{ id: vec, dimensions: 16 }}, {{ id: chatty }}]\n{FAST_HEALTH}cascades:\n  chat:\n    models: [mock/chatty]\n  vectors:\n    kind: embedding\n    models: [a/emb, b/emb]\n  local:\n    kind: embedding\n    models: [mock/vec]\n",
        openai_provider("a", a),
        openai_provider("b", b),
    )
}

async fn embed(gw: &TestGateway, body: &Value) -> reqwest::Response {
    post(gw, "/v1/embeddings", body, &[]).await
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

fn decode(s: &str) -> Vec<f32> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(s).unwrap();
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
}

#[tokio::test]
async fn a_failing_model_falls_back_to_the_next_of_the_same_dimension() {
    let (a, b) = (FakeUpstream::start_at("/embeddings").await, FakeUpstream::start_at("/embeddings").await);
    a.push(Reply::error(503, "overloaded", "later"));
    b.set_default(vectors_reply(&[vec![0.5, 0.5, 0.5, 0.5], vec![1.0, 0.0, 0.0, 0.0]]));
    let gw = start(&yaml(&a, &b)).await;
    let resp = embed(&gw, &json!({"model": "vectors", "input": ["one", "two"]})).await;
    assert_eq!(resp.status(), 200);
    assert_eq!((header(&resp, "x-spillway-model"), header(&resp, "x-spillway-cascade")), ("b/emb", "vectors"));
    assert_eq!(header(&resp, "x-spillway-attempts"), "2");
    let body: Value = resp.json().await.unwrap();
    assert_valid_responses("CreateEmbeddingResponse", &body);
    assert_eq!(body["model"], "b/emb");
    assert_eq!(floats(&body["data"][1]["embedding"]), vec![1.0, 0.0, 0.0, 0.0]);
    assert_eq!(body["usage"]["prompt_tokens"], 6);
    // Floats are asked for upstream, and the input is passed as an array.
    let sent = &b.requests()[0];
    assert_eq!((sent["model"].as_str(), sent["encoding_format"].as_str()), (Some("emb"), Some("float")));
    assert_eq!(sent["input"], json!(["one", "two"]));
    assert_eq!(a.request_headers()[0]["authorization"], "Bearer test-key-a");
    assert_eq!(a.calls(), 1);
}

/// An upstream vector holding a value past f32's range (`1e39`), or a NaN
/// sent as base64, is a broken answer: the next model of the cascade
/// serves, and the client never sees `null` in a vector.
#[tokio::test]
async fn vectors_with_nan_or_infinity_fail_the_attempt_and_the_next_model_serves() {
    let nan_b64 = base64::engine::general_purpose::STANDARD
        .encode([0.5f32, f32::NAN, 0.5, 0.5].iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>());
    let huge = Reply::raw(
        200,
        "application/json",
        r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,1e39,0.5,0.5]}],"model":"emb","usage":{"prompt_tokens":6,"total_tokens":6}}"#,
    );
    let nan =
        Reply::json(json!({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": nan_b64}],
        "model": "emb", "usage": {"prompt_tokens": 6, "total_tokens": 6}}));
    for (bad, format) in [(huge, "float"), (nan, "base64")] {
        let (a, b) = (FakeUpstream::start_at("/embeddings").await, FakeUpstream::start_at("/embeddings").await);
        a.push(bad);
        b.set_default(vectors_reply(&[vec![0.5, 0.5, 0.5, 0.5]]));
        let gw = start(&yaml(&a, &b)).await;
        let resp = embed(&gw, &json!({"model": "vectors", "input": "x", "encoding_format": format})).await;
        assert_eq!(resp.status(), 200, "{format}");
        assert_eq!(header(&resp, "x-spillway-model"), "b/emb", "{format}");
        assert_eq!(header(&resp, "x-spillway-attempts"), "2");
        let body: Value = resp.json().await.unwrap();
        let served = match format {
            "float" => floats(&body["data"][0]["embedding"]),
            _ => decode(body["data"][0]["embedding"].as_str().unwrap()),
        };
        assert_eq!(served, vec![0.5; 4]);
        assert_eq!(a.calls(), 1);
    }
}

#[tokio::test]
async fn a_rate_limited_model_is_marked_dead_as_for_chat() {
    let (a, b) = (FakeUpstream::start_at("/embeddings").await, FakeUpstream::start_at("/embeddings").await);
    a.push(Reply::error(429, "rate_limit_exceeded", "slow down").header("retry-after", "600"));
    b.set_default(vectors_reply(&[vec![0.0, 1.0, 0.0, 0.0]]));
    let gw = start(&yaml(&a, &b)).await;
    for _ in 0..3 {
        let resp = embed(&gw, &json!({"model": "vectors", "input": "x"})).await;
        assert_eq!(header(&resp, "x-spillway-model"), "b/emb");
    }
    assert_eq!(a.calls(), 1, "the dead mark keeps the model out");
    let text = gw.get("/metrics").await.text().await.unwrap();
    assert!(
        text.contains("spillway_attempt_failures_total{cascade=\"vectors\",provider=\"a\",model=\"emb\",reason=\"rate_limited\"} 1"),
        "{text}"
    );
    assert!(text.contains("spillway_tokens_total{provider=\"b\",model=\"emb\",kind=\"input\"} 18"), "{text}");
}

#[tokio::test]
async fn cost_is_usage_times_price() {
    let (a, b) = (FakeUpstream::start_at("/embeddings").await, FakeUpstream::start_at("/embeddings").await);
    a.set_default(vectors_reply(&[vec![0.0, 0.0, 1.0, 0.0]]));
    let gw = start(&yaml(&a, &b)).await;
    assert_eq!(embed(&gw, &json!({"model": "vectors", "input": "x"})).await.status(), 200);
    // 6 prompt tokens at $1 per token.
    assert_eq!(gw.metric("spillway_cost_usd_total{cascade=\"vectors\",provider=\"a\",model=\"emb\"}").await, 6.0);
    assert_eq!(gw.metric("spillway_tokens_total{provider=\"a\",model=\"emb\",kind=\"input\"}").await, 6.0);
}

#[tokio::test]
async fn base64_and_batches_of_the_mock_round_trip() {
    let (a, b) = (FakeUpstream::start_at("/embeddings").await, FakeUpstream::start_at("/embeddings").await);
    let gw = start(&yaml(&a, &b)).await;
    let input = json!(["alpha", "beta", "alpha"]);
    let float: Value = embed(&gw, &json!({"model": "local", "input": input})).await.json().await.unwrap();
    assert_valid_responses("CreateEmbeddingResponse", &float);
    // openai-python's default: base64 of little-endian f32s.
    let resp = embed(&gw, &json!({"model": "local", "input": input, "encoding_format": "base64"})).await;
    assert_eq!(header(&resp, "x-spillway-model"), "mock/vec");
    let b64: Value = resp.json().await.unwrap();
    assert_eq!(b64["data"].as_array().unwrap().len(), 3);
    for i in 0..3 {
        assert_eq!(b64["data"][i]["index"], i);
        let v = decode(b64["data"][i]["embedding"].as_str().unwrap());
        assert_eq!(v.len(), 16);
        assert_eq!(v, floats(&float["data"][i]["embedding"]), "the same vector in both encodings");
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
    }
    assert_eq!(float["data"][0]["embedding"], float["data"][2]["embedding"], "deterministic");
    assert_ne!(float["data"][0]["embedding"], float["data"][1]["embedding"]);
    // Token arrays and `dimensions`.
    let short: Value =
        embed(&gw, &json!({"model": "local", "input": [[1, 2, 3], [4]], "dimensions": 8})).await.json().await.unwrap();
    assert_valid_responses("CreateEmbeddingResponse", &short);
    let v = floats(&short["data"][1]["embedding"]);
    assert_eq!(v.len(), 8);
    assert!((v.iter().map(|x| x * x).sum::<f32>().sqrt() - 1.0).abs() < 1e-4);
    assert_eq!(short["usage"]["prompt_tokens"], 4);
}

#[tokio::test]
async fn dimensions_are_passed_on_and_longer_vectors_shortened() {
    let (a, b) = (FakeUpstream::start_at("/embeddings").await, FakeUpstream::start_at("/embeddings").await);
    // An upstream that ignores `dimensions`: the gateway shortens and rescales.
    a.push(vectors_reply(&[vec![3.0, 4.0, 12.0, 0.0]]));
    let gw = start(&yaml(&a, &b)).await;
    let body: Value =
        embed(&gw, &json!({"model": "vectors", "input": "x", "dimensions": 2})).await.json().await.unwrap();
    assert_eq!(floats(&body["data"][0]["embedding"]), vec![0.6, 0.8]);
    assert_eq!(a.requests()[0]["dimensions"], 2);
    let resp = embed(&gw, &json!({"model": "vectors", "input": "x", "dimensions": 5})).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["param"], "dimensions");
}

#[tokio::test]
async fn errors_take_openais_shape() {
    let (a, b) = (FakeUpstream::start_at("/embeddings").await, FakeUpstream::start_at("/embeddings").await);
    a.set_default(Reply::error(503, "overloaded", "down"));
    b.set_default(Reply::error(500, "server_error", "down"));
    let gw = start(&yaml(&a, &b)).await;
    for (body, status, param) in [
        (json!({"model": "vectors", "input": []}), 400, Some("input")),
        (json!({"model": "vectors", "input": "x", "encoding_format": "hex"}), 400, Some("encoding_format")),
        (json!({"model": "chat", "input": "x"}), 400, Some("model")),
        (json!({"model": "nope", "input": "x"}), 404, Some("model")),
        (json!({"model": "vectors", "input": "x"}), 503, None),
    ] {
        let resp = embed(&gw, &body).await;
        assert_eq!(resp.status(), status, "{body}");
        let e: Value = resp.json().await.unwrap();
        assert_valid_responses("ErrorResponse", &e);
        assert_eq!(e["error"]["param"].as_str(), param, "{e}");
        if status == 503 {
            assert_eq!(e["error"]["type"], "all_models_failed");
        }
    }
}

#[tokio::test]
async fn a_cascade_of_the_other_kind_is_a_400_naming_the_cascades_that_fit() {
    let (a, b) = (FakeUpstream::start_at("/embeddings").await, FakeUpstream::start_at("/embeddings").await);
    let gw = start(&yaml(&a, &b)).await;
    let chat_body =
        |stream: bool| json!({"model": "local", "stream": stream, "messages": [{"role": "user", "content": "x"}]});
    let cases = [
        ("/v1/chat/completions", chat_body(false), "`local` is an embedding cascade", "a chat cascade: chat"),
        ("/v1/chat/completions", chat_body(true), "`local` is an embedding cascade", "a chat cascade: chat"),
        ("/v1/responses", json!({"model": "vectors", "input": "x"}), "`vectors` is an embedding", "chat"),
        (
            "/v1/responses",
            json!({"model": "vectors", "input": "x", "stream": true}),
            "`vectors` is an embedding",
            "chat",
        ),
        (
            "/v1/embeddings",
            json!({"model": "chat", "input": "x"}),
            "`chat` is a chat cascade",
            "an embedding cascade: vectors, local",
        ),
    ];
    for (path, body, is, fits) in cases {
        let resp = post(&gw, path, &body, &[]).await;
        assert_eq!(resp.status(), 400, "{path} {body}");
        let e: Value = resp.json().await.unwrap();
        assert_valid_responses("ErrorResponse", &e);
        let msg = e["error"]["message"].as_str().unwrap();
        assert!(msg.contains(is) && msg.contains(fits), "{path}: {msg}");
        assert_eq!(
            (e["error"]["code"].as_str(), e["error"]["param"].as_str()),
            (Some("wrong_model_kind"), Some("model"))
        );
    }
    // Anthropic's Messages API: the same mistake in its own error shape.
    let resp = post(
        &gw,
        "/v1/messages",
        &json!({"model": "local", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}),
        &[("anthropic-version", "2023-06-01")],
    )
    .await;
    assert_eq!(resp.status(), 400);
    let e: Value = resp.json().await.unwrap();
    assert_eq!(e["error"]["type"], "invalid_request_error");
    assert!(e["error"]["message"].as_str().unwrap().contains("embedding cascade"), "{e}");
    assert_eq!((a.calls(), b.calls()), (0, 0), "nothing was sent anywhere");
}

#[tokio::test]
async fn an_embedding_cascade_of_two_dimensions_is_refused_with_its_path() {
    let yaml = "providers:\n  m:\n    kind: mock\n    models: [{ id: small, dimensions: 384 }, { id: big, dimensions: 1536 }, { id: plain }]\n  g:\n    kind: gigachat\n    auth_key: k\ncascades:\n  chat:\n    models: [m/plain]\n  e:\n    kind: embedding\n    models: [m/small, m/big, g/Embeddings]\n    handoff: true\n  f:\n    kind: embedding\n    models: [m/plain]\n";
    let errors = spillway::config::load_str(yaml, None, &|_| None).unwrap_err().0;
    let at = |path: &str| {
        errors.iter().find(|e| e.path == path).unwrap_or_else(|| panic!("{path}: {errors:#?}")).message.clone()
    };
    assert!(at("cascades.e.models[1]").contains("dimension 1536"), "{errors:#?}");
    assert!(at("cascades.e.models[2]").contains("no embeddings"));
    assert!(at("cascades.e.handoff").contains("embedding"));
    assert!(at("cascades.f.models[0]").contains("dimensions"));
}

#[tokio::test]
async fn the_demo_answers_embeddings_out_of_the_box() {
    let gw = start(spillway::config::DEMO_YAML).await;
    let resp = embed(&gw, &json!({"model": "embeddings", "input": ["hello", "world"]})).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_valid_responses("CreateEmbeddingResponse", &body);
    assert_eq!(body["data"].as_array().unwrap().len(), 2);
}
