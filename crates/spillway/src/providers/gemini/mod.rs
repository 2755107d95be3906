//! `kind: gemini` — Google's Gemini API in its own format
//! (generativelanguage `v1beta`: `generateContent`,
//! `streamGenerateContent?alt=sse`), translated to and from OpenAI's:
//! pure translators here, the I/O in [`client`].
//!
//! In a request's life:
//!
//! 1. [`to_gemini`] builds the body (system instruction, `user`/`model`
//!    turns, function declarations and calling mode, `generationConfig`
//!    with JSON mode as `responseMimeType` + `responseJsonSchema`); a
//!    request Gemini cannot express fails here, before anything is sent.
//! 2. The client posts it with `x-goog-api-key` to the model's URL.
//! 3. A whole 2xx body goes through [`from_gemini`], a stream's SSE events
//!    through a [`StreamDecoder`]; a blocked prompt or an answer the safety
//!    filters stopped before any text is a content-filter failure (the next
//!    model is tried).
//! 4. A non-2xx status goes through [`classify_error`]: a free-tier daily
//!    quota is quota exhaustion, a per-minute one a rate limit with the
//!    `RetryInfo` wait, an invalid key (a 400 there) a wrong key.
//!
//! The mapping follows round3.md §2 of the project's wire-format notes
//! (written out in `docs/providers.md`); what the notes mark unverified is
//! marked where it is used.

mod client;
mod request;
mod response;
mod stream;
mod tools;

pub use client::{url, GeminiAdapter, DEFAULT_BASE_URL};
pub use request::{to_gemini, SKIP_SIGNATURE};
pub use response::{classify_error, from_gemini, retry_delay};
pub use stream::StreamDecoder;
