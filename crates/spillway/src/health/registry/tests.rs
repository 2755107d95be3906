//! Unit tests of dead marks, key rejection and TTFT.

use super::*;
use crate::config::BreakerConfig;
use crate::health::breaker::Admission;

#[test]
fn a_longer_mark_extends_a_shorter_one_never_the_reverse() {
    let slot = DeadSlot::default();
    assert_eq!(slot.mark(5_000, DeadReason::Empty), 5_000);
    assert_eq!(slot.mark(9_000, DeadReason::RateLimited), 9_000);
    assert_eq!(slot.mark(7_000, DeadReason::NotFound), 9_000, "a shorter mark never shortens");
    assert_eq!(slot.get(1_000), Some(DeadMark { until_ms: 9_000, reason: DeadReason::RateLimited }));
    assert!(slot.is_dead(8_999));
    assert!(!slot.is_dead(9_000), "marks expire by themselves");
    assert_eq!(slot.get(9_000), None);
    slot.clear();
    assert!(!slot.is_dead(0));
}

#[test]
fn key_rejection_is_announced_once() {
    let reg = HealthRegistry::new();
    let mut rx = reg.subscribe();
    let far = now_ms() + 60_000;
    reg.reject_key("groq", far);
    reg.reject_key("groq", far);
    assert_eq!(rx.try_recv().ok(), Some(HealthEvent::KeyRejected { provider: "groq".into() }));
    assert!(rx.try_recv().is_err());
    assert!(reg.provider("groq").dead.is_dead(now_ms()));
}

#[tokio::test(start_paused = true)]
async fn a_successful_probe_shares_the_close() {
    let reg = HealthRegistry::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    reg.observe(tx);
    let cfg = BreakerConfig {
        open_min: std::time::Duration::from_secs(10),
        window: std::time::Duration::from_secs(60),
        consecutive_failures: 1,
        failure_rate: 1.0,
        min_requests: 100,
        open_for: std::time::Duration::from_secs(10),
    };
    let m = reg.model("p/m");
    m.failure(&cfg, &reg.events);
    tokio::time::advance(std::time::Duration::from_secs(11)).await;
    assert_eq!(m.admit(&reg.events), Admission::Probe);
    m.success(&cfg, &reg.events);
    let mut changes = Vec::new();
    while let Ok(c) = rx.try_recv() {
        changes.push(c);
    }
    assert_eq!(changes.last(), Some(&LocalChange::BreakerClosed { key: "p/m".into() }), "{changes:?}");
}

#[test]
fn the_shared_ttft_wins_over_the_local_one() {
    let r = HealthRegistry::new();
    r.model("p/a").record_ttft(900.0);
    r.model("p/b").record_ttft(100.0);
    assert_eq!((r.ttft_ms("p/a"), r.ttft_ms("p/none")), (Some(900.0), None));
    // Other instances saw p/a fast: every instance's samples decide.
    r.set_shared_ttft(HashMap::from([("p/a".to_string(), 50.0)]));
    assert_eq!((r.ttft_ms("p/a"), r.ttft_ms("p/b")), (Some(50.0), Some(100.0)));
}

#[test]
fn ttft_is_the_median_of_the_recent_samples() {
    let m = ModelHealth::new("p/m".into(), Arc::default());
    assert_eq!(m.ttft_ms(), None);
    m.record_ttft(100.0);
    m.record_ttft(200.0);
    assert_eq!(m.ttft_ms(), Some(150.0));
    // One slow outlier does not move it (an average would).
    m.record_ttft(5000.0);
    assert_eq!(m.ttft_ms(), Some(200.0));
    // Only the last TTFT_WINDOW samples count.
    for _ in 0..crate::health::stats::TTFT_WINDOW {
        m.record_ttft(40.0);
    }
    assert_eq!(m.ttft_ms(), Some(40.0));
}
