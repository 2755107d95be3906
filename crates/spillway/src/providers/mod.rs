//! Upstream providers: one adapter per wire format behind one interface.
//!
//! The runner hands an adapter an OpenAI-shaped request body (already
//! rewritten for this attempt) and gets back either a whole completion or a
//! stream of OpenAI chunks ([`Reply`]), or a classified
//! [`AttemptError`](crate::outcome::AttemptError). Adapters never decide
//! *what happens next* — only what the upstream said.
//!
//! Imports run one way, each file only those below it:
//!
//! - the vocabulary: [`translate`] (stream items, error classes), `parts`
//!   and `chunks` (reading an OpenAI request, writing OpenAI chunks, as the
//!   native translators share them), [`types`]
//!   (the attempt's request and reply), [`classify`] (what went wrong, as a
//!   failure), [`headers`];
//! - the transports: [`http`] (the pooled client of `kind: openai`),
//!   [`framing`] (cutting a native stream into events or lines),
//!   [`eventstream`] (AWS's binary frames), [`sigv4`] (AWS request
//!   signing), `native` (the send-and-decode path every native adapter
//!   shares);
//! - the adapters: [`openai_compat`], [`anthropic`], [`gigachat`],
//!   [`yandex`], [`mock`], and the cloud kinds — [`azure`] (OpenAI's format
//!   on the OpenAI-compatible path), [`gemini`] and [`bedrock`] (native
//!   formats); and [`embed`], the embeddings call of the formats that have
//!   one;
//! - on top, [`provider`]: a configured provider and its adapter.
//!
//! Below all of them, `api/` (wire types) and `outcome` (failure kinds);
//! nothing here imports `load/`, the runner or the server.

pub mod anthropic;
pub mod azure;
pub mod bedrock;
pub(crate) mod chunks;
pub mod classify;
pub mod embed;
pub mod eventstream;
pub mod framing;
pub mod gemini;
pub mod gigachat;
pub mod headers;
pub mod http;
pub mod mock;
pub(crate) mod native;
pub mod openai_compat;
pub(crate) mod parts;
pub mod provider;
pub mod sigv4;
pub mod translate;
pub mod types;
pub mod yandex;

pub use classify::{classify_openai_error, failure_from_class};
pub use provider::{Adapter, InFlight, Provider};
pub use translate::StreamItem;
pub use types::{AttemptRequest, BuildError, ChunkStream, Reply, UpstreamHints};
