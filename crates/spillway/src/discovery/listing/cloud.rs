//! The cloud kinds' listings: Azure OpenAI's deployments and Gemini's
//! models.
//!
//! Azure's data plane lists *models available to the resource* at
//! `GET /openai/models`, which cannot be called by those ids: a call names
//! a deployment. Deployments are listed by `GET /openai/deployments`, which
//! the reference (round3.md §1.5) finds only in the `2022-12-01` data-plane
//! spec; that version is asked for, whatever the provider's `api_version`.
//! The entry shape (`{"data":[{"id","model","status","object":"deployment"}]}`)
//! is that spec's — **unverified** against a live resource. A resource that
//! no longer answers it fails the listing (the last good cascade stays);
//! list deployments under `models:` then.

use serde_json::Value;

use super::{read, Entry};
use crate::discovery::model::ModelMeta;

/// Gemini's page size: the default is small (the maximum is not in the
/// reference, round3.md §2.5: unverified), so paging goes on while the
/// answer names a `nextPageToken`.
const GEMINI_PAGE_SIZE: u32 = 1000;

/// Gemini's `GET {base}/models`, one page (`after` is the page token).
pub(super) fn gemini_url(base: &str, after: Option<&str>) -> String {
    let mut url = format!("{base}/models?pageSize={GEMINI_PAGE_SIZE}");
    if let Some(token) = after {
        url.push_str("&pageToken=");
        read::percent_encode_into(token, &mut url);
    }
    url
}

/// One Gemini model: its `name` without `models/` is what a call names;
/// models that cannot `generateContent` (embeddings, AQA) are left out;
/// `inputTokenLimit` is its context.
pub(super) fn gemini_model(provider: &str, entry: &Value, warnings: &mut Vec<String>) -> Entry {
    let Some(name) = read::id(entry, &["name"], provider, warnings) else {
        return Entry::Skipped;
    };
    let id = name.strip_prefix("models/").unwrap_or(&name);
    let methods = entry.get("supportedGenerationMethods").and_then(Value::as_array);
    // Without the field nothing says it cannot chat.
    if methods.is_some_and(|m| !m.iter().any(|x| x.as_str() == Some("generateContent"))) {
        return Entry::NotChat;
    }
    let mut m = ModelMeta::new(provider, id);
    let model_ref = m.model_ref();
    m.context = read::context(entry.get("inputTokenLimit"), &model_ref, "inputTokenLimit", warnings);
    Entry::Model(m)
}

/// The next page's token, while the answer names one.
pub(super) fn gemini_next_page(root: &Value) -> Option<String> {
    root.get("nextPageToken").and_then(Value::as_str).filter(|t| !t.is_empty()).map(str::to_owned)
}

/// The deployments listing, relative to the resource's endpoint.
pub(super) const AZURE_DEPLOYMENTS: &str = "/openai/deployments?api-version=2022-12-01";

/// The deployments listing of an Azure `base_url` (the bare endpoint, or
/// one that already ends in `/openai` or `/openai/v1`).
pub(super) fn azure_url(base: &str) -> String {
    let host = base.strip_suffix("/openai/v1").or_else(|| base.strip_suffix("/openai")).unwrap_or(base);
    format!("{host}{AZURE_DEPLOYMENTS}")
}

/// One deployment: its `id` is what a call names. Deployments still being
/// created (or failed) and those of models that do not chat (embeddings,
/// speech, images) are left out.
pub(super) fn azure_deployment(provider: &str, entry: &Value, warnings: &mut Vec<String>) -> Entry {
    let Some(id) = read::id(entry, &["id"], provider, warnings) else {
        return Entry::Skipped;
    };
    if entry.get("status").and_then(Value::as_str).is_some_and(|s| s != "succeeded") {
        return Entry::NotChat;
    }
    let model = entry.get("model").and_then(Value::as_str).unwrap_or("").to_ascii_lowercase();
    if ["embedding", "whisper", "tts", "dall-e"].iter().any(|w| model.contains(w)) {
        return Entry::NotChat;
    }
    let mut m = ModelMeta::new(provider, &id);
    // The parameter count a deployment's name gives (often none) is less
    // telling than its model's.
    if m.params_b.is_none() {
        m.params_b = crate::discovery::model::parse_param_count(&model);
    }
    Entry::Model(m)
}

#[cfg(test)]
mod tests {
    use super::super::{listing_url, parse_listing, ListingFormat};
    use serde_json::json;

    #[test]
    fn azure_deployments_are_read_and_their_url_built() {
        for base in
            ["https://r.openai.azure.com", "https://r.openai.azure.com/openai", "https://r.openai.azure.com/openai/v1"]
        {
            assert_eq!(
                listing_url(ListingFormat::Azure, base, None),
                "https://r.openai.azure.com/openai/deployments?api-version=2022-12-01"
            );
        }
        let body = json!({"object": "list", "data": [
            {"id": "gpt-4o-prod", "model": "gpt-4o", "status": "succeeded", "object": "deployment"},
            {"id": "llama-prod", "model": "Meta-Llama-3.1-70B-Instruct", "object": "deployment"},
            {"id": "half", "model": "gpt-4.1", "status": "creating"},
            {"id": "emb", "model": "text-embedding-3-large", "status": "succeeded"},
            {"model": "no id"}]});
        let listing = parse_listing(ListingFormat::Azure, "az", body.to_string().as_bytes()).unwrap();
        let ids: Vec<&str> = listing.models.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["gpt-4o-prod", "llama-prod"]);
        assert_eq!(listing.models[1].params_b, Some(70.0), "the size from the deployment's model");
        assert_eq!(listing.warnings.len(), 1, "{:?}", listing.warnings);
    }

    #[test]
    fn gemini_models_page_and_keep_the_generating_ones() {
        let base = "https://generativelanguage.googleapis.com/v1beta";
        assert_eq!(listing_url(ListingFormat::Gemini, base, None), format!("{base}/models?pageSize=1000"));
        assert_eq!(
            listing_url(ListingFormat::Gemini, base, Some("a b")),
            format!("{base}/models?pageSize=1000&pageToken=a%20b")
        );
        let body = json!({"models": [
            {"name": "models/gemini-2.5-flash", "inputTokenLimit": 1048576, "outputTokenLimit": 65536,
             "supportedGenerationMethods": ["generateContent", "countTokens"]},
            {"name": "models/text-embedding-004", "supportedGenerationMethods": ["embedContent"]},
            {"name": "models/gemma-3-27b-it", "supportedGenerationMethods": ["generateContent"]}],
            "nextPageToken": "p2"});
        let listing = parse_listing(ListingFormat::Gemini, "g", body.to_string().as_bytes()).unwrap();
        let ids: Vec<&str> = listing.models.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["gemini-2.5-flash", "gemma-3-27b-it"]);
        assert_eq!(listing.models[0].context, Some(1_048_576));
        assert_eq!(listing.models[1].params_b, Some(27.0));
        assert_eq!(listing.next_page.as_deref(), Some("p2"));
    }
}
