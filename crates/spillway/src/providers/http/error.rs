//! Why a request to an upstream got no response ([`HttpError`]) and why an
//! endpoint could not be built ([`EndpointError`]).
//!
//! The leaf of the client: connecting, tunnelling, TLS setup and the
//! endpoint return these; `openai_compat` classifies an [`HttpError`] into
//! the runner's failure.

use std::time::Duration;

/// Why a request did not get a response.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// No connection within `timeouts.connect`.
    #[error("connect timeout after {0:?}")]
    ConnectTimeout(Duration),
    /// The TCP connection or the TLS handshake failed.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The connection failed while sending or before the response head.
    #[error("request failed: {0}")]
    Send(#[source] super::link::WireError),
}

/// Errors building an endpoint (bad URL, unreadable `ca_file`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EndpointError(pub String);
