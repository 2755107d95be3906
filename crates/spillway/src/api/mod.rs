//! The OpenAI wire format as Spillway speaks it to its clients.
//!
//! Requests are validated here ([`request`]) before any upstream is
//! touched; responses and stream chunks are stamped and completed here
//! ([`wire`]) so that whatever an upstream omitted, the client receives
//! bodies that validate against OpenAI's official schemas; errors take the
//! OpenAI shape ([`error`]); [`sse`] reads and writes server-sent events;
//! [`completion`] carries upstream answers to the client, on the fast path
//! as checked bytes; [`tokens`] holds token counts and their estimate.
//! The other entry points' formats sit beside chat's: [`responses`] (the
//! Responses API) and [`messages`] (Anthropic's Messages API) translate to
//! and from chat, as does [`legacy`] (the legacy Completions API);
//! [`reframe`] re-frames a chat stream for them as it passes, and
//! [`embeddings`] is the embeddings wire format.
//!
//! The bottom of the layering with `outcome`: nothing here imports the
//! adapters, the load monitors or anything above them.

pub mod completion;
#[cfg(test)]
mod completion_proptests;
pub mod continuation;
pub mod embeddings;
pub mod error;
pub mod headers;
pub mod json;
pub mod legacy;
mod lex;
pub mod messages;
pub mod reframe;
pub mod request;
pub mod responses;
pub mod sse;
pub mod surrogates;
pub mod tokens;
pub mod wire;

pub use error::ApiError;
pub use request::ChatRequest;
