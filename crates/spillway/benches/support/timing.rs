//! The clock the hand-rolled benches share (`#[path]`-included).

use std::time::Instant;

/// The median and the fastest of 100 batches of `batch` calls, ns per
/// call. On a shared machine the fastest batch is the one least disturbed
/// by other work.
pub fn median_ns(batch: u32, mut f: impl FnMut()) -> (f64, f64) {
    let mut samples = Vec::new();
    for _ in 0..100 {
        let started = Instant::now();
        for _ in 0..batch {
            f();
        }
        samples.push(started.elapsed().as_nanos() as f64 / f64::from(batch));
    }
    samples.sort_by(f64::total_cmp);
    (samples[samples.len() / 2], samples[0])
}
