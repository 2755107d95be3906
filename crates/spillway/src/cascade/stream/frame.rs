//! Gathering a forwarded stream's events into frames: every event that
//! one upstream read brought goes to the client in one frame (one body
//! chunk, one write, one wake-up), as a plain reverse proxy forwards
//! whatever one read brought in one write.
//!
//! The first event of a frame is waited for (the gap timer bounds the
//! wait: `timeouts.idle`, `timeouts.total`); the events after it are taken
//! only while the upstream has them ready now, so nothing is held back
//! waiting for more. The stream's first frame is what was read up to the
//! first token and what is ready behind it up to [`FIRST_FRAME`] bytes, so
//! the client's first byte waits for at most that much backlog to be
//! checked, while a short answer read at once still goes out in one write;
//! a frame stops at [`MAX_FRAME`] bytes. Each event is
//! still checked, stamped, kept for a continuation and metered one by one,
//! in order: only the framing is shared. Checked chunks get the stream's stamp spliced in front of their
//! own bytes ([`chunk_prefix`], made once a stream); the general path
//! (translated chunks, continued streams) builds its JSON as before.

use super::state::{Continued, State};
use crate::api::completion::chunk_prefix;
use crate::api::completion::Tokens;
use crate::api::sse;
use crate::api::wire;
use crate::outcome::{AttemptError, Failure};
use crate::providers::{ChunkStream, StreamItem};
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::future::poll_fn;
use std::task::Poll;
use tokio::time::Instant;

/// A frame stops gathering past this many bytes (a backlog is sent in
/// pieces of about this size, not as one, so its first events need not
/// wait for the rest to be checked).
pub(super) const MAX_FRAME: usize = 16 * 1024;

/// The first frame stops gathering past this many bytes: the first token
/// waits for at most this much of the backlog read with it to be checked
/// (some 40 events, ~15 µs), and a short answer read whole (a 20-event
/// stream is ~4.5 KiB) is one write, not the first token's and the rest's.
pub(super) const FIRST_FRAME: usize = 8 * 1024;

/// What one item did to the frame being gathered.
enum Step {
    /// Gather on.
    More,
    /// The stream ended (`[DONE]` or the error event is in the frame).
    End,
    /// The attempt failed: continue the stream or end it, after the events
    /// gathered so far have gone out.
    Broke(AttemptError),
}

/// The next frame for the client: every event ready now, at least one;
/// settles the stream when it ends.
pub(super) async fn next_frame(st: &mut State) -> Bytes {
    // Room for the last frame's length (none yet: for a first frame's
    // whole bound), so the buffer is not grown to it by doubling.
    let room = if st.frame_len == 0 { FIRST_FRAME } else { st.frame_len.min(MAX_FRAME) };
    let mut out = Vec::with_capacity(room + 512);
    // The first frame is what was read up to the first token and what is
    // ready behind it, up to a smaller bound: the client's first byte waits
    // for little of the backlog read with it.
    let bound = if st.head.is_empty() { MAX_FRAME } else { FIRST_FRAME };
    loop {
        if let Some(failure) = st.broke.take() {
            // Boxed: the continuation's call (a whole attempt's future) is
            // rare, and inline it made every frame's future — and the box
            // the frames are polled from, copied whole when it is made —
            // kilobytes larger.
            if Box::pin(st.try_continue(&failure)).await {
                continue;
            }
            st.end(Some(&failure));
            out.extend_from_slice(&error_event(&failure));
            break;
        }
        let next = match st.head.pop_front() {
            Some(item) => Some(Ok(item)),
            None if out.is_empty() => wait(st).await,
            // Only what the upstream has ready now joins the frame.
            None => match ready_now(&mut st.rest).await {
                Some(next) => next,
                None => break,
            },
        };
        match step(st, next, &mut out) {
            Step::More if out.len() < bound => {}
            Step::More => {
                st.cut_short = true;
                break;
            }
            Step::End => break,
            Step::Broke(failure) => {
                st.broke = Some(failure);
                if !out.is_empty() {
                    break;
                }
            }
        }
    }
    // A frame cut short leaves a backlog: the next is sized for a whole
    // frame at once, not grown to it by doubling.
    st.frame_len = if st.cut_short { MAX_FRAME } else { out.len() };
    Bytes::from(out)
}

/// The next item if the upstream has it now (polled once, not waited for).
async fn ready_now(rest: &mut ChunkStream) -> Option<Option<Result<StreamItem, AttemptError>>> {
    match poll_fn(|cx| Poll::Ready(rest.poll_next_unpin(cx))).await {
        Poll::Ready(next) => Some(next),
        Poll::Pending => None,
    }
}

/// The next item, waited for within `timeouts.idle` and `timeouts.total`.
async fn wait(st: &mut State) -> Option<Result<StreamItem, AttemptError>> {
    let (deadline, quiet) = (st.deadline, st.quiet());
    match st.gap.next(&mut st.rest, || deadline.min(Instant::now() + quiet)).await {
        Ok(item) => item,
        // Finished but no [DONE]: the answer is complete.
        Err(_) if st.saw_finish => None,
        Err(_) if Instant::now() >= st.deadline => {
            Some(Err(AttemptError::new(Failure::Timeout, "the stream ran past timeouts.total")))
        }
        Err(_) => Some(Err(AttemptError::new(Failure::Timeout, "the stream stalled longer than timeouts.idle"))),
    }
}

/// Takes in one item: its event (if any) appended to `out`.
fn step(st: &mut State, next: Option<Result<StreamItem, AttemptError>>, out: &mut Vec<u8>) -> Step {
    match next {
        // A continued stream's chunks take the general path: they are
        // re-stamped, stripped of a second role, seamed and summed.
        Some(Ok(StreamItem::Raw(r))) if st.continued.is_some() => chunk_event(st, r.into_value(), out),
        Some(Ok(StreamItem::Chunk(v))) => chunk_event(st, v, out),
        Some(Ok(StreamItem::Raw(r))) => {
            st.out_chars += r.content_chars();
            st.refused |= r.has_refusal() || r.finish_reason() == Some("content_filter");
            st.keep(r.content_bytes(), r.other_choice(), false);
            if let Some(j) = &st.journal {
                j.answer(r.content());
                if let Some(reason) = r.finish_reason() {
                    j.finish_reason(reason);
                }
            }
            if let Some(tokens) = r.tokens() {
                st.meter_usage(tokens);
            }
            if st.include_usage || !r.is_usage_chunk() {
                st.saw_finish |= r.finishes();
                let prefix = st.prefix.get_or_insert_with(|| chunk_prefix(&st.stamp));
                r.encode_into(prefix, out);
            }
        }
        Some(Ok(StreamItem::Done)) => {
            flush_seam(st, out);
            st.end(None);
            out.extend_from_slice(sse::DONE);
            return Step::End;
        }
        // The upstream finished its choice but left out [DONE] (it
        // closed the body, kept it open in silence, or broke it).
        None if st.saw_finish => {
            st.end(None);
            out.extend_from_slice(sse::DONE);
            return Step::End;
        }
        Some(Err(e)) if st.saw_finish => {
            tracing::debug!(reason = %e, "The stream broke after its finish reason; the answer is complete.");
            st.end(None);
            out.extend_from_slice(sse::DONE);
            return Step::End;
        }
        Some(Ok(StreamItem::Skipped)) => {}
        None => return Step::Broke(AttemptError::new(Failure::BrokenBody, "the stream ended without a finish signal")),
        Some(Err(e)) => return Step::Broke(e),
    }
    Step::More
}

/// A chunk on the general path, appended to `out` unless nothing of it
/// goes out.
fn chunk_event(st: &mut State, mut v: Value, out: &mut Vec<u8>) {
    let (chars, tool, other) = delta_facts(&v);
    st.out_chars += chars;
    if let Some(usage) = v.get("usage").filter(|u| u.is_object()) {
        st.meter_usage(Tokens::of(usage));
    }
    if let Some(c) = st.continued.as_mut() {
        continued_chunk(c, st.partial.as_str(), &mut v);
    }
    let sent = content_of(&v).to_string();
    st.refused |= refuses(&v);
    if tool {
        st.keep_calls(&v);
    }
    st.keep(sent.as_bytes(), other, tool);
    if let Some(j) = &st.journal {
        j.answer(&sent);
        if let Some(reason) = v.pointer("/choices/0/finish_reason").and_then(Value::as_str) {
            j.finish_reason(reason);
        }
    }
    if !st.include_usage && wire::is_usage_chunk(&v) {
        return;
    }
    if st.continued.is_some() && is_empty_chunk(&v) {
        return;
    }
    st.saw_finish |= wire::chunk_finishes(&v);
    wire::chunk(&mut v, &st.stamp);
    sse::write_json(&v, out);
}

/// A continued answer's chunk: no second `role`, the seam held and cut,
/// usage summed with the attempts before, the models named at the end.
fn continued_chunk(c: &mut Continued, partial: &str, v: &mut Value) {
    if let Some(delta) = v.pointer_mut("/choices/0/delta").and_then(Value::as_object_mut) {
        delta.remove("role");
        if let Some(Value::String(text)) =
            delta.get_mut("content").filter(|t| t.as_str().is_some_and(|t| !t.is_empty()))
        {
            if let Some(ws) = c.resent_space.take() {
                if let Some(rest) = text.strip_prefix(ws.as_str()) {
                    *text = rest.to_string();
                }
            }
        }
        if let Some(seam) = c.seam.as_mut() {
            let text = delta.remove("content").and_then(|t| t.as_str().map(str::to_owned)).unwrap_or_default();
            let finishing = v.pointer("/choices/0/finish_reason").is_some_and(|f| !f.is_null());
            let out = seam.feed(partial, &text);
            if let Some(out) = out.or_else(|| finishing.then(|| seam.finish(partial))) {
                c.seam = None;
                if let Some(delta) = v.pointer_mut("/choices/0/delta").and_then(Value::as_object_mut) {
                    delta.insert("content".into(), Value::String(out));
                }
            }
        }
    }
    if let Some(usage) = v.get_mut("usage").and_then(Value::as_object_mut) {
        let add = |u: &mut serde_json::Map<String, Value>, k: &str, n: u64| {
            let now = u.get(k).and_then(Value::as_u64).unwrap_or(0);
            u.insert(k.into(), json!(now + n));
        };
        add(usage, "prompt_tokens", c.before.input);
        add(usage, "completion_tokens", c.before.output);
        let total = usage.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0)
            + usage.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0);
        usage.insert("total_tokens".into(), json!(total));
    }
    if wire::chunk_finishes(v) || wire::is_usage_chunk(v) {
        if let Some(obj) = v.as_object_mut() {
            obj.insert("spillway".into(), json!({"models": c.models, "continued": true}));
        }
    }
}

/// The seam's held text at the end of a stream, as a last content chunk
/// appended to `out`.
fn flush_seam(st: &mut State, out: &mut Vec<u8>) {
    let Some(c) = st.continued.as_mut() else { return };
    let Some(mut seam) = c.seam.take() else { return };
    let text = seam.finish(st.partial.as_str());
    if text.is_empty() {
        return;
    }
    st.partial.push_str(&text);
    let mut v = json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    wire::chunk(&mut v, &st.stamp);
    sse::write_json(&v, out);
}

/// A chunk with nothing left for the client (a continuation's role chunk,
/// a delta whose text is held at the seam).
fn is_empty_chunk(v: &Value) -> bool {
    let Some(choices) = v.get("choices").and_then(Value::as_array) else { return false };
    v.get("usage").is_none_or(Value::is_null)
        && !choices.is_empty()
        && choices.iter().all(|c| {
            c.get("finish_reason").is_none_or(Value::is_null)
                && c.get("delta")
                    .and_then(Value::as_object)
                    .is_none_or(|d| d.iter().all(|(_, x)| x.is_null() || x.as_str() == Some("")))
        })
}

/// Characters of content and tool-call arguments in a chunk's deltas, and
/// whether it has a tool call or a choice other than 0.
fn delta_facts(v: &Value) -> (usize, bool, bool) {
    let Some(choices) = v.get("choices").and_then(Value::as_array) else { return (0, false, false) };
    let text = |x: Option<&Value>| x.and_then(Value::as_str).map_or(0, |t| t.chars().count());
    let (mut chars, mut tool, mut other) = (0, false, false);
    for c in choices {
        other |= c.get("index").and_then(Value::as_u64).is_some_and(|i| i != 0);
        let Some(d) = c.get("delta") else { continue };
        if let Some(calls) = d.get("tool_calls").and_then(Value::as_array) {
            tool |= !calls.is_empty();
            chars += calls.iter().map(|c| text(c.get("function").and_then(|f| f.get("arguments")))).sum::<usize>();
        }
        chars += text(d.get("content"));
    }
    (chars, tool, other)
}

/// A chunk that refuses: a `refusal` delta or a `content_filter` finish.
fn refuses(v: &Value) -> bool {
    v.pointer("/choices/0/delta/refusal").and_then(Value::as_str).is_some_and(|r| !r.is_empty())
        || v.pointer("/choices/0/finish_reason").and_then(Value::as_str) == Some("content_filter")
}

fn content_of(v: &Value) -> &str {
    v.pointer("/choices/0/delta/content").and_then(Value::as_str).unwrap_or_default()
}

/// Encodes an error event for a stream that failed after its first byte.
pub fn error_event(e: &AttemptError) -> Bytes {
    let body = serde_json::json!({"error": {
        "message": format!("the upstream failed mid-stream: {e}"),
        "type": "upstream_error",
        "code": e.failure.reason(),
        "param": null,
    }});
    sse::encode_json(&body)
}
