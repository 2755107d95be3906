//! `kind: bedrock` — AWS Bedrock's Converse API (`converse`,
//! `converse-stream`), translated to and from OpenAI's: pure translators
//! here, the I/O (SigV4 signing, the event stream) in [`client`].
//!
//! In a request's life:
//!
//! 1. [`to_converse`] builds the body (`system` blocks, alternating
//!    `user`/`assistant` messages of content blocks, `toolUse`/`toolResult`,
//!    `inferenceConfig`, `toolConfig`, JSON mode as `outputConfig`); a
//!    request Converse cannot express fails here, before anything is sent.
//! 2. The client signs it (`crate::providers::sigv4`) and posts it to the
//!    model's URL.
//! 3. A whole 2xx body goes through [`from_converse`]; a stream's binary
//!    frames (`crate::providers::eventstream`, CRC-checked) through a
//!    [`StreamDecoder`]; an exception frame fails the attempt classified
//!    by its name.
//! 4. A non-2xx status goes through [`classify_error`]: throttling is a
//!    rate limit, a service quota a spent quota, credentials AWS refuses a
//!    wrong key, a model not enabled for the account forbidden.
//!
//! The mapping follows round3.md §3 of the project's wire-format notes
//! (written out in `docs/providers.md`); what the notes mark unverified is
//! marked where it is used.

mod client;
mod request;
mod response;
mod stream;

pub use client::BedrockAdapter;
pub use request::{to_converse, tool_use_id};
pub use response::{classify_error, from_converse};
pub use stream::StreamDecoder;
