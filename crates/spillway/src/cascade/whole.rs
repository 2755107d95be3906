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
    // Every item a read brought is absorbed in one poll; a wait for the
    // next is bounded by `idle` (after a finish reason, the grace), and all
    // by `deadline`.
    let quiet = |acc: &Assembled| {
        let quiet = if acc.finish.is_some() { idle.min(FINISH_GRACE) } else { idle };
        deadline.min(Instant::now() + quiet)
    };
    let end = gap.drain(&mut rest, &mut acc, absorb, quiet).await;
    match end {
        Ok(End::Complete) => {}
        // Finished: what stalled or broke after it was only the usage or [DONE].
        Err(_) | Ok(End::Failed(_)) if acc.finish.is_some() => {}
        Ok(End::Failed(e)) => return Err(e),
        Err(_) if Instant::now() >= deadline => {
            return Err(AttemptError::new(Failure::Timeout, "the answer ran past timeouts.total"))
        }
        Err(_) => return Err(AttemptError::new(Failure::Timeout, "the answer stalled longer than timeouts.idle")),
    }
    Ok(acc.into_completion())
}

/// How the stream of an answer being assembled ended.
enum End {
    /// `[DONE]`, or the end of a stream that gave its finish reason.
    Complete,
    /// An error, or an end without a finish reason.
    Failed(AttemptError),
}

/// Takes one item of the stream in (`None`: the stream ended); `Some` when
/// the stream is over.
fn absorb(acc: &mut Assembled, item: Option<Result<StreamItem, AttemptError>>) -> Option<End> {
    match item {
        Some(Ok(StreamItem::Done)) => Some(End::Complete),
        None if acc.finish.is_some() => Some(End::Complete),
        None => Some(End::Failed(AttemptError::new(Failure::BrokenBody, "the stream ended without a finish signal"))),
        Some(Err(e)) => Some(End::Failed(e)),
        Some(Ok(StreamItem::Skipped)) => None,
        Some(Ok(chunk)) => {
            acc.absorb_item(chunk);
            None
        }
    }
}
