//! Errors in Anthropic's shape: `{"type": "error", "error": {"type",
//! "message"}, "request_id"}`, with the error type Anthropic uses for the
//! status (providers.md §4.4). The status is the gateway's own (SPEC §5:
//! 503 when every model failed, 504 past the total deadline); only the
//! body's shape changes, so Anthropic SDKs raise their usual exceptions.

use super::super::ApiError;
use serde_json::{json, Value};

/// Anthropic's `error.type` for an HTTP status.
pub fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        408 | 504 => "timeout_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

/// The body of `e` in Anthropic's shape; `request_id` names the request.
pub fn body(e: &ApiError, request_id: &str) -> Value {
    let status = e.status().as_u16();
    let message = match e {
        // The upstream's own OpenAI-shaped error: its message, not its shape.
        ApiError::UpstreamRejected { body: Some(b), message, .. } => serde_json::from_slice::<Value>(b)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.get("message")).and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| message.clone()),
        other => other.message(),
    };
    json!({"type": "error", "error": {"type": error_type(status), "message": message}, "request_id": request_id})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_follow_the_status() {
        let b = body(
            &ApiError::InvalidField { param: "max_tokens".into(), message: "max_tokens: Field required".into() },
            "req_1",
        );
        assert_eq!(b["error"]["type"], "invalid_request_error");
        assert_eq!(b["error"]["message"], "max_tokens: Field required");
        let b = body(&ApiError::AllModelsFailed { cascade: "c".into(), attempts: Vec::new() }, "req_1");
        assert_eq!(b["error"]["type"], "overloaded_error");
        assert_eq!(error_type(401), "authentication_error");
        assert_eq!(error_type(504), "timeout_error");
    }
}
