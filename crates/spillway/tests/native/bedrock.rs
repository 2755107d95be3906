//! `kind: bedrock`: SigV4 signatures that match what was sent (checked by
//! signing the recorded request again), temporary credentials, a Bedrock
//! API key instead, the model id encoded in the path, JSON mode as
//! `outputConfig`, and a stream exception after the first token.

use super::common::*;
use super::json_request;
use serde_json::{json, Value};
use spillway::config::Secret;
use spillway::providers::sigv4::{Credentials, Request, Signer};
use test_upstreams::bedrock;

const MODEL: &str = "anthropic.claude-3-5-sonnet-20240620-v1:0";

fn config(up: &FakeUpstream, auth: &str, extra: &str) -> String {
    format!(
        "providers:
  b:
    kind: bedrock
    base_url: {}
    region: eu-central-1
{auth}    models: [ {{ id: '{MODEL}' }} ]
{extra}{FAST_HEALTH}cascades:
  chat: {{ models: ['b/{MODEL}'] }}
",
        up.origin()
    )
}

const KEYS: &str =
    "    aws_access_key_id: AKIDEXAMPLE\n    aws_secret_access_key: wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n";

/// Signs the recorded call `i` again and compares with what it carried.
fn assert_signed(up: &FakeUpstream, i: usize, token: Option<&str>) {
    let headers = &up.request_headers()[i];
    let uri = &up.request_uris()[i];
    let body = &up.raw_requests()[i];
    let signer = Signer {
        credentials: Credentials {
            access_key_id: Secret::new("AKIDEXAMPLE"),
            secret_access_key: Secret::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            session_token: token.map(Secret::new),
        },
        region: "eu-central-1".into(),
        service: "bedrock",
    };
    let text = |name: &str| headers[name].to_str().unwrap().to_owned();
    let request = Request {
        method: "POST",
        host: &text("host"),
        path: uri,
        query: "",
        headers: &[("content-type", &text("content-type"))],
        body,
    };
    let expected = signer.sign_at(&request, &text("x-amz-date"));
    assert_eq!(text("authorization"), expected.authorization, "the signature covers what was sent");
    assert!(expected.authorization.contains("/eu-central-1/bedrock/aws4_request"));
    assert_eq!(headers.get("x-amz-security-token").map(|v| v.to_str().unwrap()), token);
}

#[tokio::test]
async fn calls_are_signed_for_what_they_send_whole_and_streamed() {
    let up = FakeUpstream::start_at_any(&bedrock::PATHS).await;
    let gw = start(&config(&up, KEYS, "    whole_as_stream: false\n")).await;
    up.push(bedrock::text("whole"));
    up.push(bedrock::stream(&["stre", "amed"]));
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-upstream-request-id"), "bedrock-req-1");
    assert_eq!(resp.json::<Value>().await.unwrap()["choices"][0]["message"]["content"], "whole");
    let events = sse_events(gw.post(&chat("chat", true)).await).await;
    assert_eq!(streamed_text(&events), "streamed");
    let uris = up.request_uris();
    assert_eq!(uris[0], "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse");
    assert_eq!(uris[1], "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream");
    assert_signed(&up, 0, None);
    assert_signed(&up, 1, None);
}

#[tokio::test]
async fn temporary_credentials_sign_and_send_their_token() {
    let up = FakeUpstream::start_at_any(&bedrock::PATHS).await;
    let keys = format!("{KEYS}    aws_session_token: FQoGZXIvYXdzEXAMPLE\n");
    let gw = start(&config(&up, &keys, "")).await;
    up.push(bedrock::stream(&["ok"]));
    assert_eq!(gw.post(&chat("chat", false)).await.status(), 200);
    assert_signed(&up, 0, Some("FQoGZXIvYXdzEXAMPLE"));
}

#[tokio::test]
async fn a_bedrock_api_key_is_a_bearer_token_and_nothing_is_signed() {
    let up = FakeUpstream::start_at_any(&bedrock::PATHS).await;
    let gw = start(&config(&up, "    api_key: bedrock-api-key-1\n", "")).await;
    up.push(bedrock::stream(&["ok"]));
    assert_eq!(gw.post(&chat("chat", false)).await.status(), 200);
    let headers = &up.request_headers()[0];
    assert_eq!(headers["authorization"], "Bearer bedrock-api-key-1");
    assert!(headers.get("x-amz-date").is_none());
}

#[tokio::test]
async fn json_mode_is_output_config_whole_and_streamed() {
    let up = FakeUpstream::start_at_any(&bedrock::PATHS).await;
    let gw = start(&config(&up, KEYS, "")).await;
    up.push(bedrock::stream(&["{\"city\": ", "\"Oslo\"}"]));
    up.push(bedrock::stream(&["{\"city\": ", "\"Bergen\"}"]));
    let body: Value = gw.post(&json_request(false)).await.json().await.unwrap();
    let content = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(content).unwrap(), json!({"city": "Oslo"}));
    let events = sse_events(gw.post(&json_request(true)).await).await;
    assert_eq!(serde_json::from_str::<Value>(&streamed_text(&events)).unwrap(), json!({"city": "Bergen"}));
    for req in up.requests() {
        let format = &req["outputConfig"]["textFormat"];
        assert_eq!(format["type"], "json_schema", "{req}");
        let schema: Value =
            serde_json::from_str(format["structure"]["jsonSchema"]["schema"].as_str().unwrap()).unwrap();
        assert_eq!(schema["required"], json!(["city"]));
    }
}

#[tokio::test]
async fn an_exception_after_the_first_token_ends_the_stream_with_an_error() {
    let up = FakeUpstream::start_at_any(&bedrock::PATHS).await;
    let gw = start(&config(&up, KEYS, "")).await;
    let mut frames = bedrock::stream_frames(&["Once", " upon"]);
    frames.truncate(3);
    frames.push(bedrock::exception("modelStreamErrorException", "The model stopped"));
    up.push(bedrock::frames(frames));
    let events = sse_events(gw.post(&chat("chat", true)).await).await;
    assert_eq!(streamed_text(&events), "Once upon");
    assert!(events.iter().any(|e| e.contains("\"error\"")), "{events:?}");
}
