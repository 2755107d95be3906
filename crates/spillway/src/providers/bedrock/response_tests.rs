use super::*;
use serde_json::json;

fn body(v: Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

#[test]
fn text_tool_calls_and_usage() {
    let out = from_converse(&body(json!({
        "output": {"message": {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "s"}}},
            {"text": "Checking."},
            {"toolUse": {"toolUseId": "tooluse_x", "name": "get_weather", "input": {"city": "Paris"}}}]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 125, "outputTokens": 45, "totalTokens": 170, "cacheReadInputTokens": 5, "cacheWriteInputTokens": 0},
        "metrics": {"latencyMs": 234}})))
    .unwrap();
    let choice = &out["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Checking.");
    assert_eq!(
        choice["message"]["tool_calls"][0],
        json!({"id": "tooluse_x", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}})
    );
    assert_eq!(out["usage"]["prompt_tokens"], 130);
    assert_eq!(out["usage"]["total_tokens"], 175);
    assert_eq!(out["usage"]["prompt_tokens_details"]["cached_tokens"], 5);
}

#[test]
fn stop_reasons() {
    let with = |stop: &str, content: Value| {
        from_converse(&body(json!({"output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop, "usage": {"inputTokens": 1, "outputTokens": 1}})))
    };
    let said = json!([{"text": "partial"}]);
    for (stop, expected) in [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
    ] {
        assert_eq!(with(stop, said.clone()).unwrap()["choices"][0]["finish_reason"], expected, "{stop}");
    }
    assert_eq!(with("guardrail_intervened", said).unwrap()["choices"][0]["finish_reason"], "content_filter");
    assert!(matches!(
        with("content_filtered", json!([])),
        Err(TranslateError::Upstream { class: ErrorClass::ContentFilter, .. })
    ));
    assert!(matches!(
        with("malformed_tool_use", json!([])),
        Err(TranslateError::Upstream { class: ErrorClass::Upstream, .. })
    ));
    assert!(matches!(from_converse(b"{\"output\":{}}"), Err(TranslateError::Malformed { .. })));
}

#[test]
fn errors_are_classified_by_name() {
    let named = |status: u16, name: &str, message: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-amzn-errortype",
            format!("{name}:http://internal.amazon.com/coral/com.amazon.bedrock/").parse().unwrap(),
        );
        classify_error(status, &headers, &body(json!({"message": message}))).0
    };
    assert_eq!(
        named(429, "ThrottlingException", "Too many requests, please wait before trying again."),
        ErrorClass::RateLimited
    );
    assert_eq!(named(400, "ServiceQuotaExceededException", "quota"), ErrorClass::QuotaExhausted);
    assert_eq!(named(400, "ValidationException", "Input is too long for requested model."), ErrorClass::ContextLength);
    assert_eq!(
        named(400, "ValidationException", "This model doesn't support tool use."),
        ErrorClass::CapabilityMismatch
    );
    assert_eq!(named(400, "ValidationException", "temperature: must be at most 1"), ErrorClass::InvalidRequest);
    assert_eq!(named(403, "AccessDeniedException", "You don't have access to the model"), ErrorClass::Forbidden);
    assert_eq!(
        named(403, "UnrecognizedClientException", "The security token included in the request is invalid."),
        ErrorClass::AuthRejected
    );
    assert_eq!(
        named(403, "InvalidSignatureException", "The request signature we calculated does not match"),
        ErrorClass::AuthRejected
    );
    assert_eq!(named(404, "ResourceNotFoundException", "model"), ErrorClass::NotFound);
    for name in [
        "ModelNotReadyException",
        "ModelTimeoutException",
        "ModelErrorException",
        "InternalServerException",
        "ServiceUnavailableException",
    ] {
        assert_eq!(named(500, name, "later"), ErrorClass::Upstream, "{name}");
    }
    // Without the header: the body's `__type`, else the status.
    let typed = body(json!({"__type": "com.amazonaws.bedrock#ThrottlingException", "message": "slow"}));
    assert_eq!(classify_error(400, &HeaderMap::new(), &typed).0, ErrorClass::RateLimited);
    assert_eq!(classify_error(502, &HeaderMap::new(), b"<html>").0, ErrorClass::Upstream);
}
