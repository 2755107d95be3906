//! Anthropic's paged `GET /v1/models` (providers.md §4.4): one page per
//! body; the refresh follows [`super::Listing::next_page`] and appends.

use serde_json::Value;

use super::{read, Entry};
use crate::discovery::model::ModelMeta;

pub(super) fn model(provider: &str, entry: &Value, warnings: &mut Vec<String>) -> Entry {
    let Some(id) = read::id(entry, &["id"], provider, warnings) else {
        return Entry::Skipped;
    };
    let mut m = ModelMeta::new(provider, &id);
    let model_ref = m.model_ref();
    // `max_input_tokens` is optional in the newest SDK; without it the
    // context is unknown and a static hint can fill it in.
    m.context = read::context(entry.get("max_input_tokens"), &model_ref, "max_input_tokens", warnings);
    Entry::Model(m)
}

/// The `after_id` for the next page: `last_id` while `has_more` is true.
/// When `last_id` is missing the last model on the page stands in for it;
/// with neither, paging stops with a warning rather than looping.
pub(super) fn next_page(root: &Value, models: &[ModelMeta], warnings: &mut Vec<String>) -> Option<String> {
    if root.get("has_more").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    let last = root
        .get("last_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .or_else(|| models.last().map(|m| m.id.clone()));
    if last.is_none() {
        warnings.push("anthropic listing says has_more but names no last_id; paging stopped".to_owned());
    }
    last
}
