//! What checking one stream chunk costs (`RawChunk::check`, the one-pass
//! check of an OpenAI-compatible stream's events), on a typical OpenAI
//! chunk (16 bytes of content) and Groq's first chunk; and what the next
//! event of a stream costs when it fits the shape the one before left
//! (`RawChunk::check_like`: only its new content string is read).
//!
//! And what the one-pass check of a whole answer costs
//! (`RawCompletion::check`, every passed-through answer), on the bench
//! upstream's answer and a typical OpenAI one; and what the next answer
//! of the same upstream costs when it fits the shape the one before left
//! (`AnswerShapes::check`: only its id, `created`, content and counts are
//! read).
//!
//! And what a whole stream of 20 content events costs checked as a
//! provider's stream is, against the chunk shapes its earlier streams left
//! (`ChunkShape::of`): the bench upstream's, and OpenAI's (a new
//! `obfuscation` string in every chunk, `usage` in its last).
//!
//! `cargo bench -p spillway --bench chunk` (the release profile) prints the
//! median and the fastest of 100 batches, ns per chunk;
//! `cargo bench -p spillway --bench chunk -- answer` only the cases whose
//! name holds `answer` (one case alone, for callgrind).

#![allow(clippy::disallowed_methods)] // a benchmark times itself with std's clock
#![allow(clippy::unwrap_used)]

#[path = "support/timing.rs"]
mod timing;

use spillway::api::completion::{AnswerShapes, ChunkShape, ChunkShapes, RawChunk, RawCompletion};
use std::hint::black_box;
use std::sync::Arc;

fn main() {
    // `cargo bench` passes `--bench`; the first other word picks cases.
    let only = std::env::args().skip(1).find(|a| !a.starts_with("--")).unwrap_or_default();
    let picked = |name: &str| name.contains(only.as_str());
    let typical = r#"{"id":"chatcmpl-9x2","object":"chat.completion.chunk","created":1733000000,"model":"gpt-4o-mini","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":" word1.........."},"logprobs":null,"finish_reason":null}]}"#;
    let groq = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733000000,"model":"llama-3.1-8b-instant","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"x_groq":{"id":"req_01"}}"#;
    for (name, text) in
        [("typical chunk", typical), ("Groq's first chunk", groq)].into_iter().filter(|(n, _)| picked(n))
    {
        assert!(RawChunk::check(text).is_some());
        let (m, f) = timing::median_ns(20_000, || {
            black_box(RawChunk::check(black_box(text)));
        });
        println!("{name:<20} RawChunk::check median {m:7.1} ns  fastest {f:7.1} ns");
    }
    let bench_upstream = r#"{"id":"chatcmpl-bench","object":"chat.completion","created":1760000000,"model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the benchmark upstream.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":6,"total_tokens":15}}"#;
    let openai = r#"{
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4o-2024-08-06",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "The image shows a wooden boardwalk path running through a lush green field or meadow.",
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 1117,
    "completion_tokens": 46,
    "total_tokens": 1163,
    "prompt_tokens_details": { "cached_tokens": 0, "audio_tokens": 0 },
    "completion_tokens_details": { "reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0 }
  },
  "service_tier": "default",
  "system_fingerprint": "fp_fc9f1d7035"
}"#;
    for (name, text) in
        [("the bench's answer", bench_upstream), ("an OpenAI answer", openai)].into_iter().filter(|(n, _)| picked(n))
    {
        let bytes = bytes::Bytes::from_static(text.as_bytes());
        assert!(RawCompletion::check(bytes.clone()).is_some());
        let (m, f) = timing::median_ns(20_000, || {
            black_box(RawCompletion::check(black_box(bytes.clone())));
        });
        println!("{name:<20} RawCompletion::check median {m:7.1} ns  fastest {f:7.1} ns");
    }
    // The next answer of the same upstream: other id, `created`, content
    // and counts, checked against the shape the first one left.
    for (name, first, next) in [
        (
            "the bench's next answer",
            bench_upstream.to_string(),
            bench_upstream
                .replace("chatcmpl-bench", "chatcmpl-bench-2")
                .replace("from the", "from the other")
                .replace(":6,", ":7,"),
        ),
        (
            "the next OpenAI answer",
            openai.to_string(),
            openai
                .replace("B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "B9MHDbslfkBeAs8l4bebGdFOJ7Qfh")
                .replace("wooden", "stone")
                .replace("46", "45"),
        ),
    ]
    .into_iter()
    .filter(|(n, _, _)| picked(n))
    {
        let shapes = AnswerShapes::default();
        assert!(shapes.check(bytes::Bytes::from(first)).is_some());
        let bytes = bytes::Bytes::from(next);
        let whole = RawCompletion::check(bytes.clone()).map(|r| r.to_bytes());
        assert!(whole.is_some() && shapes.check(bytes.clone()).map(|r| r.to_bytes()) == whole);
        let (m, f) = timing::median_ns(20_000, || {
            black_box(shapes.check(black_box(bytes.clone())));
        });
        println!("{name:<20} AnswerShapes::check median {m:7.1} ns  fastest {f:7.1} ns");
    }
    let next = typical.replace(" word1..........", " word2 \\n 2nd..");
    let mut shape = ChunkShape::default();
    assert!(RawChunk::check_like(typical.as_bytes(), &mut shape).is_some());
    for (name, text) in
        [("the next event", typical.to_string()), ("the next, escaped", next)].into_iter().filter(|(n, _)| picked(n))
    {
        assert_eq!(RawChunk::check_like(text.as_bytes(), &mut shape), RawChunk::check(&text));
        let (m, f) = timing::median_ns(20_000, || {
            black_box(RawChunk::check_like(black_box(text.as_bytes()), &mut shape));
        });
        println!("{name:<20} RawChunk::check_like median {m:7.1} ns  fastest {f:7.1} ns");
    }
    // A whole stream of 20 content events, checked as a provider's
    // stream is: against the shapes its earlier streams left (the role's
    // chunk, content, the finish, usage). The bench upstream's, and
    // OpenAI's (`obfuscation` in every chunk, `include_usage`).
    for (name, events) in [("the bench's stream", bench_stream()), ("an OpenAI stream", openai_stream())]
        .into_iter()
        .filter(|(n, _)| picked(n))
    {
        let shared = Arc::new(ChunkShapes::default());
        for _ in 0..2 {
            let mut shape = ChunkShape::of(&shared);
            for data in &events {
                assert_eq!(RawChunk::check_like(data.as_bytes(), &mut shape), RawChunk::check(data));
            }
        }
        let (m, f) = timing::median_ns(2_000, || {
            let mut shape = ChunkShape::of(&shared);
            for data in &events {
                black_box(RawChunk::check_like(black_box(data.as_bytes()), &mut shape));
            }
        });
        println!("{name:<20} a stream of {} events: median {m:9.1} ns  fastest {f:9.1} ns", events.len());
    }
}

/// `bench/events.sh`'s upstream's stream of 20 content events of 16 bytes.
fn bench_stream() -> Vec<String> {
    let head =
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"bench","choices":[{"index":0,"delta":"#;
    let mut out = vec![format!(r#"{head}{{"role":"assistant","content":"Hello"}},"finish_reason":null}}]}}"#)];
    out.extend((0..20).map(|i| format!(r#"{head}{{"content":"word{i:.<12}"}},"finish_reason":null}}]}}"#)));
    out.push(format!(r#"{head}{{}},"finish_reason":"stop"}}]}}"#));
    out
}

/// An OpenAI stream of 20 content events: a new `obfuscation` string in
/// every chunk, `usage` in its last.
fn openai_stream() -> Vec<String> {
    let head = r#"{"id":"chatcmpl-CE4bUkr4ahYpsP7xmVIl8XTzkTAy9","object":"chat.completion.chunk","created":1757588512,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":["#;
    let choice = |delta: &str, finish: &str| {
        format!(r#"{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish}}}],"usage":null"#)
    };
    let mut rests = vec![choice(r#"{"role":"assistant","content":"","refusal":null}"#, "null")];
    rests.extend((0..20).map(|i| choice(&format!(r#"{{"content":" word{i:.<10}"}}"#), "null")));
    rests.push(choice("{}", r#""stop""#));
    rests.push(r#"],"usage":{"prompt_tokens":12,"completion_tokens":20,"total_tokens":32,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}"#.to_string());
    rests
        .iter()
        .enumerate()
        .map(|(i, rest)| format!(r#"{head}{rest},"obfuscation":"{:x}"}}"#, 0x9e37_79b9u32.wrapping_mul(i as u32 + 1)))
        .collect()
}
