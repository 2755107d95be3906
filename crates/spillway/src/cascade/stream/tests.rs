//! The framing keeps every event: over random read boundaries (events split
//! across reads, many events in one read, multi-byte UTF-8 split across
//! reads) the client gets each upstream event once, in order, stamped, with
//! its content and other fields as they came; a frame holds whole events
//! of at most one read; usage chunks pass or are dropped as asked and are
//! metered; a break after some events of a read sends those events first;
//! `timeouts.idle` still bounds the silence between frames.

use super::frame::{next_frame, FIRST_FRAME, MAX_FRAME};
use super::state::State;
use crate::api::sse::SseParser;
use crate::api::wire::Stamp;
use crate::providers::openai_compat::sse_chunks;
use crate::providers::StreamItem;
use bytes::Bytes;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::time::{Duration, Instant, Sleep};

/// An upstream body as its socket gives it: one read per poll that is
/// ready, never two in one go (a poll between reads finds nothing), each
/// after its delay; at the end, closed or silent for ever.
struct Reads {
    reads: VecDeque<(Duration, Bytes)>,
    /// The next read was found not ready once (zero delay).
    polled: bool,
    sleep: Option<Pin<Box<Sleep>>>,
    silent_at_end: bool,
}

impl futures_util::Stream for Reads {
    type Item = Result<Bytes, Infallible>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some((delay, _)) = this.reads.front() else {
            return if this.silent_at_end { Poll::Pending } else { Poll::Ready(None) };
        };
        if delay.is_zero() {
            if !std::mem::replace(&mut this.polled, true) {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        } else {
            let delay = *delay;
            let sleep = this.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(delay)));
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.sleep = None;
        }
        this.polled = false;
        Poll::Ready(this.reads.pop_front().map(|(_, b)| Ok(b)))
    }
}

fn stamp() -> Stamp {
    Stamp { id: "chatcmpl-gw".into(), created: 1_700_000_000, model: "prov/model-é".into() }
}

fn state(reads: Reads, include_usage: bool, idle: Duration) -> State {
    let deadline = Instant::now() + Duration::from_secs(3600);
    State::new(VecDeque::new(), sse_chunks(reads), stamp(), idle, deadline, include_usage)
}

/// What the client got: every frame until the stream ended, with the
/// (paused) time each came at.
struct Got {
    frames: Vec<(Duration, Bytes)>,
    /// What the stream kept for a continuation.
    partial: String,
    /// A usage chunk was metered.
    metered: bool,
}

/// Forwards `reads` on a paused clock until the stream ends.
fn forward(reads: Reads, include_usage: bool, idle: Duration) -> Got {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    rt.block_on(async move {
        let mut st = state(reads, include_usage, idle);
        let start = Instant::now();
        let mut frames = Vec::new();
        while !st.done {
            let f = next_frame(&mut st).await;
            frames.push((start.elapsed(), f));
        }
        Got { frames, partial: std::mem::take(&mut st.partial).into_string(), metered: st.metered }
    })
}

/// The upstream's chunks: a role chunk, `texts` as content, a finish
/// chunk, maybe a usage chunk.
fn upstream_chunks(texts: &[String], usage: bool) -> Vec<Value> {
    let chunk = |delta: Value, finish: Value| {
        json!({"id":"up","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp",
               "choices":[{"index":0,"delta":delta,"logprobs":null,"finish_reason":finish}]})
    };
    let mut v = vec![chunk(json!({"role":"assistant","content":""}), Value::Null)];
    v.extend(texts.iter().map(|t| chunk(json!({"content": t}), Value::Null)));
    v.push(chunk(json!({}), json!("stop")));
    if usage {
        v.push(json!({"id":"up","object":"chat.completion.chunk","created":1,"model":"m","choices":[],
                      "usage":{"prompt_tokens":3,"completion_tokens":texts.len(),"total_tokens":3 + texts.len()}}));
    }
    v
}

fn body(chunks: &[Value]) -> Vec<u8> {
    let mut b = Vec::new();
    for c in chunks {
        b.extend_from_slice(format!("data: {c}\n\n").as_bytes());
    }
    b.extend_from_slice(b"data: [DONE]\n\n");
    b
}

/// `body` cut at `cuts` (byte offsets, any order): the reads, none empty.
fn cut(body: &[u8], cuts: &[usize]) -> Vec<Bytes> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % body.len()).filter(|c| *c > 0).collect();
    at.sort_unstable();
    at.dedup();
    at.push(body.len());
    let mut from = 0;
    at.into_iter()
        .map(|to| {
            let b = Bytes::copy_from_slice(&body[from..to]);
            from = to;
            b
        })
        .collect()
}

fn reads(parts: Vec<Bytes>, silent_at_end: bool) -> Reads {
    Reads { reads: parts.into_iter().map(|b| (Duration::ZERO, b)).collect(), polled: false, sleep: None, silent_at_end }
}

/// The events of the frames, in order.
fn events(frames: &[(Duration, Bytes)]) -> Vec<String> {
    let (mut p, mut out) = (SseParser::new(), Vec::new());
    for (_, f) in frames {
        assert!(f.ends_with(b"\n\n"), "a frame holds whole events: {:?}", String::from_utf8_lossy(f));
        p.feed(f, &mut out).unwrap();
    }
    out.into_iter().map(|e| e.data).collect()
}

/// The event the client should get for an upstream chunk: the stamp in
/// place of the upstream's id, object, created and model.
fn stamped(mut v: Value) -> Value {
    let s = stamp();
    let o = v.as_object_mut().unwrap();
    o.insert("id".into(), json!(s.id));
    o.insert("object".into(), json!("chat.completion.chunk"));
    o.insert("created".into(), json!(s.created));
    o.insert("model".into(), json!(s.model));
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn batching_keeps_every_event_in_order_and_stamped(
        texts in prop::collection::vec("[a-zé€😀 \"\\\\\n]{0,6}", 0..40),
        cuts in prop::collection::vec(0usize..100_000, 0..30),
        usage in any::<bool>(),
        include_usage in any::<bool>(),
    ) {
        let chunks = upstream_chunks(&texts, usage);
        let parts = cut(&body(&chunks), &cuts);
        let n_reads = parts.len();
        let got = forward(reads(parts, false), include_usage, Duration::from_secs(30));
        let (partial, metered, got) = (got.partial, got.metered, got.frames);
        // At most one frame per read: the events a read brought go together.
        prop_assert!(got.len() <= n_reads, "{} frames from {n_reads} reads", got.len());
        if n_reads == 1 {
            prop_assert_eq!(got.len(), 1);
        }
        let evs = events(&got);
        let want: Vec<Value> = chunks
            .into_iter()
            .filter(|c| include_usage || c.get("usage").is_none())
            .map(stamped)
            .collect();
        prop_assert_eq!(evs.len(), want.len() + 1);
        for (e, w) in evs.iter().zip(&want) {
            let v: Value = serde_json::from_str(e).unwrap();
            prop_assert_eq!(&v, w);
            // Stamped first, as the schema's examples order it.
            prop_assert!(e.starts_with("{\"id\":\"chatcmpl-gw\",\"object\":\"chat.completion.chunk\""), "{}", e);
        }
        prop_assert_eq!(evs.last().map(String::as_str), Some("[DONE]"));
        // What a continuation would start from: every piece of text, in order.
        prop_assert_eq!(&partial, &texts.concat());
        prop_assert_eq!(metered, usage);
    }
}

#[test]
fn many_events_in_one_read_make_one_frame_up_to_its_bound() {
    let texts: Vec<String> = (0..2000).map(|i| format!("{i:0>16}")).collect();
    let got =
        forward(reads(vec![Bytes::from(body(&upstream_chunks(&texts, false)))], false), true, Duration::from_secs(30))
            .frames;
    assert!(got.len() > 1, "a backlog goes in pieces");
    for (_, f) in &got[..got.len() - 1] {
        assert!(f.len() >= MAX_FRAME && f.len() < MAX_FRAME + 1024, "{}", f.len());
    }
    assert_eq!(events(&got).len(), 2003);
}

#[test]
fn a_break_after_events_of_one_read_sends_them_then_the_error() {
    let texts = vec!["Hel".to_string(), "lo".to_string()];
    let mut b = body(&upstream_chunks(&texts, false));
    // Cut before the finish chunk: the body closes mid-answer.
    let at = b.windows(6).rposition(|w| w == b"\"stop\"").unwrap();
    b.truncate(b[..at].iter().rposition(|c| *c == b'\n').unwrap() + 1);
    let got = forward(reads(vec![Bytes::from(b)], false), true, Duration::from_secs(30));
    let (partial, got) = (got.partial, got.frames);
    assert_eq!(got.len(), 2, "the events first, then the error in a frame of its own");
    let evs = events(&got);
    assert_eq!(evs.len(), 4);
    assert!(evs[3].contains("\"code\":\"broken_body\""), "{}", evs[3]);
    assert_eq!(partial, "Hello");
}

#[test]
fn idle_still_bounds_the_silence_between_frames() {
    let texts: Vec<String> = (0..6).map(|i| format!("w{i}")).collect();
    let b = body(&upstream_chunks(&texts, false));
    let half = b.len() / 2;
    // Two reads 4 s apart (under idle: 5 s), then silence mid-answer.
    let r = Reads {
        reads: VecDeque::from([
            (Duration::from_secs(1), Bytes::copy_from_slice(&b[..half / 2])),
            (Duration::from_secs(4), Bytes::copy_from_slice(&b[half / 2..half])),
        ]),
        polled: false,
        sleep: None,
        silent_at_end: true,
    };
    let got = forward(r, true, Duration::from_secs(5)).frames;
    let times: Vec<u64> = got.iter().map(|(t, _)| t.as_secs()).collect();
    assert_eq!(times, vec![1, 5, 10], "the error comes idle after the last read");
    let last = String::from_utf8_lossy(&got[2].1);
    assert!(last.contains("\"code\":\"timeout\"") && last.contains("timeouts.idle"), "{last}");
}

/// The frames of a stream whose peek read `n` events up to the first token
/// (the role chunk and "t0") and got the rest in the same read.
fn frames_after_a_head(n: usize) -> (usize, Vec<(Duration, Bytes)>) {
    let texts: Vec<String> = (0..n).map(|i| format!("t{i:0>15}")).collect();
    let chunks = upstream_chunks(&texts, false);
    let head: VecDeque<StreamItem> = chunks[..2]
        .iter()
        .map(|c| StreamItem::Raw(crate::api::completion::RawChunk::check(&c.to_string()).unwrap()))
        .collect();
    let rest = body(&chunks[2..]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    let frames = rt.block_on(async move {
        // The rest came in the peek's read: ready at once.
        let rest = Reads { polled: true, ..reads(vec![Bytes::from(rest)], false) };
        let mut st = state(rest, true, Duration::from_secs(30));
        st.head = head;
        let mut frames = Vec::new();
        while !st.done {
            frames.push((Duration::ZERO, next_frame(&mut st).await));
        }
        frames
    });
    (chunks.len(), frames)
}

#[test]
fn a_short_answer_read_at_once_is_one_frame_with_its_head() {
    let (n, frames) = frames_after_a_head(20);
    assert_eq!(frames.len(), 1, "one write for the head and what was ready behind it");
    assert_eq!(events(&frames).len(), n + 1);
}

#[test]
fn the_first_frame_stops_at_its_smaller_bound() {
    let (n, frames) = frames_after_a_head(500);
    let first = frames[0].1.len();
    assert!((FIRST_FRAME..FIRST_FRAME + 1024).contains(&first), "the first token waits for little backlog: {first}");
    assert!(frames[1].1.len() >= MAX_FRAME, "the backlog after it in whole frames");
    assert_eq!(events(&frames).len(), n + 1);
}
