//! Whole answers read as streams (issue 18 §3): where the provider can
//! stream, a request without `stream: true` is sent upstream as a stream
//! and its chunks put back together into one `chat.completion`, so
//! `timeouts.first_token` bounds the first token and `timeouts.idle` each
//! gap — a long answer is not cut at `first_token` — and a dead upstream is
//! still left at `first_token`.
//!
//! Which requests take it ([`reads_as_stream`]): those to `kind: openai`,
//! `anthropic` and `gigachat` providers (unless the provider sets
//! `whole_as_stream: false`) with one choice and no log probabilities. The pass-through path (the upstream's whole body, kept
//! as bytes for `openai`) still serves the rest: `kind: mock` (in process,
//! nothing to wait for), `kind: yandex` (its line stream cannot be told
//! from a whole body), and requests with `n > 1` or `logprobs`, which the
//! assembler does not rebuild. An upstream that answers the stream request
//! with a whole body anyway is taken as it is.
//!
//! What it costs is kept per chunk: the request asks for the stream by
//! putting the stream fields in front of the client's own bytes
//! (`Outgoing::as_stream`), checked chunks are absorbed from what their
//! one-pass check found (no JSON tree), and the answer is written as bytes
//! (`RawCompletion::assembled`) — docs/PERFORMANCE.md has the figures.

use super::gap::Gap;
use super::json::Assembled;
use super::plan::Target;
use crate::api::completion::Completion;
use crate::api::ChatRequest;
use crate::config::ProviderKind;
use crate::outcome::{AttemptError, Failure};
use crate::providers::{ChunkStream, StreamItem};
use tokio::time::{Duration, Instant};

/// After a finish reason, how long to wait for the usage chunk and
/// `[DONE]` before the answer is finalised without them (here and in
/// `stream.rs`).
pub const FINISH_GRACE: Duration = Duration::from_secs(1);

/// `req` (not streamed) is read from `target` as a stream.
pub fn reads_as_stream(target: &Target, req: &ChatRequest) -> bool {
    // Yandex's native stream is a line stream whose content type is not
    // agreed on, so a whole body could not be told from it: sent whole.
    let streams = matches!(
        target.provider.config.kind,
        ProviderKind::OpenAi
            | ProviderKind::Anthropic
            | ProviderKind::GigaChat
            | ProviderKind::Azure
            | ProviderKind::Gemini
            | ProviderKind::Bedrock
    );
    streams && target.provider.config.whole_as_stream && !req.stream && !req.several_choices && !req.logprobs
}

/// Reads the rest of a peeked stream (`head` holds its first token) and
/// puts it together as a `chat.completion` (not yet stamped). Each gap is
/// bounded by `idle`, the whole by `deadline`; after a finish reason only
/// a short grace is left for the usage chunk and `[DONE]`.
pub async fn assemble(
    head: Vec<StreamItem>,
    mut rest: ChunkStream,
    idle: Duration,
    deadline: Instant,
) -> Result<Completion, AttemptError> {
    let mut acc = Assembled::default();
    for item in head {
        acc.absorb_item(item);
    }
    let mut gap = Gap::new();
    loop {
        let quiet = if acc.finish.is_some() { idle.min(FINISH_GRACE) } else { idle };
        let item = match gap.next(&mut rest, || deadline.min(Instant::now() + quiet)).await {
            Ok(item) => item,
            Err(_) if acc.finish.is_some() => None,
            Err(_) if Instant::now() >= deadline => {
                return Err(AttemptError::new(Failure::Timeout, "the answer ran past timeouts.total"))
            }
            Err(_) => return Err(AttemptError::new(Failure::Timeout, "the answer stalled longer than timeouts.idle")),
        };
        match item {
            Some(Ok(StreamItem::Done)) => break,
            None if acc.finish.is_some() => break,
            None => return Err(AttemptError::new(Failure::BrokenBody, "the stream ended without a finish signal")),
            // Finished: what broke after it was only the usage or [DONE].
            Some(Err(_)) if acc.finish.is_some() => break,
            Some(Err(e)) => return Err(e),
            Some(Ok(StreamItem::Skipped)) => {}
            Some(Ok(chunk)) => acc.absorb_item(chunk),
        }
    }
    Ok(acc.into_completion())
}
