//! Ollama's native `GET /api/tags` (providers.md §8): names and parameter
//! sizes, no context. The context a server actually uses is `num_ctx` or a
//! VRAM-based default, which no listing shows, so a static hint should give
//! it; without one the model fails any `min_context`. Prices are not
//! assumed either: a hint of `{input: 0, output: 0}` makes a local model free
//! (and so ranked before paid ones), which not every operator wants.

use serde_json::Value;

use super::{read, Entry};
use crate::discovery::model::{parse_size_token, ModelMeta};

pub(super) fn model(provider: &str, entry: &Value, warnings: &mut Vec<String>) -> Entry {
    // `model` is what the chat endpoint takes; `name` is the same in every
    // observed response and is the fallback.
    let Some(id) = read::id(entry, &["model", "name"], provider, warnings) else {
        return Entry::Skipped;
    };
    let mut m = ModelMeta::new(provider, &id);
    let details = entry.get("details");
    // `parameter_size` ("7.6B") is more exact than the tag ("7b").
    if let Some(size) = details.and_then(|d| d.get("parameter_size")).and_then(Value::as_str).and_then(parse_size_token)
    {
        m.params_b = Some(size);
    }
    Entry::Model(m)
}
