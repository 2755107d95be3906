//! Cascade building over the listing fixtures (`testdata/discovery/`), and
//! a refresh that changes the listing.

use super::tests::{no_ttft, reasons, refs};
use super::*;
use crate::discovery::listing::{parse_listing, ListingFormat};
use crate::discovery::{apply_hints, diff, StaticHint};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/testdata/discovery/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The SPEC §4 `extraction` cascade over the Groq and OpenRouter fixtures.
fn extraction() -> CascadeSpec {
    CascadeSpec {
        name: "extraction".into(),
        strategy: Strategy::SpeedFirst,
        providers: vec!["groq".into(), "openrouter".into()],
        preferred: vec!["groq/llama-3.3-70b-versatile".into(), "openrouter/google/gemma-3-27b-it".into()],
        filters: Filters {
            min_context: Some(8000),
            max_cost_per_1m: Some(0.5),
            free_only: false,
            exclude_patterns: vec!["vision".into(), "guard".into(), "whisper".into(), "embed".into()],
        },
        size: 10,
        min_other_providers: 3,
        preferred_order: PreferredOrder::Strict,
    }
}

fn groq_with_prices(body: &[u8]) -> Vec<ModelMeta> {
    let listing = parse_listing(ListingFormat::Groq, "groq", body).unwrap();
    // Groq lists no prices; the config hints them, as an operator would.
    let hints: Vec<StaticHint> = listing
        .models
        .iter()
        .map(|m| StaticHint {
            id: m.id.clone(),
            price_in_per_1m: Some(0.0),
            price_out_per_1m: Some(0.0),
            ..Default::default()
        })
        .collect();
    apply_hints("groq", Some(listing.models), &hints).models
}

#[test]
fn extraction_over_fixtures() {
    let mut models = groq_with_prices(&fixture("groq-models.json"));
    models.extend(
        parse_listing(ListingFormat::Openrouter, "openrouter", &fixture("openrouter-models.json")).unwrap().models,
    );
    let ttft = |r: &str| (r == "groq/llama-3.1-8b-instant").then_some(150.0);
    let spec = extraction();
    let built = build_cascade(&spec, &models, &ttft);

    assert_eq!(built.entries.len(), 10);
    assert_eq!(refs(&built)[..2], ["groq/llama-3.3-70b-versatile", "openrouter/google/gemma-3-27b-it"]);
    assert_eq!(refs(&built)[2], "groq/llama-3.1-8b-instant", "the only measured model leads the rest");
    for e in &built.entries {
        assert_eq!(check_filters(&spec.filters, &e.meta), Ok(()), "{}", e.model_ref);
        assert!(e.meta.active && !e.model_ref.contains("guard") && !e.model_ref.contains("whisper"));
    }
    let others = built.entries.iter().filter(|e| e.meta.provider != "groq").count();
    assert!(others >= 3, "{others}");
    // Free before paid among the ranked (not preferred, not swapped) entries.
    let ranked: Vec<bool> = built
        .entries
        .iter()
        .filter(|e| matches!(e.reason, Reason::Free { .. } | Reason::Ranked { .. }))
        .map(|e| e.meta.free)
        .collect();
    assert!(ranked.windows(2).all(|w| w[0] >= w[1]), "{ranked:?}");
    // The paid Gemma is preferred ahead of the free models: legal, and said.
    assert_eq!(
        built.notes,
        ["preferred openrouter/google/gemma-3-27b-it is paid and placed ahead of 8 free model(s): most traffic will be paid"]
    );
}

#[test]
fn a_refresh_that_removes_a_model_drops_it_and_yields_the_diff() {
    let spec = CascadeSpec { min_other_providers: 0, providers: vec!["groq".into()], ..extraction() };
    let before_models = groq_with_prices(&fixture("groq-models.json"));
    let before = build_cascade(&spec, &before_models, &no_ttft);
    assert!(refs(&before).contains(&"groq/qwen/qwen3-32b"));

    // The next listing no longer has qwen3-32b and gained a newer Llama.
    let body = String::from_utf8(fixture("groq-models.json")).unwrap();
    let body = body
        .lines()
        .filter(|l| !l.contains("\"qwen/qwen3-32b\""))
        .map(|l| l.replace("\"llama-3.1-8b-instant\"", "\"llama-3.2-8b-instant\""))
        .collect::<Vec<_>>()
        .join("\n");
    let after = build_cascade(&spec, &groq_with_prices(body.as_bytes()), &no_ttft);
    assert!(!refs(&after).contains(&"groq/qwen/qwen3-32b"));

    let d = diff::diff(&spec.name, &before.model_refs(), &after.model_refs());
    assert_eq!(
        d.to_string(),
        "extraction: -groq/qwen/qwen3-32b (removed), \
         groq/llama-3.1-8b-instant → groq/llama-3.2-8b-instant (upgraded)"
    );
}

/// SPEC §4's `chat_escalated`: quality first over OpenRouter and both
/// Anthropic pages, Anthropic prices from static hints. Its preferred
/// `claude-sonnet-4` costs $15/1M output, so `max_cost_per_1m: 5` leaves it
/// out, with a note saying so.
#[test]
fn chat_escalated_over_paged_anthropic_and_openrouter() {
    let mut anthropic = Vec::new();
    for page in ["anthropic-models-page1.json", "anthropic-models-page2.json"] {
        let listing = parse_listing(ListingFormat::Anthropic, "anthropic", &fixture(page)).unwrap();
        anthropic.extend(listing.models);
    }
    let hint = |id: &str, quality: f64, input: f64, output: f64| StaticHint {
        id: id.into(),
        quality: Some(quality),
        price_in_per_1m: Some(input),
        price_out_per_1m: Some(output),
        context: None,
    };
    let hints = [hint("claude-3-5-haiku-20241022", 7.0, 0.8, 4.0), hint("claude-sonnet-4-5-20250929", 9.0, 3.0, 15.0)];
    let mut models = apply_hints("anthropic", Some(anthropic), &hints).models;
    models.extend(
        parse_listing(ListingFormat::Openrouter, "openrouter", &fixture("openrouter-models.json")).unwrap().models,
    );
    let spec = CascadeSpec {
        name: "chat_escalated".into(),
        strategy: Strategy::QualityFirst,
        providers: vec!["openrouter".into(), "anthropic".into()],
        preferred: vec!["openrouter/anthropic/claude-sonnet-4".into()],
        filters: Filters { max_cost_per_1m: Some(5.0), ..Filters::default() },
        size: 3,
        min_other_providers: 0,
        preferred_order: PreferredOrder::PriceClass,
    };
    let built = build_cascade(&spec, &models, &no_ttft);
    assert_eq!(
        built.notes,
        ["preferred openrouter/anthropic/claude-sonnet-4 is left out: price $15/1M > max_cost_per_1m 5"]
    );
    // Free before paid holds for quality_first too: the largest free
    // models, then — `max_cost_per_1m` allows paid models — the best paid
    // one that qualifies, kept in place of the third free one.
    assert_eq!(
        reasons(&built),
        ["free, by quality 405b", "free, by quality 253b", "paid tier kept (max_cost_per_1m), by quality hint 7"]
    );
    assert_eq!(refs(&built)[2], "anthropic/claude-3-5-haiku-20241022");

    // An operator who wants paid quality here excludes `:free`: then the
    // hinted Haiku leads (hints rank above parameter counts), Sonnet 4.5 is
    // too dear, Opus has no price (unknown fails max_cost_per_1m).
    let mut paid = spec.clone();
    paid.filters.exclude_patterns = vec![":free".into()];
    let built = build_cascade(&paid, &models, &no_ttft);
    assert_eq!(refs(&built)[0], "anthropic/claude-3-5-haiku-20241022");
    assert_eq!(reasons(&built)[0], "rank by quality hint 7");
    assert!(matches!(built.entries[1].reason, Reason::Ranked { key: RankKey::Params { .. } }));
    assert!(!refs(&built).iter().any(|r| r.contains("opus") || r.contains("sonnet-4-5")));
    // Round-trips through JSON, as the state store caches it.
    let json = serde_json::to_string(&built).unwrap();
    assert_eq!(serde_json::from_str::<BuiltCascade>(&json).unwrap(), built);
}

/// The same cascade with the default `preferred_order: price_class`: the
/// paid Gemma (the author's "paid fallback") goes after every free model.
#[test]
fn extraction_over_fixtures_in_price_classes() {
    let mut models = groq_with_prices(&fixture("groq-models.json"));
    models.extend(
        parse_listing(ListingFormat::Openrouter, "openrouter", &fixture("openrouter-models.json")).unwrap().models,
    );
    let spec = CascadeSpec { preferred_order: PreferredOrder::PriceClass, ..extraction() };
    let built = build_cascade(&spec, &models, &no_ttft);
    assert_eq!(built.entries.len(), 10);
    assert_eq!(refs(&built)[0], "groq/llama-3.3-70b-versatile");
    let gemma = refs(&built).iter().position(|r| *r == "openrouter/google/gemma-3-27b-it").unwrap();
    let free: Vec<bool> = built.entries.iter().map(|e| e.meta.free).collect();
    assert!(free[..gemma].iter().all(|f| *f) && !free[gemma], "{:?}", refs(&built));
    assert!(free.windows(2).all(|w| w[0] >= w[1]), "free before paid throughout: {free:?}");
    assert!(built.notes.is_empty(), "{:?}", built.notes);
    let others = built.entries.iter().filter(|e| e.meta.provider != "groq").count();
    assert!(others >= 3, "{others}");
}
