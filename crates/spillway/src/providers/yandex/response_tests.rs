//! Tests for the Yandex response translation and error classification.

use super::*;
use crate::providers::gigachat::test_support::{fixture, validate_response};

#[test]
fn text_answer() {
    let out = from_yandex(&fixture("yandex/response_text.json")).unwrap();
    validate_response(&out);
    assert_eq!(out["choices"][0]["message"]["content"], "Привет! Чем могу помочь?");
    assert_eq!(out["choices"][0]["finish_reason"], "stop");
    assert_eq!(out["usage"], json!({"prompt_tokens": 26, "completion_tokens": 11, "total_tokens": 37}));
}

#[test]
fn tool_calls_get_ids_and_string_arguments() {
    let out = from_yandex(&fixture("yandex/response_tool_calls.json")).unwrap();
    validate_response(&out);
    let choice = &out["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    let call = &choice["message"]["tool_calls"][0];
    assert!(call["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(call["function"]["name"], "something");
    let args: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"numbers": [5.0, 4.0, 1.0]}));
    assert_eq!(out["usage"]["completion_tokens_details"]["reasoning_tokens"], 0);
}

#[test]
fn statuses_map_to_finish_reasons() {
    let body = |status: &str| {
        format!(
            r#"{{"result":{{"alternatives":[{{"message":{{"role":"assistant","text":"x"}},"status":"{status}"}}]}}}}"#
        )
    };
    let finish = |status: &str| from_yandex(body(status).as_bytes()).unwrap()["choices"][0]["finish_reason"].clone();
    assert_eq!(finish("ALTERNATIVE_STATUS_TRUNCATED_FINAL"), "length");
    assert_eq!(finish("ALTERNATIVE_STATUS_PARTIAL"), "length");
    assert_eq!(finish("ALTERNATIVE_STATUS_UNSPECIFIED"), "stop");
    let out = from_yandex(body("ALTERNATIVE_STATUS_FINAL").as_bytes()).unwrap();
    assert!(out.get("usage").is_none());
    validate_response(&out);
}

#[test]
fn content_filter_is_an_error() {
    let err = from_yandex(&fixture("yandex/response_content_filter.json")).unwrap_err();
    assert!(matches!(err, TranslateError::Upstream { class: ErrorClass::ContentFilter, .. }));
}

#[test]
fn error_and_broken_bodies() {
    assert!(matches!(
        from_yandex(&fixture("yandex/error_429.json")),
        Err(TranslateError::Upstream { class: ErrorClass::RateLimited, .. })
    ));
    for body in [&b"<html>"[..], b"{}", br#"{"result":{}}"#] {
        assert!(matches!(from_yandex(body), Err(TranslateError::Malformed { .. })));
    }
}

#[test]
fn classifies_errors() {
    let grpc = |grpc: u32, http: u16| {
        format!(r#"{{"error":{{"grpcCode":{grpc},"httpCode":{http},"message":"m","httpStatus":"x","details":[]}}}}"#)
    };
    let cases = [
        (400, 3, ErrorClass::InvalidRequest),
        (401, 16, ErrorClass::AuthRejected),
        (403, 7, ErrorClass::AuthRejected),
        (404, 5, ErrorClass::NotFound),
        (429, 8, ErrorClass::RateLimited),
        (500, 13, ErrorClass::Upstream),
        (503, 14, ErrorClass::Upstream),
        // The gRPC code decides where the HTTP status does not.
        (400, 8, ErrorClass::RateLimited),
        (200, 12, ErrorClass::CapabilityMismatch),
    ];
    for (status, code, class) in cases {
        let (got, message) = classify_error(status, grpc(code, status).as_bytes());
        assert_eq!(got, class, "{status}/{code}");
        assert_eq!(message, format!("Yandex {status}: m"));
    }
    let (class, message) = classify_error(429, &fixture("yandex/error_429.json"));
    assert_eq!(class, ErrorClass::RateLimited);
    assert!(message.contains("quota limit exceed"));
    assert_eq!(classify_error(400, br#"{"code":3,"message":"bad"}"#).0, ErrorClass::InvalidRequest);
    assert_eq!(classify_error(502, b"<html>").0, ErrorClass::Upstream);
    assert_eq!(classify_error(422, b"").0, ErrorClass::InvalidRequest);
}
