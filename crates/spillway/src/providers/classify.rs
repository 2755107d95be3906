//! Turning what went wrong with an upstream into the runner's [`Failure`]:
//! an OpenAI-style error status and body, a translator's [`ErrorClass`] or
//! [`TranslateError`], a transport error of either HTTP client.
//!
//! Sits below every adapter (the mock included) and imports only the
//! shared vocabulary: each adapter says what the upstream said, classified
//! by status, code and fields here, never by the runner.

use super::translate::{ErrorClass, TranslateError};
use crate::outcome::{AttemptError, Failure};
use bytes::Bytes;
use serde_json::Value;
use std::time::Duration;

/// Classifies a non-2xx OpenAI-style error (also used by the mock).
pub fn classify_openai_error(status: u16, retry_after: Option<Duration>, body: &[u8]) -> Failure {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let err = parsed.as_ref().and_then(|v| v.get("error"));
    let code = err.and_then(|e| e.get("code")).and_then(Value::as_str).unwrap_or("");
    let kind = err.and_then(|e| e.get("type")).and_then(Value::as_str).unwrap_or("");
    let message = err
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .or_else(|| parsed.as_ref().and_then(|v| v.get("message")).and_then(Value::as_str))
        .unwrap_or("")
        .to_ascii_lowercase();
    let context_words = [
        "context length",
        "context_length",
        "maximum context",
        "context window",
        "prompt is too long",
        "too many tokens",
    ];
    let is_context = code == "context_length_exceeded" || context_words.iter().any(|w| message.contains(w));
    match status {
        401 => Failure::AuthRejected,
        402 => Failure::QuotaExhausted,
        403 => Failure::Forbidden,
        404 if message.contains("no endpoints found that support") => Failure::CapabilityMismatch,
        404 => Failure::NotFound,
        408 => Failure::Timeout,
        // Groq: 413 is a tokens-per-minute limit, not the client's fault.
        413 if code == "rate_limit_exceeded" || kind == "tokens" => Failure::RateLimited { retry_after },
        413 => Failure::ContextLength,
        429 if code == "insufficient_quota"
            || kind == "insufficient_quota"
            || message.contains("free-models-per-day") =>
        {
            Failure::QuotaExhausted
        }
        429 => Failure::RateLimited { retry_after },
        400 | 422 if code == "model_decommissioned" => Failure::NotFound,
        400 | 422 if is_context => Failure::ContextLength,
        400 | 422 if matches!(code, "unsupported_parameter" | "unsupported_value" | "tool_use_failed") => {
            Failure::CapabilityMismatch
        }
        400..=499 if !matches!(status, 409 | 424 | 498 | 499) => {
            // An OpenAI-shaped error goes back to the client unchanged.
            let body = err.is_some().then(|| Bytes::copy_from_slice(body));
            Failure::InvalidRequest { status, body }
        }
        _ => Failure::Upstream { status: Some(status) },
    }
}

/// Turns a translator's [`ErrorClass`] into the runner's [`Failure`] (the
/// native adapters classify with it).
pub fn failure_from_class(
    class: ErrorClass,
    status: u16,
    body: Option<Bytes>,
    retry_after: Option<Duration>,
) -> Failure {
    use ErrorClass as C;
    match class {
        C::RateLimited => Failure::RateLimited { retry_after },
        C::QuotaExhausted => Failure::QuotaExhausted,
        C::Forbidden => Failure::Forbidden,
        C::NotFound => Failure::NotFound,
        C::AuthRejected => Failure::AuthRejected,
        C::ContextLength => Failure::ContextLength,
        C::CapabilityMismatch => Failure::CapabilityMismatch,
        C::ContentFilter => Failure::ContentFilter,
        C::InvalidRequest => Failure::InvalidRequest { status, body },
        C::Upstream => Failure::Upstream { status: (status != 0).then_some(status) },
    }
}

/// How a native format's status alone classifies, for a body that is not
/// its error JSON (a proxy's HTML, an empty 502): 408, 409 and 424 are
/// transient, other 4xx the client's.
pub(crate) fn class_of_status(status: u16) -> ErrorClass {
    match status {
        401 => ErrorClass::AuthRejected,
        402 => ErrorClass::QuotaExhausted,
        403 => ErrorClass::Forbidden,
        404 => ErrorClass::NotFound,
        429 => ErrorClass::RateLimited,
        408 | 409 | 424 => ErrorClass::Upstream,
        400..=499 => ErrorClass::InvalidRequest,
        _ => ErrorClass::Upstream,
    }
}

/// A translator's error as the runner's attempt error.
///
/// A request the format cannot express is a capability mismatch (the next
/// model may manage), a broken upstream payload a broken body, and an error
/// the upstream reported in a 2xx body or stream keeps its class — except
/// "invalid request", which without an HTTP status says nothing about the
/// client's request and counts as an upstream failure.
pub(crate) fn translate_failure(e: TranslateError) -> AttemptError {
    let failure = match &e {
        TranslateError::Unsupported(_) => Failure::CapabilityMismatch,
        TranslateError::Malformed { .. } | TranslateError::Unreadable { .. } => Failure::BrokenBody,
        TranslateError::Upstream { class, .. } => match class {
            ErrorClass::InvalidRequest => Failure::Upstream { status: None },
            other => failure_from_class(*other, 0, None, None),
        },
    };
    AttemptError::new(failure, e.to_string())
}

/// Classifies a transport-level error of the HTTP client.
pub fn transport_error(e: &reqwest::Error) -> AttemptError {
    let failure = if e.is_timeout() {
        Failure::Timeout
    } else if e.is_connect() {
        Failure::ConnectError
    } else if e.is_body() || e.is_decode() {
        Failure::BrokenBody
    } else {
        // Resets while sending the request land here.
        Failure::ConnectError
    };
    // reqwest's Display includes the URL but never headers, so no key leaks.
    AttemptError::new(failure, e.to_string())
}

/// Converts a transport error of a body stream into an attempt error.
pub struct AttemptErrorSource(pub AttemptError);

impl From<reqwest::Error> for AttemptErrorSource {
    fn from(e: reqwest::Error) -> Self {
        let mut err = transport_error(&e);
        // Mid-body transport errors are broken bodies, not connect errors.
        if err.failure == Failure::ConnectError {
            err.failure = Failure::BrokenBody;
        }
        Self(err)
    }
}

impl From<hyper::Error> for AttemptErrorSource {
    fn from(e: hyper::Error) -> Self {
        // Mid-body: the connection broke or the framing was invalid.
        Self(AttemptError::new(Failure::BrokenBody, format!("response body: {e}")))
    }
}

impl From<super::http::WireError> for AttemptErrorSource {
    fn from(e: super::http::WireError) -> Self {
        // Mid-body: the connection broke or the framing was invalid.
        Self(AttemptError::new(Failure::BrokenBody, format!("response body: {e}")))
    }
}

impl From<std::convert::Infallible> for AttemptErrorSource {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translate_errors_are_classified() {
        let upstream = |class| TranslateError::Upstream { class, message: String::new() };
        assert_eq!(translate_failure(upstream(ErrorClass::ContentFilter)).failure, Failure::ContentFilter);
        assert_eq!(translate_failure(upstream(ErrorClass::InvalidRequest)).failure, Failure::Upstream { status: None });
        assert_eq!(translate_failure(TranslateError::Unsupported("x".into())).failure, Failure::CapabilityMismatch);
    }
}
