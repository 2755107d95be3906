//! Listing readers against fixtures shaped like real listings
//! (`testdata/discovery/`; the OpenRouter one comes from
//! `scripts/gen-openrouter-fixture.py`).

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/testdata/discovery/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn find<'a>(listing: &'a Listing, id: &str) -> &'a ModelMeta {
    listing.models.iter().find(|m| m.id == id).unwrap_or_else(|| panic!("{id} not in listing"))
}

fn has_warning(listing: &Listing, needle: &str) -> bool {
    listing.warnings.iter().any(|w| w.contains(needle))
}

#[test]
fn format_names_round_trip() {
    for f in ListingFormat::ALL {
        assert_eq!(f.as_str().parse::<ListingFormat>(), Ok(f));
        assert_eq!(serde_json::to_string(&f).unwrap(), format!("\"{f}\""));
    }
    assert!("OpenAI".parse::<ListingFormat>().is_err());
}

#[test]
fn urls_for_each_format() {
    use ListingFormat::*;
    assert_eq!(listing_url(Groq, "https://api.groq.com/openai/v1", None), "https://api.groq.com/openai/v1/models");
    assert_eq!(listing_url(Openrouter, "https://openrouter.ai/api/v1/", None), "https://openrouter.ai/api/v1/models");
    assert_eq!(listing_url(Vllm, "http://127.0.0.1:8000/v1", None), "http://127.0.0.1:8000/v1/models");
    assert_eq!(listing_url(Ollama, "http://gpu:11434/v1", None), "http://gpu:11434/api/tags");
    assert_eq!(listing_url(Ollama, "http://gpu:11434", None), "http://gpu:11434/api/tags");
    assert_eq!(
        listing_url(Anthropic, "https://api.anthropic.com", None),
        "https://api.anthropic.com/v1/models?limit=1000"
    );
    assert_eq!(
        listing_url(Anthropic, "https://api.anthropic.com/v1", Some("claude x/y")),
        "https://api.anthropic.com/v1/models?limit=1000&after_id=claude%20x%2Fy"
    );
    assert_eq!(listing_path(Openai), "/models");
    assert_eq!(listing_path(Ollama), "/api/tags");
}

#[test]
fn bad_bodies_are_errors_not_panics() {
    let cases: &[(&[u8], &str)] = &[
        (b"<html>502 Bad Gateway</html>", "not_json"),
        (b"", "not_json"),
        (b"{\"data\": [", "not_json"),
        (b"{\"object\":\"list\"}", "no_model_array"),
        (b"{\"data\": {\"id\": \"x\"}}", "no_model_array"),
        (b"[1,2,3]", "no_model_array"),
        (b"{\"data\": [1, null, {\"id\": 5}]}", "no_usable_models"),
    ];
    for format in ListingFormat::ALL {
        for (body, label) in cases {
            // Ollama and Gemini keep their models under `models`, so `data` is "no array".
            let under_models = matches!(format, ListingFormat::Ollama | ListingFormat::Gemini);
            let label = if under_models && *label == "no_usable_models" { "no_model_array" } else { label };
            let err = parse_listing(format, "p", body).unwrap_err();
            assert_eq!(err.metric_label(), label, "{format}: {}", String::from_utf8_lossy(body));
        }
    }
    let err = parse_listing(ListingFormat::Ollama, "p", b"{\"models\": [{}]}").unwrap_err();
    assert_eq!(err.metric_label(), "no_usable_models");
}

#[test]
fn an_empty_listing_is_not_an_error() {
    let listing = parse_listing(ListingFormat::Openai, "p", b"{\"data\": []}").unwrap();
    assert!(listing.models.is_empty() && listing.warnings.is_empty());
}

#[test]
fn openrouter_fixture() {
    let listing = parse_listing(ListingFormat::Openrouter, "openrouter", &fixture("openrouter-models.json")).unwrap();
    assert!(listing.models.len() > 300, "{}", listing.models.len());
    assert_eq!(listing.next_page, None);

    let free = find(&listing, "meta-llama/llama-3.3-70b-instruct:free");
    assert!(free.free);
    assert_eq!((free.context, free.price_in_per_1m, free.price_out_per_1m), (Some(131_072), Some(0.0), Some(0.0)));
    assert_eq!(free.model_ref(), "openrouter/meta-llama/llama-3.3-70b-instruct:free");

    let paid = find(&listing, "meta-llama/llama-3.3-70b-instruct");
    assert!(!paid.free);
    assert_eq!((paid.price_in_per_1m, paid.price_out_per_1m), (Some(0.13), Some(0.4)));
    assert_eq!(paid.params_b, Some(70.0));
    assert_eq!(paid.supports_tools, Some(true));

    let gemma = find(&listing, "google/gemma-3-27b-it");
    assert_eq!(gemma.input_modalities, ["text", "image"]);
    assert_eq!(find(&listing, "meta-llama/llama-guard-4-12b").supports_tools, Some(false));
    assert_eq!(find(&listing, "black-forest-labs/flux-image").output_modalities, ["image"]);
    assert_eq!(find(&listing, "qwen/qwen3-235b-a22b").params_b, Some(235.0));

    // Negative prices are the "unknown" sentinel, without a warning.
    let auto = find(&listing, "openrouter/auto");
    assert_eq!((auto.price_in_per_1m, auto.price_out_per_1m, auto.free), (None, None, false));
    assert!(!has_warning(&listing, "openrouter/openrouter/auto"));

    // Odd fields cost the field, with a warning; the model stays.
    for id in ["broken/absurd-context", "broken/zero-context", "broken/string-context"] {
        assert_eq!(find(&listing, id).context, None, "{id}");
        assert!(has_warning(&listing, &format!("openrouter/{id}: `context_length`")), "{id}");
    }
    assert_eq!(find(&listing, "broken/float-context").context, Some(32_768));
    let s = find(&listing, "broken/string-price");
    assert_eq!((s.price_in_per_1m, s.price_out_per_1m), (None, Some(1.0)));
    assert!(has_warning(&listing, "broken/string-price: `pricing.prompt` is \"abc\""));
    assert_eq!(find(&listing, "broken/missing-prompt-price").price_in_per_1m, None);
    assert_eq!(find(&listing, "broken/huge-price").price_in_per_1m, None);
    assert!(has_warning(&listing, "broken/huge-price"));
    let n = find(&listing, "broken/null-pricing");
    assert_eq!((n.price_in_per_1m, n.free), (None, false));
    assert_eq!(find(&listing, "fallback/top-provider-context").context, Some(65_536));

    // Entries without a usable id are skipped with a warning each.
    assert_eq!(listing.warnings.iter().filter(|w| w.contains("skipped")).count(), 3);
    assert!(listing.models.iter().all(|m| !m.id.is_empty()));
}

#[test]
fn groq_fixture_keeps_inactive_models_marked() {
    let listing = parse_listing(ListingFormat::Groq, "groq", &fixture("groq-models.json")).unwrap();
    assert_eq!(listing.models.len(), 15);
    let llama = find(&listing, "llama-3.3-70b-versatile");
    assert_eq!((llama.context, llama.active, llama.price_in_per_1m), (Some(131_072), true, None));
    assert!(!find(&listing, "gemma2-9b-it").active);
    assert!(!find(&listing, "mixtral-8x7b-32768").active);
    assert_eq!(find(&listing, "mixtral-8x7b-32768").params_b, Some(56.0));
    // `"active": "yes"` warns and counts as active; a null context is silent.
    let compound = find(&listing, "compound-beta");
    assert!(compound.active);
    assert_eq!(compound.context, None);
    assert!(has_warning(&listing, "groq/compound-beta: `active`"));
    assert_eq!(listing.warnings.len(), 1, "{:?}", listing.warnings);
}

#[test]
fn anthropic_pages_follow_last_id() {
    let page1 = parse_listing(ListingFormat::Anthropic, "anthropic", &fixture("anthropic-models-page1.json")).unwrap();
    assert_eq!(page1.next_page.as_deref(), Some("claude-sonnet-4-20250514"));
    assert_eq!(page1.models.len(), 3);
    let page2 = parse_listing(ListingFormat::Anthropic, "anthropic", &fixture("anthropic-models-page2.json")).unwrap();
    assert_eq!(page2.next_page, None);
    assert_eq!(find(&page2, "claude-3-7-sonnet-20250219").context, Some(200_000));
    assert_eq!(find(&page2, "claude-3-5-haiku-20241022").context, None, "max_input_tokens is optional");

    // has_more without last_id: the last model on the page stands in.
    let body = br#"{"data":[{"id":"a"},{"id":"b"}],"has_more":true}"#;
    assert_eq!(parse_listing(ListingFormat::Anthropic, "x", body).unwrap().next_page.as_deref(), Some("b"));
    let body = br#"{"data":[],"has_more":true}"#;
    let l = parse_listing(ListingFormat::Anthropic, "x", body).unwrap();
    assert_eq!(l.next_page, None);
    assert_eq!(l.warnings.len(), 1);
}

#[test]
fn gigachat_keeps_chat_models_only() {
    let listing = parse_listing(ListingFormat::Gigachat, "gigachat", &fixture("gigachat-models.json")).unwrap();
    let ids: Vec<&str> = listing.models.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["GigaChat", "GigaChat-2", "GigaChat-2-Max", "GigaChat-2-Pro", "GigaChat-Pro"]);
    assert!(listing.warnings.is_empty());
    // A listing of embedders only is fine, just empty.
    let body = br#"{"data":[{"id":"Embeddings","type":"embedder"}]}"#;
    assert!(parse_listing(ListingFormat::Gigachat, "g", body).unwrap().models.is_empty());
}

#[test]
fn ollama_tags() {
    let listing = parse_listing(ListingFormat::Ollama, "local", &fixture("ollama-tags.json")).unwrap();
    assert_eq!(listing.models.len(), 4);
    let qwen = find(&listing, "qwen2.5:7b");
    assert_eq!((qwen.params_b, qwen.context, qwen.free), (Some(7.6), None, false));
    assert_eq!(find(&listing, "nomic-embed-text:latest").params_b, Some(0.137));
    assert_eq!(find(&listing, "no-details:1b").params_b, Some(1.0), "falls back to the tag");
}

#[test]
fn vllm_and_openai() {
    let vllm = parse_listing(ListingFormat::Vllm, "local", &fixture("vllm-models.json")).unwrap();
    assert_eq!(vllm.models.len(), 2);
    assert_eq!(find(&vllm, "t-lite").context, Some(8192));
    let openai = parse_listing(ListingFormat::Openai, "openai", &fixture("openai-models.json")).unwrap();
    assert_eq!(openai.models.len(), 4);
    assert!(openai.models.iter().all(|m| m.context.is_none() && m.price_in_per_1m.is_none() && m.active));
}

#[test]
fn duplicates_keep_the_first() {
    let body = br#"{"data":[{"id":"a","context_window":8192},{"id":"a","context_window":4096}]}"#;
    let l = parse_listing(ListingFormat::Groq, "g", body).unwrap();
    assert_eq!(l.models.len(), 1);
    assert_eq!(l.models[0].context, Some(8192));
    assert!(has_warning(&l, "listed twice"));
}

#[test]
fn odd_values_never_panic() {
    // Every field with every JSON type.
    let values = ["null", "true", "-1", "0", "1e400", "18446744073709551616", "\"x\"", "[]", "{}", "1.5", "-0.0"];
    for v in values {
        for format in ListingFormat::ALL {
            let entry = format!(
                r#"{{"id":"m","name":"m","model":"m","context_window":{v},"context_length":{v},"max_model_len":{v},
                "max_input_tokens":{v},"active":{v},"type":{v},"pricing":{{"prompt":{v},"completion":{v}}},
                "architecture":{{"input_modalities":{v},"modality":{v}}},"supported_parameters":{v},
                "top_provider":{v},"details":{{"parameter_size":{v}}}}}"#
            );
            let key = if format == ListingFormat::Ollama { "models" } else { "data" };
            let body = format!(r#"{{"{key}":[{entry}],"has_more":{v},"last_id":{v}}}"#);
            let _ = parse_listing(format, "p", body.as_bytes());
        }
    }
}
