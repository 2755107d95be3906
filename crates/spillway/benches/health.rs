//! What health bookkeeping costs one attempt: the dead checks, a breaker
//! admission, the outcome and a TTFT sample — everything the runner does
//! per attempt besides the upstream call.
//!
//! `cargo bench -p spillway --bench health` prints the median per attempt.

#![allow(clippy::disallowed_methods)] // a benchmark times itself with std's clock
#![allow(clippy::unwrap_used)]

use spillway::config::BreakerConfig;
use spillway::health::clock::now_ms;
use spillway::health::HealthRegistry;
use std::time::{Duration, Instant};

fn main() {
    let registry = HealthRegistry::new();
    let model = registry.model("groq/llama-3.3-70b-versatile");
    let provider = registry.provider("groq");
    let cfg = BreakerConfig {
        open_min: std::time::Duration::from_secs(10),
        window: Duration::from_secs(60),
        consecutive_failures: 5,
        failure_rate: 0.3,
        min_requests: 10,
        open_for: Duration::from_secs(120),
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let _guard = rt.enter();
    let batch = 10_000u32;
    let mut samples = Vec::new();
    for _ in 0..200 {
        let started = Instant::now();
        for i in 0..batch {
            let now = now_ms();
            let alive = !provider.dead.is_dead(now) && !model.dead.is_dead(now);
            let admitted = model.admit(&registry.events);
            model.success(&cfg, &registry.events);
            model.record_ttft(f64::from(i % 300));
            std::hint::black_box((alive, admitted));
        }
        samples.push(started.elapsed().as_nanos() as f64 / f64::from(batch));
    }
    samples.sort_by(f64::total_cmp);
    println!(
        "health bookkeeping per attempt: median {:.0} ns, p90 {:.0} ns",
        samples[samples.len() / 2],
        samples[samples.len() * 9 / 10]
    );
}
