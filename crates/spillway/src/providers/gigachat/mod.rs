//! GigaChat (Sber) v1 chat contract: pure translation to and from the
//! OpenAI shapes Spillway carries internally.
//!
//! The adapter's I/O lives in `client.rs` ([`GigaChatAdapter`]: HTTP client
//! with the Russian root CA, SSE splitting) and `auth.rs` (the OAuth token
//! cache, also used by discovery to read `GET /models`); they call into the
//! pure translation here:
//! - [`to_gigachat`] builds the `/api/v1/chat/completions` body for an attempt;
//! - [`from_gigachat`] reads a 2xx body, [`classify_error`] a non-2xx one;
//! - [`StreamDecoder`] turns SSE events into OpenAI chunks;
//! - [`parse_token`] reads the OAuth endpoint's answer.
//!
//! Wire details follow `shared/reference/providers.md` §5 and §9. GigaChat
//! has no call ids, so ids are made up (`call_<hex>`) on the way out and
//! `tool` results are matched back to function names through the ids in the
//! same request's assistant messages.

pub(crate) mod auth;
mod client;
mod request;
mod response;
pub(crate) mod shared;
mod stream;
mod token;

#[cfg(test)]
pub(crate) mod test_support;

pub use client::GigaChatAdapter;
pub(crate) use client::DEFAULT_BASE_URL;
pub use request::to_gigachat;
pub use response::{classify_error, from_gigachat};
pub use stream::StreamDecoder;
pub use token::parse_token;
