//! Counting the tokens a provider generates, for `source: token_velocity`.
//!
//! Sits right after the upstream call: a whole answer adds its
//! `usage.completion_tokens`; a stream adds one token per content chunk as
//! it passes (so the rate follows a long stream as it is generated, not
//! when it ends) and tops the count up to the final usage chunk's figure
//! when the upstream sends one. The only shared write is one relaxed atomic
//! add per chunk; the monitor turns the total into a rate.

use super::state::ProviderLoad;
use crate::providers::{Reply, StreamItem};
use futures_util::StreamExt;
use serde_json::Value;
use std::sync::Arc;

/// Wraps `reply` so that what it generates is added to `load`'s count.
pub fn count(load: Arc<ProviderLoad>, reply: Reply) -> Reply {
    match reply {
        Reply::Complete(c) => {
            load.record_tokens(c.completion_tokens());
            Reply::Complete(c)
        }
        Reply::Stream(s) => {
            let mut counter = StreamCounter::default();
            Reply::Stream(
                s.map(move |item| {
                    match &item {
                        Ok(StreamItem::Chunk(v)) => load.record_tokens(counter.chunk(v)),
                        Ok(StreamItem::Raw(r)) => load.record_tokens(counter.raw(r)),
                        _ => {}
                    }
                    item
                })
                .boxed(),
            )
        }
    }
}

/// A chunk's `usage.completion_tokens`.
fn usage_tokens(v: &Value) -> Option<u64> {
    v.get("usage")?.get("completion_tokens")?.as_u64()
}

/// Per-stream state: what was already counted, so a final usage chunk only
/// adds the difference.
#[derive(Debug, Default)]
pub struct StreamCounter {
    counted: u64,
}

impl StreamCounter {
    /// Tokens to add for one chunk.
    pub fn chunk(&mut self, v: &Value) -> u64 {
        self.add(usage_tokens(v), crate::api::wire::chunk_has_token(v))
    }

    /// [`Self::chunk`] for a chunk kept as bytes.
    pub fn raw(&mut self, r: &crate::api::completion::RawChunk) -> u64 {
        self.add(r.tokens().map(|t| t.output), r.has_token())
    }

    fn add(&mut self, usage: Option<u64>, has_token: bool) -> u64 {
        let add = match usage {
            Some(total) => total.saturating_sub(self.counted),
            None if has_token => 1,
            None => 0,
        };
        self.counted += add;
        add
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LoadSource;
    use crate::metrics::Metrics;
    use serde_json::json;

    fn content(text: &str) -> Value {
        json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]})
    }

    #[test]
    fn streams_count_chunks_then_top_up_to_usage() {
        let mut c = StreamCounter::default();
        assert_eq!(c.chunk(&json!({"choices":[{"index":0,"delta":{"role":"assistant"}}]})), 0);
        assert_eq!(c.chunk(&content("Hel")), 1);
        assert_eq!(c.chunk(&content("lo")), 1);
        assert_eq!(c.chunk(&json!({"choices":[],"usage":{"completion_tokens":5}})), 3);
        // A usage figure below what was counted adds nothing.
        assert_eq!(c.chunk(&json!({"choices":[],"usage":{"completion_tokens":1}})), 0);
    }

    #[tokio::test]
    async fn count_feeds_the_provider_total() {
        let metrics = Metrics::new();
        let load = super::super::state::test_provider(LoadSource::TokenVelocity { capacity: 10.0 }, &metrics);
        let whole = json!({"choices":[{"message":{"content":"x"}}],"usage":{"completion_tokens":7}});
        let _ = count(load.clone(), Reply::Complete(whole.into()));
        assert_eq!(load.tokens(), 7);
        let chunks =
            vec![Ok(StreamItem::Chunk(content("a"))), Ok(StreamItem::Chunk(content("b"))), Ok(StreamItem::Done)];
        let Reply::Stream(s) = count(load.clone(), Reply::Stream(futures_util::stream::iter(chunks).boxed())) else {
            panic!("not a stream")
        };
        assert_eq!(s.count().await, 3);
        assert_eq!(load.tokens(), 9);
    }
}
