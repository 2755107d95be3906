//! Errors the gateway returns to its clients, in OpenAI's shape:
//! `{"error": {"message", "type", "code", "param"}}`.
//!
//! Each variant knows its HTTP status in one exhaustive match, so a new
//! kind of error cannot ship without deciding it.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;

/// The client routes, as an unknown route's 404 names them.
pub const ROUTES: &str =
    "POST /v1/chat/completions, POST /v1/completions, POST /v1/responses, GET|DELETE /v1/responses/{id}, \
GET /v1/responses/{id}/input_items, POST /v1/messages, POST /v1/messages/count_tokens, POST /v1/embeddings, POST /v1/feedback, \
GET /v1/models, GET /v1/models/{id}, GET /v1/handoff/{id} (the /v1 routes also without /v1), GET /health, \
GET /healthz, GET /readyz, GET /metrics (and /admin/..., /ui with the admin token)";

/// One attempt as listed in an `all_models_failed` error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptSummary {
    /// The model ref tried.
    pub model: String,
    /// Why it did not answer (a bounded label plus detail).
    pub reason: String,
}

/// An error answered to a client.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    /// The body is not JSON.
    #[error("invalid JSON body: {0}")]
    InvalidJson(String),
    /// A field is missing or has the wrong type or value.
    #[error("{message}")]
    InvalidField {
        /// The field, e.g. `messages[0].role`.
        param: String,
        /// What is wrong with it.
        message: String,
    },
    /// Missing or wrong client key.
    #[error("missing or invalid API key")]
    Unauthorized,
    /// No cascade or model of that name.
    #[error("the model `{0}` does not exist: use a cascade name, a provider/model ref or `auto`")]
    ModelNotFound(String),
    /// An unknown path.
    #[error("not found")]
    NotFound,
    /// No route has this method and path; the message lists the routes.
    #[error("no route for {0}: Spillway serves {ROUTES}")]
    NoRoute(String),
    /// The path exists, but not with this method (`GET` on a `POST` route).
    #[error("{method} is not allowed on {path}: the `allow` header lists the methods it serves")]
    MethodNotAllowed {
        /// The method the client used.
        method: String,
        /// The path (at most 200 characters of it).
        path: String,
    },
    /// No model the request may use has a context large enough for its
    /// prompt (known contexts, or models that refused it as too long).
    #[error("{}", context_message(cascade, *tokens, *largest))]
    ContextLengthExceeded {
        /// The cascade (or `provider/model` ref) asked for.
        cascade: String,
        /// The prompt's estimated tokens.
        tokens: u64,
        /// The largest known context among the cascade's models.
        largest: Option<u64>,
    },
    /// The body exceeds `server.max_body_bytes`.
    #[error("request body is larger than the limit of {0} bytes")]
    BodyTooLarge(usize),
    /// The client did not send its whole body within `server.body_read_timeout`.
    #[error("the request body did not arrive within {0:?}")]
    BodyTimeout(std::time::Duration),
    /// The client's connection failed while sending the body.
    #[error("the request body could not be read")]
    BodyUnreadable,
    /// `server.max_concurrent_requests` reached.
    #[error("the gateway is at its concurrency limit; retry shortly")]
    Overloaded,
    /// Every model of the cascade failed and there is no handoff.
    #[error("all models failed")]
    AllModelsFailed {
        /// The cascade.
        cascade: String,
        /// Every attempt, in order.
        attempts: Vec<AttemptSummary>,
    },
    /// The upstream rejected the client's request (other 400/422): returned as is.
    #[error("upstream rejected the request")]
    UpstreamRejected {
        /// The upstream's status.
        status: u16,
        /// The upstream's body, when it was a proper OpenAI error.
        body: Option<Bytes>,
        /// Fallback message.
        message: String,
    },
    /// `timeouts.total` ran out.
    #[error("the request ran past the gateway's total deadline")]
    Timeout,
    /// The gateway is shutting down.
    #[error("the gateway is shutting down")]
    ShuttingDown,
    /// `previous_response_id` names no response this caller stored.
    #[error("Previous response with id '{0}' not found.")]
    PreviousResponseNotFound(String),
    /// `GET`/`DELETE /v1/responses/{id}` of no response this caller stored.
    #[error("Response with id '{0}' not found.")]
    ResponseNotFound(String),
    /// The store of responses cannot be reached.
    #[error("the response store is unavailable; retry shortly")]
    StoreUnavailable,
    /// The virtual key may not use this cascade (its `cascades` list).
    #[error("this key may not use `{0}`: ask for one of the cascades it is allowed")]
    KeyNotAllowed(String),
    /// A virtual key's (or its user's) rpm, tpm or `max_parallel` is reached.
    #[error("{message}")]
    RateLimited {
        /// `requests` or `tokens` (OpenAI names the dimension in `type`).
        dimension: &'static str,
        /// What was reached and when to retry.
        message: String,
    },
    /// A virtual key's (or its user's) budget is spent.
    #[error("{0}")]
    QuotaExceeded(String),
    /// The shared store that counts key limits is down and the key says
    /// `on_store_down: deny`.
    #[error("the store that counts this key's limits is unavailable; retry shortly")]
    LimitsUnavailable,
    /// The request's `model` is a cascade of another kind than the route
    /// serves (an embedding cascade on chat, or the reverse).
    #[error("`{cascade}` is {kind} cascade, and this endpoint needs {wanted} cascade: {fits}")]
    WrongKind {
        /// The cascade named.
        cascade: String,
        /// Its kind, with its article (`an embedding`).
        kind: &'static str,
        /// The kind the endpoint needs, with its article (`a chat`).
        wanted: &'static str,
        /// The cascades that fit, as a sentence.
        fits: String,
    },
}

impl ApiError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::InvalidJson(_) | Self::InvalidField { .. } | Self::ContextLengthExceeded { .. } => {
                StatusCode::BAD_REQUEST
            }
            Self::PreviousResponseNotFound(_) | Self::WrongKind { .. } => StatusCode::BAD_REQUEST,
            Self::ResponseNotFound(_) => StatusCode::NOT_FOUND,
            Self::StoreUnavailable | Self::LimitsUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::KeyNotAllowed(_) => StatusCode::FORBIDDEN,
            Self::RateLimited { .. } | Self::QuotaExceeded(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::ModelNotFound(_) | Self::NotFound | Self::NoRoute(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::BodyTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::BodyUnreadable => StatusCode::BAD_REQUEST,
            Self::Overloaded | Self::AllModelsFailed { .. } | Self::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            Self::UpstreamRejected { status, .. } => StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_REQUEST),
            Self::Timeout => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    /// OpenAI `type` and `code`.
    fn type_and_code(&self) -> (&'static str, Option<&'static str>) {
        match self {
            Self::InvalidJson(_) => ("invalid_request_error", Some("invalid_json")),
            Self::InvalidField { .. } => ("invalid_request_error", Some("invalid_value")),
            Self::ContextLengthExceeded { .. } => ("invalid_request_error", Some("context_length_exceeded")),
            Self::Unauthorized => ("invalid_request_error", Some("invalid_api_key")),
            Self::ModelNotFound(_) => ("invalid_request_error", Some("model_not_found")),
            Self::NotFound | Self::NoRoute(_) => ("invalid_request_error", Some("not_found")),
            Self::MethodNotAllowed { .. } => ("invalid_request_error", Some("method_not_allowed")),
            Self::BodyTooLarge(_) => ("invalid_request_error", Some("request_too_large")),
            Self::BodyTimeout(_) => ("invalid_request_error", Some("request_timeout")),
            Self::BodyUnreadable => ("invalid_request_error", Some("invalid_body")),
            Self::Overloaded => ("server_error", Some("overloaded")),
            Self::AllModelsFailed { .. } => ("all_models_failed", Some("all_models_failed")),
            Self::UpstreamRejected { .. } => ("invalid_request_error", None),
            Self::Timeout => ("timeout", Some("timeout")),
            Self::ShuttingDown => ("server_error", Some("shutting_down")),
            Self::PreviousResponseNotFound(_) => ("invalid_request_error", Some("previous_response_not_found")),
            Self::ResponseNotFound(_) => ("invalid_request_error", Some("not_found")),
            Self::StoreUnavailable => ("server_error", Some("store_unavailable")),
            Self::WrongKind { .. } => ("invalid_request_error", Some("wrong_model_kind")),
            Self::KeyNotAllowed(_) => ("permission_error", Some("model_not_allowed")),
            Self::RateLimited { dimension, .. } => (dimension, Some("rate_limit_exceeded")),
            Self::QuotaExceeded(_) => ("insufficient_quota", Some("insufficient_quota")),
            Self::LimitsUnavailable => ("server_error", Some("limits_unavailable")),
        }
    }

    /// The message clients see.
    pub fn message(&self) -> String {
        match self {
            Self::AllModelsFailed { cascade, attempts } => {
                let list: Vec<String> = attempts.iter().map(|a| format!("{}: {}", a.model, a.reason)).collect();
                if list.is_empty() {
                    format!("all models of `{cascade}` failed: no model was available")
                } else {
                    format!("all models of `{cascade}` failed: {}", list.join("; "))
                }
            }
            Self::UpstreamRejected { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }

    /// The OpenAI error object (`{"error": {...}}`).
    pub fn body(&self) -> serde_json::Value {
        let (kind, code) = self.type_and_code();
        let param = match self {
            Self::InvalidField { param, .. } => Some(param.clone()),
            Self::ModelNotFound(_) | Self::WrongKind { .. } | Self::KeyNotAllowed(_) => Some("model".to_string()),
            Self::PreviousResponseNotFound(_) => Some("previous_response_id".to_string()),
            Self::ContextLengthExceeded { .. } => Some("messages".to_string()),
            _ => None,
        };
        json!({"error": {"message": self.message(), "type": kind, "param": param, "code": code}})
    }
}

fn context_message(cascade: &str, tokens: u64, largest: Option<u64>) -> String {
    match largest {
        Some(largest) => format!(
            "the prompt needs about {tokens} tokens; the largest context among the models of `{cascade}` is {largest} tokens: shorten the prompt or use a cascade with a larger model"
        ),
        None => format!(
            "the prompt of about {tokens} tokens is too long for every model of `{cascade}`: shorten the prompt or use a cascade with a larger model"
        ),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if let Self::UpstreamRejected { body: Some(body), .. } = &self {
            let mut resp = (status, body.clone()).into_response();
            resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            return resp;
        }
        let mut resp = (status, axum::Json(self.body())).into_response();
        if matches!(self, Self::Overloaded | Self::ShuttingDown | Self::StoreUnavailable | Self::LimitsUnavailable) {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        resp
    }
}
