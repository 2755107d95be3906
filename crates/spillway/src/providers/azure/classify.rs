//! Azure OpenAI's error answers as the runner's [`Failure`]s: Azure's own
//! codes first, then OpenAI's rules ([`classify_openai_error`]) for the
//! rest (a 401 wrong key, a 404 `DeploymentNotFound`, a context overflow).
//!
//! Shapes from round3.md §1.4: a prompt the content filter blocked is a
//! 400 with `code: "content_filter"` (and `innererror.code:
//! "ResponsibleAIPolicyViolation"`); a rate limit is a 429 whose `code` is
//! the string `"429"` and whose wait ("Please retry after 86400 seconds")
//! can be a day — a spent quota, not a pause.

use crate::outcome::Failure;
use crate::providers::classify::classify_openai_error;
use serde_json::Value;
use std::time::Duration;

/// A 429 asking to wait longer than this is a spent daily or tier quota
/// (round3.md §1.4: "treat long hints as exhaustion").
const QUOTA_WAIT: Duration = Duration::from_secs(3600);

/// Classifies a non-2xx Azure OpenAI answer; `retry_after` is what its
/// headers said (`retry-after-ms`, `retry-after`).
pub fn classify_azure_error(status: u16, retry_after: Option<Duration>, body: &[u8]) -> Failure {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let err = parsed.as_ref().and_then(|v| v.get("error"));
    let code = err.and_then(|e| e.get("code")).and_then(Value::as_str).unwrap_or("");
    let inner = err.and_then(|e| e.get("innererror")).and_then(|e| e.get("code")).and_then(Value::as_str);
    if code == "content_filter" || inner == Some("ResponsibleAIPolicyViolation") {
        // Another model (or another provider's filter) may well answer.
        return Failure::ContentFilter;
    }
    if status == 429 {
        let wait = retry_after.or_else(|| {
            let message = err.and_then(|e| e.get("message")).and_then(Value::as_str).unwrap_or("");
            wait_in_message(message)
        });
        if wait.is_some_and(|w| w > QUOTA_WAIT) {
            return Failure::QuotaExhausted;
        }
        return Failure::RateLimited { retry_after: wait };
    }
    classify_openai_error(status, retry_after, body)
}

/// The seconds of Azure's "Please retry after N seconds." (the headers
/// normally say it too; the body alone is seen on some proxies).
fn wait_in_message(message: &str) -> Option<Duration> {
    let rest = &message[message.find("retry after ")? + "retry after ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let secs: u64 = digits.parse().ok()?;
    rest[digits.len()..].trim_start().starts_with("second").then(|| Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn classify(status: u16, retry: Option<u64>, body: Value) -> Failure {
        classify_azure_error(status, retry.map(Duration::from_secs), body.to_string().as_bytes())
    }

    #[test]
    fn azure_error_bodies_are_classified() {
        let filtered = json!({"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
            "type": null, "param": "prompt", "code": "content_filter", "status": 400,
            "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {"hate": {"filtered": true, "severity": "high"}}}}});
        assert_eq!(classify(400, None, filtered), Failure::ContentFilter);
        let throttled = json!({"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}});
        assert_eq!(
            classify(429, Some(6), throttled.clone()),
            Failure::RateLimited { retry_after: Some(Duration::from_secs(6)) }
        );
        assert_eq!(
            classify(429, None, throttled),
            Failure::RateLimited { retry_after: Some(Duration::from_secs(6)) },
            "the body's wait when no header says it"
        );
        let daily = json!({"error": {"code": "429", "message": "Please retry after 86400 seconds."}});
        assert_eq!(classify(429, Some(86_400), daily.clone()), Failure::QuotaExhausted);
        assert_eq!(classify(429, None, daily), Failure::QuotaExhausted);
        let missing = json!({"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist."}});
        assert_eq!(classify(404, None, missing), Failure::NotFound);
        let key = json!({"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint."}});
        assert_eq!(classify(401, None, key), Failure::AuthRejected);
        let long = json!({"error": {"code": "context_length_exceeded", "message": "This model's maximum context length is 8192 tokens."}});
        assert_eq!(classify(400, None, long), Failure::ContextLength);
        assert_eq!(classify(503, None, json!({})), Failure::Upstream { status: Some(503) });
    }
}
