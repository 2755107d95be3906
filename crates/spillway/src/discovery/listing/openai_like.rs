//! The `{"data":[{"id":…}]}` family: OpenAI, Groq, GigaChat and vLLM.
//!
//! They share the envelope and differ in one or two extra fields
//! (providers.md §1.7, §2, §5.3, §7.1). None of them lists prices, so these
//! models are "paid, unknown cost" until a static hint says otherwise.

use serde_json::Value;

use super::{read, Entry};
use crate::discovery::model::ModelMeta;

/// Plain OpenAI: an id and nothing discovery can use (no context, no price).
pub(super) fn openai(provider: &str, entry: &Value, warnings: &mut Vec<String>) -> Entry {
    match read::id(entry, &["id"], provider, warnings) {
        Some(id) => Entry::Model(ModelMeta::new(provider, &id)),
        None => Entry::Skipped,
    }
}

/// Groq: `context_window` and `active`. Whisper, TTS and guard models share
/// the list with no type field; the cascade's `exclude_patterns` drop them.
pub(super) fn groq(provider: &str, entry: &Value, warnings: &mut Vec<String>) -> Entry {
    let Some(id) = read::id(entry, &["id"], provider, warnings) else {
        return Entry::Skipped;
    };
    let mut m = ModelMeta::new(provider, &id);
    let model_ref = m.model_ref();
    m.context = read::context(entry.get("context_window"), &model_ref, "context_window", warnings);
    // Absent means active: older responses did not carry the flag.
    m.active = read::flag(entry.get("active"), &model_ref, "active", warnings).unwrap_or(true);
    Entry::Model(m)
}

/// GigaChat: `type` tells chat models from embedders; only chat models are
/// kept. An entry without `type` is assumed to be chat (the field is
/// observed, not documented).
pub(super) fn gigachat(provider: &str, entry: &Value, warnings: &mut Vec<String>) -> Entry {
    let Some(id) = read::id(entry, &["id"], provider, warnings) else {
        return Entry::Skipped;
    };
    match entry.get("type").and_then(Value::as_str) {
        Some(kind) if !kind.eq_ignore_ascii_case("chat") => Entry::NotChat,
        _ => Entry::Model(ModelMeta::new(provider, &id)),
    }
}

/// vLLM: `max_model_len` is the context the server was started with.
pub(super) fn vllm(provider: &str, entry: &Value, warnings: &mut Vec<String>) -> Entry {
    let Some(id) = read::id(entry, &["id"], provider, warnings) else {
        return Entry::Skipped;
    };
    let mut m = ModelMeta::new(provider, &id);
    let model_ref = m.model_ref();
    m.context = read::context(entry.get("max_model_len"), &model_ref, "max_model_len", warnings);
    Entry::Model(m)
}
