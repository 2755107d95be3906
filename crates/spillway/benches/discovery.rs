//! Discovery benchmark: build every cascade of a realistic config from a
//! 2,000-model listing (the issue's budget: ≤ 5 ms for all of them).
//!
//! Plain std, no harness: `cargo bench -p spillway --bench discovery`.
//! The listing is synthesised here with a fixed-seed generator so the
//! numbers are comparable run to run: 1,800 OpenRouter-shaped models parsed
//! from JSON, 150 Groq models, and 50 more from Anthropic, GigaChat and a
//! local server via static hints. It prints the median of many rounds for
//! parsing the listings and for building all cascades.
#![allow(clippy::disallowed_methods, reason = "a benchmark outside any runtime times with std::time::Instant")]

use std::collections::HashMap;
use std::error::Error;
use std::hint::black_box;
use std::time::{Duration, Instant};

use spillway::discovery::{
    apply_hints, build_cascade, parse_listing, CascadeSpec, Filters, ListingFormat, ModelMeta, StaticHint, Strategy,
};

const ROUNDS: usize = 200;

/// A tiny deterministic generator (SplitMix64): no `rand` dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const VENDORS: &[&str] = &[
    "meta-llama",
    "qwen",
    "google",
    "mistralai",
    "deepseek",
    "microsoft",
    "nousresearch",
    "cohere",
    "openai",
    "x-ai",
    "amazon",
    "nvidia",
    "thudm",
    "anthropic",
];
const STEMS: &[&str] = &[
    "llama-3.3",
    "qwen3",
    "gemma-3",
    "mistral",
    "deepseek-r1",
    "phi-4",
    "hermes-4",
    "command-a",
    "gpt-oss",
    "grok-4",
    "nova",
    "nemotron",
    "glm-4",
    "claude",
];
const SIZES: &[&str] = &["", "-1.5b", "-7b", "-8b", "-14b", "-27b", "-32b", "-70b", "-120b", "-235b-a22b", "-8x7b"];
const SUFFIXES: &[&str] = &["", "-instruct", "-it", "-chat", "-preview", "-vision", "-guard"];
const CONTEXTS: &[u32] = &[4096, 8192, 32_768, 65_536, 131_072, 131_072, 200_000, 1_048_576];

fn openrouter_body(rng: &mut Rng, n: usize) -> String {
    let mut entries = Vec::with_capacity(n);
    for i in 0..n {
        let free = rng.unit() < 0.2;
        let id = format!(
            "{}/{}{}{}-{i}{}",
            rng.pick(VENDORS),
            rng.pick(STEMS),
            rng.pick(SIZES),
            rng.pick(SUFFIXES),
            if free { ":free" } else { "" }
        );
        let per_1m = if free { 0.0 } else { rng.unit() * 4.0 };
        let (p_in, p_out) = (per_1m / 1e6, per_1m * 3.0 / 1e6);
        let tools = if rng.unit() < 0.6 { r#""tools","# } else { "" };
        entries.push(format!(
            r#"{{"id":"{id}","context_length":{},"pricing":{{"prompt":"{p_in:.10}","completion":"{p_out:.10}","request":"0"}},"architecture":{{"input_modalities":["text"],"output_modalities":["text"]}},"top_provider":{{"max_completion_tokens":null}},"supported_parameters":[{tools}"max_tokens"]}}"#,
            rng.pick(CONTEXTS)
        ));
    }
    format!(r#"{{"data":[{}]}}"#, entries.join(","))
}

fn groq_body(rng: &mut Rng, n: usize) -> String {
    let entries: Vec<String> = (0..n)
        .map(|i| {
            let id = format!("{}{}{}-{i}", rng.pick(STEMS), rng.pick(SIZES), rng.pick(SUFFIXES));
            let active = rng.unit() < 0.9;
            format!(r#"{{"id":"{id}","object":"model","active":{active},"context_window":{}}}"#, rng.pick(CONTEXTS))
        })
        .collect();
    format!(r#"{{"object":"list","data":[{}]}}"#, entries.join(","))
}

/// Everything the refresh would hold after one round: 2,000 models.
fn all_models(openrouter: &str, groq: &str) -> Result<Vec<ModelMeta>, Box<dyn Error>> {
    let mut models = parse_listing(ListingFormat::Openrouter, "openrouter", openrouter.as_bytes())?.models;
    let groq = parse_listing(ListingFormat::Groq, "groq", groq.as_bytes())?.models;
    let free = |id: &str| StaticHint {
        id: id.to_owned(),
        price_in_per_1m: Some(0.0),
        price_out_per_1m: Some(0.0),
        ..Default::default()
    };
    let hints: Vec<StaticHint> = groq.iter().map(|m| free(&m.id)).collect();
    models.extend(apply_hints("groq", Some(groq), &hints).models);
    for (provider, count, price) in [("anthropic", 20, 3.0), ("gigachat", 10, 1.5), ("local", 20, 0.0)] {
        let statics: Vec<StaticHint> = (0..count)
            .map(|i| StaticHint {
                id: format!("{provider}-model-{i}-{}b", 7 + i),
                context: Some(32_768),
                price_in_per_1m: Some(price),
                price_out_per_1m: Some(price),
                quality: (i % 3 == 0).then_some(f64::from(i)),
            })
            .collect();
        models.extend(apply_hints(provider, None, &statics).models);
    }
    Ok(models)
}

fn cascades() -> Vec<CascadeSpec> {
    let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let exclude = owned(&["vision", "guard", "whisper", "embed"]);
    let spec = |name: &str, strategy, providers: &[&str], filters: Filters, size, min_other| CascadeSpec {
        name: name.to_owned(),
        strategy,
        providers: owned(providers),
        preferred: owned(&["groq/llama-3.3-70b-versatile", "openrouter/google/gemma-3-27b-it"]),
        filters,
        size,
        min_other_providers: min_other,
        preferred_order: Default::default(),
    };
    vec![
        spec(
            "extraction",
            Strategy::SpeedFirst,
            &["groq", "openrouter"],
            Filters {
                min_context: Some(8000),
                max_cost_per_1m: Some(0.5),
                free_only: false,
                exclude_patterns: exclude.clone(),
            },
            10,
            3,
        ),
        spec(
            "chat_standard",
            Strategy::SpeedFirst,
            &["groq", "openrouter", "local"],
            Filters { free_only: true, exclude_patterns: exclude.clone(), ..Filters::default() },
            8,
            2,
        ),
        spec(
            "chat_escalated",
            Strategy::QualityFirst,
            &["openrouter", "anthropic"],
            Filters { max_cost_per_1m: Some(5.0), ..Filters::default() },
            3,
            0,
        ),
        spec(
            "bulk",
            Strategy::CheapestFirst,
            &["openrouter", "groq"],
            Filters { min_context: Some(32_000), exclude_patterns: exclude.clone(), ..Filters::default() },
            15,
            2,
        ),
        spec(
            "long_context",
            Strategy::QualityFirst,
            &["openrouter", "anthropic", "gigachat"],
            Filters { min_context: Some(128_000), ..Filters::default() },
            5,
            2,
        ),
        spec(
            "coding",
            Strategy::QualityFirst,
            &["openrouter", "groq", "local"],
            Filters { max_cost_per_1m: Some(2.0), exclude_patterns: exclude, ..Filters::default() },
            10,
            3,
        ),
    ]
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut rng = Rng(0x5EED);
    let openrouter = openrouter_body(&mut rng, 1800);
    let groq = groq_body(&mut rng, 150);
    let models = all_models(&openrouter, &groq)?;
    let specs = cascades();
    // The runner's TTFT statistics: measured for about a tenth of the models.
    let ttft: HashMap<String, f64> =
        models.iter().step_by(10).map(|m| (m.model_ref(), 100.0 + rng.unit() * 2000.0)).collect();
    let ttft_ms = |model_ref: &str| ttft.get(model_ref).copied();

    let mut parse = Vec::with_capacity(ROUNDS);
    let mut build = Vec::with_capacity(ROUNDS);
    let mut built_entries = 0;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        black_box(all_models(black_box(&openrouter), black_box(&groq))?);
        parse.push(start.elapsed());

        let start = Instant::now();
        built_entries = 0;
        for spec in &specs {
            built_entries += black_box(build_cascade(spec, black_box(&models), &ttft_ms)).entries.len();
        }
        build.push(start.elapsed());
    }
    println!(
        "discovery: {} models, {} cascades ({built_entries} entries), median of {ROUNDS} rounds",
        models.len(),
        specs.len()
    );
    println!("  parse listings + apply hints: {:?}", median(parse));
    println!("  build every cascade:          {:?} (budget 5ms)", median(build));
    Ok(())
}
