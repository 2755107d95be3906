//! `kind: azure`: deployment URLs with `api-version`, the `api-key` header,
//! the v1 surface, JSON mode passed on as `response_format`, the content
//! filter, and deployments found by discovery.

use super::common::*;
use super::file_gateway::{FileGateway, TempDir};
use super::json_request;
use serde_json::{json, Value};
use test_upstreams::azure;

fn provider(up: &FakeUpstream, version: &str) -> String {
    format!(
        "providers:
  az:
    kind: azure
    base_url: {}
    api_key: test-key-az
    api_version: {version}
    models: [ {{ id: gpt-4o-eu }}, {{ id: mini-eu }} ]
{FAST_HEALTH}cascades:
  chat: {{ models: [az/gpt-4o-eu, az/mini-eu] }}
",
        up.origin()
    )
}

#[tokio::test]
async fn calls_go_to_the_deployment_with_the_api_version_and_the_api_key() {
    let up = FakeUpstream::start().await;
    let gw = start(&provider(&up, "2024-10-21")).await;
    up.push(azure::text("whole"));
    up.push(azure::stream(&["stre", "amed"]));
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json::<Value>().await.unwrap()["choices"][0]["message"]["content"], "whole");
    let events = sse_events(gw.post(&chat("chat", true)).await).await;
    assert_eq!(streamed_text(&events), "streamed");
    for (uri, headers) in up.request_uris().iter().zip(up.request_headers()) {
        assert_eq!(uri, "/openai/deployments/gpt-4o-eu/chat/completions?api-version=2024-10-21");
        assert_eq!(headers["api-key"], "test-key-az");
        assert!(headers.get("authorization").is_none(), "Azure's key is not a bearer token");
    }
    // A deployment that fails sends the next attempt to the next deployment's URL.
    up.push(azure::error(503, "ServiceUnavailable", "busy"));
    up.push(azure::text("from mini"));
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "az/mini-eu");
    assert_eq!(up.request_uris()[3], "/openai/deployments/mini-eu/chat/completions?api-version=2024-10-21");
}

#[tokio::test]
async fn the_v1_surface_names_the_deployment_in_the_body() {
    let up = FakeUpstream::start().await;
    let gw = start(&provider(&up, "v1")).await;
    up.push(azure::text("v1"));
    assert_eq!(gw.post(&chat("chat", false)).await.status(), 200);
    assert_eq!(up.request_uris()[0], "/openai/v1/chat/completions");
    assert_eq!(up.requests()[0]["model"], "gpt-4o-eu");
    let preview = FakeUpstream::start().await;
    let gw = start(&provider(&preview, "preview")).await;
    gw.post(&chat("chat", false)).await;
    assert_eq!(preview.request_uris()[0], "/openai/v1/chat/completions?api-version=preview");
}

#[tokio::test]
async fn json_mode_is_azure_s_own_response_format_whole_and_streamed() {
    let up = FakeUpstream::start().await;
    let gw = start(&provider(&up, "2024-10-21")).await;
    up.push(azure::text("{\"city\": \"Oslo\"}"));
    up.push(azure::stream(&["{\"city\": ", "\"Bergen\"}"]));
    let body: Value = gw.post(&json_request(false)).await.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "{\"city\": \"Oslo\"}");
    let events = sse_events(gw.post(&json_request(true)).await).await;
    assert_eq!(serde_json::from_str::<Value>(&streamed_text(&events)).unwrap(), json!({"city": "Bergen"}));
    for req in up.requests() {
        assert_eq!(req["response_format"]["json_schema"]["name"], "city", "sent natively: {req}");
    }
}

#[tokio::test]
async fn a_filtered_prompt_moves_on_and_a_filtered_answer_says_content_filter() {
    let up = FakeUpstream::start().await;
    let gw = start(&provider(&up, "2024-10-21")).await;
    up.push(azure::content_filtered());
    up.push(azure::text("the second deployment answers"));
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "az/mini-eu");
    // The output filter ends an answer after text was sent (asynchronous
    // filter): the client sees the text and `content_filter`.
    let cut = Reply::sse_raw(&[
        "data: {\"id\":\"\",\"object\":\"\",\"created\":0,\"model\":\"\",\"choices\":[],\"prompt_filter_results\":[]}\n\n",
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Once\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"finish_reason\":\"content_filter\",\"content_filter_results\":{\"violence\":{\"filtered\":true,\"severity\":\"high\"}}}]}\n\n",
        "data: [DONE]\n\n",
    ]);
    up.push(cut);
    let events = sse_events(gw.post(&chat("chat", true)).await).await;
    let chunks: Vec<Value> =
        events.iter().filter(|e| *e != "[DONE]").map(|e| serde_json::from_str(e).unwrap()).collect();
    for c in &chunks {
        assert_valid("CreateChatCompletionStreamResponse", c);
    }
    assert_eq!(streamed_text(&events), "Once");
    assert!(chunks.iter().any(|c| c["choices"][0]["finish_reason"] == "content_filter"), "{events:?}");
}

#[tokio::test]
async fn discovery_lists_the_deployments_and_a_discovered_one_is_called() {
    let up = FakeUpstream::start().await;
    up.route(
        azure::DEPLOYMENTS_PATH,
        azure::deployments(&[
            ("gpt-4o-prod", "gpt-4o", "succeeded"),
            ("mini-prod", "gpt-4o-mini", "succeeded"),
            ("new-one", "gpt-4.1", "creating"),
            ("embed", "text-embedding-3-small", "succeeded"),
        ]),
    );
    let dir = TempDir::new("cloud-azure-discovery");
    let yaml = format!(
        "state: {{ data_dir: {} }}
providers:
  az:
    kind: azure
    base_url: {}
    api_key: test-key-az
    api_version: 2024-10-21
    discovery: {{ enabled: true }}
discovery: {{ interval: 12h, cache_ttl: 24h }}
cascades:
  chat: {{ strategy: quality_first, providers: [az], size: 5 }}
{FAST_HEALTH}",
        dir.path().display(),
        up.origin()
    );
    let gw = FileGateway::start(dir.path(), &yaml).await;
    let mut plan = gw.wait_plan("chat", |p| p.len() == 2).await;
    plan.sort();
    assert_eq!(plan, ["az/gpt-4o-prod", "az/mini-prod"]);
    up.push(azure::text("from a discovered deployment"));
    let resp =
        client().post(format!("{}/v1/chat/completions", gw.url)).json(&chat("chat", false)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let uri = &up.request_uris()[0];
    assert!(
        uri.starts_with("/openai/deployments/") && uri.ends_with("/chat/completions?api-version=2024-10-21"),
        "{uri}"
    );
    gw.stop().await;
}
