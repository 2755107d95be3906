//! The Anthropic Messages API adapter's translation layer: pure functions
//! between Spillway's internal OpenAI-shaped `serde_json::Value`s and
//! Anthropic's wire format. No I/O happens here.
//!
//! In a request's life:
//!
//! 1. The cascade runner picks an Anthropic model and calls
//!    [`to_anthropic`] to build the `POST /v1/messages` body. A request the
//!    Messages API cannot express fails here, before anything is sent.
//! 2. The HTTP client sends it (`x-api-key`, `anthropic-version`).
//! 3. A non-streaming 2xx body goes through [`from_anthropic`]; a stream's
//!    SSE events, already split by the gateway's parser, go one by one
//!    through a [`StreamDecoder`]. Both produce OpenAI shapes without `id`,
//!    `created` and `model`, which the gateway stamps.
//! 4. A non-2xx status goes through [`classify_error`], and an `error` event
//!    inside a stream comes back classified the same way, so the runner can
//!    decide between falling through, marking the model dead, and returning
//!    the error to the client.
//!
//! The mapping follows the wire-format reference, §4 (Anthropic) and §9
//! (finish reasons, usage, tool-call ids).

mod client;
mod request;
mod response;
mod stream;

#[cfg(test)]
mod test_support;

pub use client::AnthropicAdapter;
pub use request::{to_anthropic, RAW_ARGUMENTS_KEY};
pub use response::{classify_error, from_anthropic};
pub use stream::StreamDecoder;
