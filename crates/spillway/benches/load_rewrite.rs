//! The request-path cost of load-aware degradation (SPEC §9): reading the
//! profile (`ProfileSelector::select`) and rewriting the body
//! (`apply_profile`) on a typical chat request. The budget is ≤ 2 µs median.
//!
//! Plain std, no harness: `cargo bench --bench load_rewrite`. Each sample
//! times a batch of requests that were cloned beforehand, so the clone and
//! the drop are not measured, and reports the per-request mean of the batch;
//! the median over samples is printed.

#![allow(
    clippy::disallowed_methods,
    reason = "a benchmark measures wall time outside any runtime; tokio's clock would add nothing"
)]

use std::hint::black_box;
use std::time::Instant;

use serde_json::{json, Map, Value};
use spillway::load::{apply_profile, Profile, ProfileSelector};

const BATCH: usize = 256;
const SAMPLES: usize = 400;

fn typical_request() -> Map<String, Value> {
    let req = json!({
        "model": "local/t-lite",
        "stream": true,
        "temperature": 0.3,
        "max_tokens": 1024,
        "messages": [
            {"role": "system", "content": "You are a helpful support assistant for an online shop. Answer in the user's language."},
            {"role": "user", "content": "Hi! I ordered a blue kettle last week and it still hasn't arrived."},
            {"role": "assistant", "content": "Sorry to hear that. Could you give me the order number?"},
            {"role": "user", "content": "Sure, it's 48213. Can you check where it is and when it will arrive?"}
        ]
    });
    match req {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn selector() -> ProfileSelector {
    ProfileSelector::new(
        vec![
            Profile::plain("normal", Some(0.75)),
            Profile {
                name: "tired".into(),
                below: Some(0.90),
                system_prompt: Some("Answer briefly.".into()),
                max_tokens_factor: Some(0.7),
            },
            Profile {
                name: "lazy".into(),
                below: None,
                system_prompt: Some(
                    "Provide extremely short answers only. No explanations. Code only if asked."
                        .into(),
                ),
                max_tokens_factor: Some(0.3),
            },
        ],
        0.03,
    )
}

/// Median nanoseconds per request of `select` + `apply_profile`.
fn measure(load: f64, single_system: bool) -> f64 {
    let mut sel = selector();
    let template = typical_request();
    let mut samples = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let mut batch: Vec<Map<String, Value>> = vec![template.clone(); BATCH];
        let start = Instant::now();
        for req in batch.iter_mut() {
            let i = sel.select(black_box(Some(load)));
            if let Some(profile) = sel.profiles().get(i) {
                apply_profile(req, profile, Some(1024), single_system);
            }
        }
        let elapsed = start.elapsed();
        black_box(&batch);
        samples.push(elapsed.as_nanos() as f64 / BATCH as f64);
    }
    samples.sort_by(f64::total_cmp);
    samples[SAMPLES / 2]
}

fn main() {
    println!("select + apply_profile, typical 4-message request, batch {BATCH}, {SAMPLES} samples");
    for (what, load, single) in [
        ("normal (no rewrite)", 0.2, true),
        ("tired, merge into system", 0.8, true),
        ("tired, separate system message", 0.8, false),
        ("lazy, merge into system", 0.95, true),
    ] {
        let ns = measure(load, single);
        println!("  {what:<32} median {ns:>7.0} ns/request");
    }
}
