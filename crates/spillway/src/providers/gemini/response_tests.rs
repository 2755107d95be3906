use super::*;
use serde_json::json;

fn body(v: Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

#[test]
fn text_and_usage() {
    let out = from_gemini(&body(json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "thinking…", "thought": true}, {"text": "Hel"}, {"text": "lo"}]},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 29, "candidatesTokenCount": 15, "thoughtsTokenCount": 893,
                          "cachedContentTokenCount": 4, "totalTokenCount": 937},
        "modelVersion": "gemini-2.5-flash", "responseId": "r1"})))
    .unwrap();
    assert_eq!(out["choices"][0]["message"]["content"], "Hello");
    assert_eq!(out["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        out["usage"],
        json!({"prompt_tokens": 29, "completion_tokens": 908, "total_tokens": 937,
               "prompt_tokens_details": {"cached_tokens": 4}, "completion_tokens_details": {"reasoning_tokens": 893}})
    );
}

#[test]
fn function_calls_become_tool_calls() {
    let out = from_gemini(&body(json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "weather", "args": {"location": "SF"}}, "thoughtSignature": "Eskg"},
            {"functionCall": {"name": "time", "args": {}, "id": "fc-2"}}]},
            "finishReason": "STOP", "index": 0}]})))
    .unwrap();
    let message = &out["choices"][0]["message"];
    assert_eq!(out["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(message["content"], Value::Null);
    let calls = message["tool_calls"].as_array().unwrap();
    assert!(calls[0]["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(calls[0]["function"], json!({"name": "weather", "arguments": "{\"location\":\"SF\"}"}));
    assert_eq!(calls[1]["id"], "fc-2");
    assert!(calls[0].get("index").is_none());
}

#[test]
fn finish_reasons() {
    let with = |reason: &str, parts: Value| {
        from_gemini(&body(json!({"candidates": [{"content": {"parts": parts}, "finishReason": reason}]})))
    };
    let said = json!([{"text": "partial"}]);
    assert_eq!(with("MAX_TOKENS", said.clone()).unwrap()["choices"][0]["finish_reason"], "length");
    assert_eq!(with("SAFETY", said.clone()).unwrap()["choices"][0]["finish_reason"], "content_filter");
    assert_eq!(with("OTHER", said).unwrap()["choices"][0]["finish_reason"], "stop");
    let filtered = with("SAFETY", json!([])).unwrap_err();
    assert!(matches!(filtered, TranslateError::Upstream { class: ErrorClass::ContentFilter, .. }), "{filtered}");
    let malformed = with("MALFORMED_FUNCTION_CALL", json!([])).unwrap_err();
    assert!(matches!(malformed, TranslateError::Upstream { class: ErrorClass::Upstream, .. }));
}

#[test]
fn a_blocked_prompt_and_broken_bodies() {
    let blocked = from_gemini(&body(json!({"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []},
        "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8}})))
    .unwrap_err();
    assert!(matches!(blocked, TranslateError::Upstream { class: ErrorClass::ContentFilter, .. }));
    assert!(matches!(from_gemini(b"<html>"), Err(TranslateError::Malformed { .. })));
    assert!(matches!(from_gemini(&body(json!({"candidates": []}))), Err(TranslateError::Malformed { .. })));
    assert!(matches!(
        from_gemini(&body(json!({"candidates": [{"content": {"parts": "x"}, "finishReason": "STOP"}]}))),
        Err(TranslateError::Malformed { .. })
    ));
}

fn google_error(code: u16, status: &str, message: &str, details: Value) -> Vec<u8> {
    body(json!({"error": {"code": code, "message": message, "status": status, "details": details}}))
}

#[test]
fn errors_are_classified() {
    let per_minute = google_error(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan.",
        json!([
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"}]),
    );
    assert_eq!(classify_error(429, &per_minute).0, ErrorClass::RateLimited);
    assert_eq!(retry_delay(&per_minute), Some(Duration::from_millis(34_400)));
    let per_day = google_error(
        429,
        "RESOURCE_EXHAUSTED",
        "quota",
        json!([
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]),
    );
    assert_eq!(classify_error(429, &per_day).0, ErrorClass::QuotaExhausted);
    let bad_key = google_error(
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
        json!([
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]),
    );
    assert_eq!(classify_error(400, &bad_key).0, ErrorClass::AuthRejected);
    let too_long = google_error(
        400,
        "INVALID_ARGUMENT",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        json!([]),
    );
    assert_eq!(classify_error(400, &too_long).0, ErrorClass::ContextLength);
    let invalid = google_error(400, "INVALID_ARGUMENT", "Invalid value at 'generation_config.temperature'", json!([]));
    assert_eq!(classify_error(400, &invalid).0, ErrorClass::InvalidRequest);
    let billing =
        google_error(400, "FAILED_PRECONDITION", "User location is not supported for the API use.", json!([]));
    assert_eq!(classify_error(400, &billing).0, ErrorClass::Forbidden);
    assert_eq!(classify_error(403, &google_error(403, "PERMISSION_DENIED", "no", json!([]))).0, ErrorClass::Forbidden);
    assert_eq!(
        classify_error(404, &google_error(404, "NOT_FOUND", "models/x is not found", json!([]))).0,
        ErrorClass::NotFound
    );
    for (code, status) in [(500, "INTERNAL"), (503, "UNAVAILABLE"), (504, "DEADLINE_EXCEEDED")] {
        assert_eq!(classify_error(code, &google_error(code, status, "later", json!([]))).0, ErrorClass::Upstream);
    }
    assert_eq!(classify_error(502, b"<html>bad gateway</html>").0, ErrorClass::Upstream);
    assert_eq!(retry_delay(b"{}"), None);
}
