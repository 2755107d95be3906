//! A mock's [`Answer`] as an OpenAI completion, or as a stream paced token
//! by token.
//!
//! Where it sits: the last step of [`super::MockProvider::call`]. A stream
//! carries the request's in-flight guard to its end, so a saturating mock
//! counts a request until its last chunk is sent (or the client leaves).

use futures_util::StreamExt;
use serde_json::{json, Value};

use super::answer::{Answer, Said};
use super::{InFlight, Pace};
use crate::outcome::{AttemptError, Failure};
use crate::providers::{ChunkStream, Reply, StreamItem};

fn usage(answer: &Answer) -> Value {
    let (prompt, completion) = (answer.prompt_tokens, answer.completion_tokens());
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": u64::from(prompt) + u64::from(completion)})
}

/// The whole answer as a `chat.completion`.
pub(super) fn complete(answer: &Answer) -> Reply {
    let choices: Vec<Value> = answer
        .choices
        .iter()
        .enumerate()
        .map(|(i, said)| match said {
            Said::Text { finish, .. } => json!({
                "index": i,
                "message": {"role": "assistant", "content": said.content()},
                "finish_reason": finish,
            }),
            Said::Tool { id, name, arguments } => json!({
                "index": i,
                "message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}]},
                "finish_reason": "tool_calls",
            }),
        })
        .collect();
    Reply::Complete(
        json!({"id": "mock", "object": "chat.completion", "choices": choices, "usage": usage(answer)}).into(),
    )
}

fn chunk(index: usize, delta: Value, finish: Option<&str>) -> StreamItem {
    StreamItem::Chunk(json!({
        "object": "chat.completion.chunk",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
    }))
}

/// The answer as chunks: after `before_first`, each choice in turn (a role
/// chunk, then its pieces, each after the time its tokens take, then its
/// finish chunk), the usage chunk when asked for, and `[DONE]`.
///
/// `cut`: the connection breaks after half the first choice's pieces (the
/// `cut_rate` fault), as a real upstream's does mid-answer.
pub(super) fn stream(answer: Answer, pace: Pace, include_usage: bool, guard: InFlight, cut: bool) -> ChunkStream {
    let mut events: Vec<(std::time::Duration, StreamItem)> = Vec::new();
    let mut cut_at = None;
    let mut wait = pace.before_first;
    for (i, said) in answer.choices.iter().enumerate() {
        match said {
            Said::Text { pieces, finish } => {
                events.push((std::mem::take(&mut wait), chunk(i, json!({"role": "assistant", "content": ""}), None)));
                for (k, (piece, tokens)) in pieces.iter().enumerate() {
                    // The first token arrives with the role chunk's moment.
                    let gap = if k == 0 { std::time::Duration::ZERO } else { pace.per_token * *tokens };
                    events.push((gap, chunk(i, json!({"content": piece}), None)));
                    if cut && i == 0 && k + 1 == pieces.len().div_ceil(2) && pieces.len() > 1 {
                        cut_at = Some(events.len());
                    }
                }
                events.push((std::time::Duration::ZERO, chunk(i, json!({}), Some(finish))));
            }
            Said::Tool { id, name, arguments } => {
                let call =
                    json!({"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}});
                let head = json!({"role": "assistant", "content": null, "tool_calls": [call]});
                events.push((std::mem::take(&mut wait), chunk(i, head, None)));
                let chars: Vec<char> = arguments.chars().collect();
                for piece in chars.chunks(16) {
                    let piece: String = piece.iter().collect();
                    let gap = pace.per_token
                        * u32::try_from(crate::api::tokens::estimate_tokens(piece.chars().count())).unwrap_or(4);
                    events.push((
                        gap,
                        chunk(i, json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}), None),
                    ));
                }
                events.push((std::time::Duration::ZERO, chunk(i, json!({}), Some("tool_calls"))));
            }
        }
    }
    if include_usage {
        let usage = json!({"object": "chat.completion.chunk", "choices": [], "usage": usage(&answer)});
        events.push((std::time::Duration::ZERO, StreamItem::Chunk(usage)));
    }
    events.push((std::time::Duration::ZERO, StreamItem::Done));
    let events: Vec<(std::time::Duration, Result<StreamItem, AttemptError>)> = match cut_at {
        Some(at) => {
            let broken = AttemptError::new(Failure::BrokenBody, "the mock cut the stream (cut_rate)");
            events
                .into_iter()
                .take(at)
                .map(|(g, e)| (g, Ok(e)))
                .chain([(std::time::Duration::ZERO, Err(broken))])
                .collect()
        }
        None => events.into_iter().map(|(g, e)| (g, Ok(e))).collect(),
    };
    futures_util::stream::iter(events)
        .then(|(gap, item)| async move {
            if !gap.is_zero() {
                tokio::time::sleep(gap).await;
            }
            item
        })
        // The guard lives as long as the stream: dropped at its end, or
        // when the client goes away and the stream with it.
        .map(move |item| {
            let _counted = &guard;
            item
        })
        .boxed()
}
