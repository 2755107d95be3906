//! Tests for the Anthropic → OpenAI response translation and error
//! classification.

use serde_json::json;

use super::*;
use crate::providers::anthropic::test_support::{assert_valid, fixture};

#[test]
fn text_response_maps_to_chat_completion() {
    let out = from_anthropic(fixture("response_text.json").as_bytes()).unwrap();
    assert_eq!(
        out,
        json!({
            "object": "chat.completion",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "Hello! How can I help you today?", "refusal": null},
                "logprobs": null,
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 12, "completion_tokens": 12, "total_tokens": 24,
                      "prompt_tokens_details": {"cached_tokens": 0}}
        })
    );
    assert_valid("CreateChatCompletionResponse", &out);
}

#[test]
fn tool_use_response_keeps_text_drops_thinking_and_counts_cache() {
    let out = from_anthropic(fixture("response_tool_use.json").as_bytes()).unwrap();
    let choice = &out["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Let me check.");
    assert_eq!(
        choice["message"]["tool_calls"],
        json!([
            {"id": "toolu_01A09q90qw90lq917835lq9", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}},
            {"id": "toolu_01B7rq2kD5xLmbWb5Zp3Z1", "type": "function",
             "function": {"name": "get_time", "arguments": "{}"}}
        ])
    );
    assert_eq!(
        out["usage"],
        json!({"prompt_tokens": 350, "completion_tokens": 40, "total_tokens": 390,
               "prompt_tokens_details": {"cached_tokens": 200}})
    );
    assert_valid("CreateChatCompletionResponse", &out);
}

#[test]
fn tool_only_response_has_null_content() {
    let out = from_anthropic(fixture("response_tool_only.json").as_bytes()).unwrap();
    let message = &out["choices"][0]["message"];
    assert_eq!(message["content"], serde_json::Value::Null);
    let args: serde_json::Value =
        serde_json::from_str(message["tool_calls"][0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Oslo", "unit": "celsius"}));
    assert_valid("CreateChatCompletionResponse", &out);
}

#[test]
fn every_stop_reason_maps_per_section_9_2() {
    for (stop, finish) in [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("some_future_reason", "stop"),
    ] {
        let body = json!({"type": "message", "content": [{"type": "text", "text": "x"}], "stop_reason": stop});
        let out = from_anthropic(body.to_string().as_bytes()).unwrap();
        assert_eq!(out["choices"][0]["finish_reason"], finish, "{stop}");
        assert_valid("CreateChatCompletionResponse", &out);
    }
}

#[test]
fn empty_content_is_an_empty_string_and_valid() {
    let out = from_anthropic(
        br#"{"type":"message","content":[],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}"#,
    )
    .unwrap();
    assert_eq!(out["choices"][0]["message"]["content"], "");
    assert_valid("CreateChatCompletionResponse", &out);
}

#[test]
fn broken_bodies_are_malformed_and_error_bodies_upstream() {
    for body in [&b"not json"[..], b"{}", b"[]", br#"{"content":[{"type":"tool_use","name":"f"}]}"#] {
        assert!(matches!(from_anthropic(body), Err(TranslateError::Malformed { format: "anthropic", .. })));
    }
    let err = from_anthropic(fixture("error_overloaded.json").as_bytes()).unwrap_err();
    assert_eq!(
        err,
        TranslateError::Upstream { class: ErrorClass::Upstream, message: "overloaded_error: Overloaded".into() }
    );
}

#[test]
fn fixture_errors_are_classified() {
    let cases = [
        (529, "error_overloaded.json", ErrorClass::Upstream),
        (400, "error_prompt_too_long.json", ErrorClass::ContextLength),
        (429, "error_spend_limit.json", ErrorClass::QuotaExhausted),
        (429, "error_rate_limit.json", ErrorClass::RateLimited),
    ];
    for (status, name, class) in cases {
        let (got, message) = classify_error(status, fixture(name).as_bytes());
        assert_eq!(got, class, "{name}");
        assert!(!message.is_empty());
    }
}

#[test]
fn error_types_and_statuses_are_classified() {
    let body = |kind: &str, msg: &str| json!({"type": "error", "error": {"type": kind, "message": msg}}).to_string();
    let cases = [
        (401, body("authentication_error", "invalid x-api-key"), ErrorClass::AuthRejected),
        (403, body("permission_error", "no access"), ErrorClass::Forbidden),
        (404, body("not_found_error", "model: claude-x"), ErrorClass::NotFound),
        (402, body("billing_error", "credit balance too low"), ErrorClass::QuotaExhausted),
        (400, body("billing_error", "credit balance too low"), ErrorClass::QuotaExhausted),
        (400, body("invalid_request_error", "messages: roles must alternate"), ErrorClass::InvalidRequest),
        (
            400,
            body("invalid_request_error", "input length and `max_tokens` exceed context limit: 197442 + 8192 > 200000"),
            ErrorClass::ContextLength,
        ),
        (
            413,
            body("request_too_large", "Request exceeds the maximum allowed number of bytes."),
            ErrorClass::InvalidRequest,
        ),
        (500, body("api_error", "Internal server error"), ErrorClass::Upstream),
        (504, body("timeout_error", "Request timed out"), ErrorClass::Upstream),
        (418, body("some_new_error", "?"), ErrorClass::InvalidRequest),
        (503, body("some_new_error", "?"), ErrorClass::Upstream),
    ];
    for (status, body, class) in cases {
        assert_eq!(classify_error(status, body.as_bytes()).0, class, "{status} {body}");
    }
}

#[test]
fn non_json_bodies_are_classified_by_status() {
    let html = b"<html>\n<body>502 Bad Gateway</body>\n</html>";
    let (class, message) = classify_error(502, html);
    assert_eq!(class, ErrorClass::Upstream);
    assert_eq!(message, "HTTP 502: <html> <body>502 Bad Gateway</body> </html>");
    assert_eq!(classify_error(401, b"").0, ErrorClass::AuthRejected);
    assert_eq!(classify_error(402, b"").0, ErrorClass::QuotaExhausted);
    assert_eq!(classify_error(403, b"nope").0, ErrorClass::Forbidden);
    assert_eq!(classify_error(404, b"").0, ErrorClass::NotFound);
    assert_eq!(classify_error(429, b"slow down").0, ErrorClass::RateLimited);
    assert_eq!(classify_error(413, b"too big").0, ErrorClass::InvalidRequest);
    assert_eq!(classify_error(408, b"").0, ErrorClass::Upstream);
    assert_eq!(classify_error(529, b"").1, "HTTP 529: (empty body)");
    let long = "é".repeat(500);
    let (_, message) = classify_error(500, long.as_bytes());
    assert!(message.chars().count() < 220);
    // Valid JSON but not an Anthropic error: still by status.
    assert_eq!(classify_error(404, br#"{"detail":"x"}"#).0, ErrorClass::NotFound);
}
