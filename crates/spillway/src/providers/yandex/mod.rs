//! Yandex Foundation Models native completion API: pure translation to and
//! from the OpenAI shapes Spillway carries internally.
//!
//! The adapter's I/O (the `Api-Key`/IAM header, `x-folder-id`, the HTTP
//! client, splitting the body into lines) lives in `client.rs`
//! ([`YandexAdapter`]); it calls into the pure translation here:
//! - [`to_yandex`] builds the `/foundationModels/v1/completion` body;
//! - [`from_yandex`] reads a 2xx body, [`classify_error`] a non-2xx one;
//! - [`StreamDecoder`] turns the cumulative NDJSON stream into OpenAI deltas.
//!
//! Wire details follow `shared/reference/providers.md` §6 and §9. Yandex has
//! no call ids: ids are made up on the way out and results are matched back
//! by function name. The OpenAI-shaped helpers shared with GigaChat live in
//! `gigachat::shared`.

mod client;
mod request;
mod response;
mod stream;

pub use client::YandexAdapter;
pub use request::to_yandex;
pub use response::{classify_error, from_yandex};
pub use stream::StreamDecoder;
