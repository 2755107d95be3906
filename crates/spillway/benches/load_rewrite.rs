//! The request-path cost of load-aware degradation (SPEC §9). Budget: the
//! profile read and rewrite add ≤ 2 µs median to a request.
//!
//! Two views, plain std, no harness (`cargo bench --bench load_rewrite`):
//! - `prepare()` as the runner calls it per attempt (registry lookup, one
//!   atomic load, the rewrite, and the body clone every attempt pays
//!   anyway), for a monitored provider in each profile, against the same
//!   call for a provider without `load:`; the difference is what load
//!   awareness adds;
//! - `apply_profile` alone on a pre-cloned body, merge and separate-message
//!   variants.
//!
//! Each sample times a batch and reports the per-request mean; the median
//! over samples is printed.

#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: wall time outside any runtime, and a broken setup must fail loudly"
)]

use std::hint::black_box;
use std::time::Instant;

use serde_json::{json, Map, Value};
use spillway::api::ChatRequest;
use spillway::cascade::prepare::prepare;
use spillway::gateway::{Gateway, Shared};
use spillway::load::{apply_profile, Profile};

const BATCH: usize = 256;
const SAMPLES: usize = 400;

const CONFIG: &str = "
providers:
  local:
    kind: openai
    base_url: http://127.0.0.1:9/v1
    default_max_tokens: 1024
    load:
      source: emulated
      profiles:
        - { name: normal, below: 0.75 }
        - { name: tired, below: 0.90, system_prompt: Answer briefly., max_tokens_factor: 0.7 }
        - { name: lazy, system_prompt: Provide extremely short answers only. No explanations. Code only if asked., max_tokens_factor: 0.3 }
  plain:
    kind: openai
    base_url: http://127.0.0.1:9/v1
cascades:
  chat:
    models: [local/t-lite, plain/t-lite]
";

fn typical_request() -> Map<String, Value> {
    let req = json!({
        "model": "chat",
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

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Median ns per `prepare()` call against target `index` of `chat`.
fn measure_prepare(gw: &Gateway, index: usize, req: &ChatRequest) -> f64 {
    let plan = gw.resolve("chat").unwrap();
    let target = &plan.targets[index];
    let mut samples = Vec::with_capacity(SAMPLES);
    let mut out = Vec::with_capacity(BATCH);
    for _ in 0..SAMPLES {
        out.clear();
        let start = Instant::now();
        for _ in 0..BATCH {
            out.push(prepare(&gw.runner(), target, black_box(req)));
        }
        samples.push(start.elapsed().as_nanos() as f64 / BATCH as f64);
        black_box(&out);
    }
    median(samples)
}

/// Median ns per `apply_profile` on pre-cloned bodies.
fn measure_apply(profile: &Profile, single_system: bool) -> f64 {
    let template = typical_request();
    let mut samples = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let mut batch: Vec<Map<String, Value>> = vec![template.clone(); BATCH];
        let start = Instant::now();
        for req in batch.iter_mut() {
            apply_profile(req, black_box(profile), Some(1024), single_system);
        }
        samples.push(start.elapsed().as_nanos() as f64 / BATCH as f64);
        black_box(&batch);
    }
    median(samples)
}

fn main() {
    let config = spillway::config::load_str(CONFIG, None, &|_| None).unwrap();
    let gw = Gateway::build(config, &Shared::default()).unwrap();
    let req = ChatRequest::from_map(typical_request()).unwrap();
    let local = gw.load.get("local").unwrap().clone();

    println!("prepare() per attempt, typical 4-message request, batch {BATCH}, {SAMPLES} samples");
    let base = measure_prepare(&gw, 1, &req);
    println!("  {:<34} median {base:>6.0} ns", "no load monitoring (body not copied)");
    for (profile, load) in [("normal", 0.2), ("tired", 0.8), ("lazy", 0.95)] {
        local.set_emulated(Some(load)).unwrap();
        let ns = measure_prepare(&gw, 0, &req);
        println!("  {:<34} median {ns:>6.0} ns  (+{:.0} ns)", format!("monitored, {profile}"), ns - base);
    }

    println!("apply_profile alone (pre-cloned body)");
    let lazy = Profile {
        name: "lazy".into(),
        below: None,
        system_prompt: Some("Provide extremely short answers only. No explanations. Code only if asked.".into()),
        max_tokens_factor: Some(0.3),
    };
    for (what, single) in [("lazy, merged into system", true), ("lazy, separate system message", false)] {
        println!("  {what:<34} median {:>6.0} ns", measure_apply(&lazy, single));
    }
}
