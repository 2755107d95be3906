//! What checking one stream chunk costs (`RawChunk::check`, the one-pass
//! check of an OpenAI-compatible stream's events), on a typical OpenAI
//! chunk (16 bytes of content) and Groq's first chunk; and what the next
//! event of a stream costs when it fits the shape the one before left
//! (`RawChunk::check_like`: only its new content string is read).
//!
//! `cargo bench -p spillway --bench chunk` (the release profile) prints the
//! median and the fastest of 100 batches, ns per chunk.

#![allow(clippy::disallowed_methods)] // a benchmark times itself with std's clock
#![allow(clippy::unwrap_used)]

#[path = "support/timing.rs"]
mod timing;

use spillway::api::completion::{ChunkShape, RawChunk};
use std::hint::black_box;

fn main() {
    let typical = r#"{"id":"chatcmpl-9x2","object":"chat.completion.chunk","created":1733000000,"model":"gpt-4o-mini","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":" word1.........."},"logprobs":null,"finish_reason":null}]}"#;
    let groq = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733000000,"model":"llama-3.1-8b-instant","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"x_groq":{"id":"req_01"}}"#;
    for (name, text) in [("typical chunk", typical), ("Groq's first chunk", groq)] {
        assert!(RawChunk::check(text).is_some());
        let (m, f) = timing::median_ns(20_000, || {
            black_box(RawChunk::check(black_box(text)));
        });
        println!("{name:<20} RawChunk::check median {m:7.1} ns  fastest {f:7.1} ns");
    }
    let next = typical.replace(" word1..........", " word2 \\n 2nd..");
    let mut shape = ChunkShape::default();
    assert!(RawChunk::check_like(typical.as_bytes(), &mut shape).is_some());
    for (name, text) in [("the next event", typical.to_string()), ("the next, escaped", next)] {
        assert_eq!(RawChunk::check_like(text.as_bytes(), &mut shape), RawChunk::check(&text));
        let (m, f) = timing::median_ns(20_000, || {
            black_box(RawChunk::check_like(black_box(text.as_bytes()), &mut shape));
        });
        println!("{name:<20} RawChunk::check_like median {m:7.1} ns  fastest {f:7.1} ns");
    }
}
