//! What Azure adds to an OpenAI stream, taken out before the runner sees
//! it (round3.md §1.3):
//!
//! - a first chunk with `"choices": []`, empty `id` and `model`, carrying
//!   only `prompt_filter_results` (once `prompt_annotations`): no chunk for
//!   the client, dropped;
//! - with the asynchronous filter, choices without a `delta` carrying
//!   `content_filter_results` and `content_filter_offsets`: dropped, unless
//!   the choice ends the answer (`finish_reason: "content_filter"` after
//!   text was sent), which is kept with an empty `delta` so it stays a
//!   valid OpenAI chunk.
//!
//! Ordinary chunks — every content chunk — pass as they came (most as the
//! fast path's raw bytes); only chunks without a token, finish or usage are
//! read as a tree, which is one or two per stream.

use crate::outcome::AttemptError;
use crate::providers::translate::StreamItem;
use serde_json::Value;

/// One item of an Azure stream as the runner should see it; `None` drops it.
pub fn tidy(item: Result<StreamItem, AttemptError>) -> Option<Result<StreamItem, AttemptError>> {
    let raw = match item {
        Ok(StreamItem::Raw(r)) if r.has_token() || r.finishes() || r.tokens().is_some() => {
            return Some(Ok(StreamItem::Raw(r)))
        }
        Ok(StreamItem::Raw(r)) => r.into_value(),
        Ok(StreamItem::Chunk(v)) => v,
        other => return Some(other),
    };
    tidy_value(raw).map(|v| Ok(StreamItem::Chunk(v)))
}

fn tidy_value(mut chunk: Value) -> Option<Value> {
    let has_usage = chunk.get("usage").is_some_and(Value::is_object);
    let choices = chunk.get_mut("choices").and_then(Value::as_array_mut)?;
    choices.retain_mut(|c| {
        if c.get("delta").is_some_and(Value::is_object) {
            return true;
        }
        let finishes = c.get("finish_reason").is_some_and(Value::is_string);
        if finishes {
            c["delta"] = Value::Object(serde_json::Map::new());
        }
        finishes
    });
    // Without choices, a chunk is worth passing only for its usage.
    (!choices.is_empty() || has_usage).then_some(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tidied(v: Value) -> Option<Value> {
        tidy(Ok(StreamItem::Chunk(v))).map(|r| r.ok().and_then(StreamItem::into_value).unwrap_or_default())
    }

    #[test]
    fn azure_annotations_are_dropped_and_chunks_kept() {
        let prompt_filter = json!({"id": "", "object": "", "created": 0, "model": "", "choices": [],
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {"hate": {"filtered": false, "severity": "safe"}}}]});
        assert_eq!(tidied(prompt_filter), None);
        let offsets = json!({"choices": [{"index": 0, "finish_reason": null,
            "content_filter_results": {"hate": {"filtered": false, "severity": "safe"}},
            "content_filter_offsets": {"check_offset": 0, "start_offset": 0, "end_offset": 10}}]});
        assert_eq!(tidied(offsets), None);
        let late_filter = json!({"choices": [{"index": 0, "finish_reason": "content_filter",
            "content_filter_results": {"violence": {"filtered": true, "severity": "high"}}}]});
        let kept = tidied(late_filter).unwrap();
        assert_eq!(kept["choices"][0]["delta"], json!({}));
        assert_eq!(kept["choices"][0]["finish_reason"], "content_filter");
        let usage = json!({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}});
        assert_eq!(tidied(usage.clone()), Some(usage));
        let role =
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]});
        assert_eq!(tidied(role.clone()), Some(role));
        assert!(matches!(tidy(Ok(StreamItem::Done)), Some(Ok(StreamItem::Done))));
    }
}
