//! The cloud kinds' listings: Azure OpenAI's deployments.
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
}
