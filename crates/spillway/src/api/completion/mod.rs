//! Answers on their way from an upstream to a client: whole
//! `chat.completion`s and `chat.completion.chunk`s of a stream.
//!
//! Most answers of OpenAI-compatible upstreams already validate against
//! OpenAI's schema: only `id`, `created` and `model` change on the way
//! through. For those, [`RawCompletion::check`] (and [`RawChunk::check`],
//! per stream event) reads the body once without building a JSON tree
//! (borrowed strings, untouched values kept as their bytes: `scan.rs`) and
//! the answer is written out as the upstream's bytes behind the gateway's
//! own stamp ([`raw`]). Anything else — a field to fill in, tool calls,
//! escaped or repeated keys, an in-band error — takes the general path: a
//! [`serde_json::Value`] completed by [`super::wire`]. A [`Completion`]
//! ([`types`]) is either, and both give the client the same fields and
//! values.
//!
//! An upstream writes its answers alike, so most are checked against an
//! earlier one's shape instead (`slots.rs`: the bytes between the values
//! that change compared, only those values read): a provider's last whole
//! answer ([`AnswerShapes`], `shape.rs`), and a stream's last chunk and its
//! provider's chunk shapes ([`ChunkShape`], `chunk_shape.rs`).

mod chunk_shape;
pub mod raw;
mod scan;
#[cfg(test)]
mod scan_oracle;
mod shape;
mod slots;
#[cfg(test)]
mod tests;
mod text;
pub mod types;

pub use super::tokens::Tokens;
pub use chunk_shape::{ChunkShape, ChunkShapes};
pub use raw::{chunk_prefix, RawChunk, RawCompletion};
pub use shape::AnswerShapes;
pub use text::TextBuf;
pub use types::Completion;
