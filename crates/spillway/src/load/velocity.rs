//! A sliding-window tokens-per-second meter (SPEC §9, source
//! `token_velocity`): the gateway records the completion tokens of each
//! answer a provider gives, and the monitor turns the rate over `capacity`
//! into a load.
//!
//! Time comes in as explicit milliseconds (from whatever clock the caller
//! uses, typically `tokio::time::Instant` relative to a start), so tests feed
//! timestamps instead of sleeping and the meter never reads a clock.
//!
//! The window is a ring of fixed buckets: recording is O(1) with no
//! allocation, and a bucket that has fallen out of the window is recognised
//! by the bucket number stored next to its count, so nothing has to sweep old
//! buckets. The price is granularity: the window slides one bucket at a time.
//! The meter takes `&mut self`; callers that share it put it behind a mutex
//! held for a few nanoseconds per answer.

/// Tokens per second over the last `window_ms`, in `buckets` steps.
#[derive(Debug, Clone)]
pub struct VelocityMeter {
    bucket_ms: u64,
    /// `(bucket number, tokens)`; slot `n % len` holds bucket `n`.
    slots: Box<[(u64, u64)]>,
}

impl VelocityMeter {
    /// A meter over `window_ms` (at least 1 ms) split into `buckets` (at
    /// least 2, so the current, partly filled bucket is never the whole
    /// window). Ten buckets over a few seconds is a good default.
    pub fn new(window_ms: u64, buckets: usize) -> Self {
        let buckets = buckets.max(2);
        let bucket_ms = (window_ms / buckets as u64).max(1);
        VelocityMeter { bucket_ms, slots: vec![(0, 0); buckets].into_boxed_slice() }
    }

    /// The window actually covered: `buckets × bucket_ms`.
    pub fn window_ms(&self) -> u64 {
        self.bucket_ms * self.slots.len() as u64
    }

    /// Adds `tokens` generated at `now_ms`. A record older than the window
    /// (a late answer whose slot was already reused) is dropped.
    pub fn record(&mut self, now_ms: u64, tokens: u64) {
        let bucket = now_ms / self.bucket_ms;
        let len = self.slots.len() as u64;
        let Some(slot) = self.slots.get_mut((bucket % len) as usize) else {
            return;
        };
        if slot.0 == bucket {
            slot.1 = slot.1.saturating_add(tokens);
        } else if slot.0 < bucket {
            *slot = (bucket, tokens);
        }
    }

    /// Tokens per second over the buckets in the window ending at `now_ms`.
    ///
    /// Divides by the time those buckets actually span up to `now_ms` (the
    /// current bucket only partly), so the rate does not sag at the start of
    /// every bucket. Before one window has passed since time 0 it divides by
    /// the time since 0.
    pub fn rate(&self, now_ms: u64) -> f64 {
        let current = now_ms / self.bucket_ms;
        let len = self.slots.len() as u64;
        let oldest = current.saturating_add(1).saturating_sub(len);
        let tokens: u64 = self.slots.iter().filter(|(b, _)| (oldest..=current).contains(b)).map(|(_, t)| *t).sum();
        // oldest <= current, so this never underflows.
        let span_ms = (now_ms - oldest * self.bucket_ms).saturating_add(1);
        tokens as f64 * 1000.0 / span_ms as f64
    }

    /// The rate over `capacity` tokens/s, clamped to `0..=1`; `None` (load
    /// unknown) when the capacity is not a positive number, which config
    /// validation should already have rejected.
    pub fn load(&self, now_ms: u64, capacity: f64) -> Option<f64> {
        (capacity.is_finite() && capacity > 0.0).then(|| (self.rate(now_ms) / capacity).clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn steady_stream_reads_its_rate() {
        // 10 s window, 1 s buckets; 50 tokens every 100 ms = 500 tokens/s.
        let mut m = VelocityMeter::new(10_000, 10);
        for t in (100_000..130_000).step_by(100) {
            m.record(t, 50);
        }
        let r = m.rate(129_999);
        assert!(close(r, 500.0), "{r}");
        assert_eq!(m.load(129_999, 1000.0), Some(0.5));
        assert_eq!(m.load(129_999, 100.0), Some(1.0));
    }

    #[test]
    fn old_tokens_leave_the_window() {
        let mut m = VelocityMeter::new(10_000, 10);
        m.record(100_500, 4000);
        assert!(close(m.rate(109_999), 400.0));
        // 100_500's bucket (100) has left the window ending at 110_000.
        assert_eq!(m.rate(110_000), 0.0);
        assert_eq!(m.rate(500_000), 0.0);
    }

    #[test]
    fn reused_slots_reset_and_late_records_are_dropped() {
        let mut m = VelocityMeter::new(1_000, 2);
        m.record(1_100, 10);
        m.record(2_100, 20); // same slot as 1_100, one window later: replaces it
                             // Buckets 3 and 4 span 1_500..=2_499: 20 tokens in 1 s.
        assert!(close(m.rate(2_499), 20.0));
        m.record(1_200, 99); // late: its slot now holds a newer bucket
        assert!(close(m.rate(2_499), 20.0));
    }

    #[test]
    fn early_life_divides_by_elapsed_time() {
        let mut m = VelocityMeter::new(10_000, 10);
        m.record(500, 100);
        assert!(close(m.rate(999), 100.0));
    }

    #[test]
    fn degenerate_settings_are_safe() {
        let mut m = VelocityMeter::new(0, 0);
        assert_eq!(m.window_ms(), 2);
        m.record(u64::MAX, u64::MAX);
        m.record(u64::MAX, 1);
        assert!(m.rate(u64::MAX - 1).is_finite());
        assert!(m.rate(u64::MAX).is_finite());
        assert_eq!(m.load(0, 0.0), None);
        assert_eq!(m.load(0, f64::NAN), None);
    }
}
