//! What the sync job keeps while the store is unreachable.

use super::*;

#[test]
fn kept_changes_keep_the_longest_mark_and_the_latest_revive() {
    let mut pending = HashMap::new();
    remember(&mut pending, "a".into(), Pending::Dead(10, DeadReason::Empty));
    remember(&mut pending, "a".into(), Pending::Dead(5, DeadReason::NotFound));
    assert!(matches!(pending.get("a"), Some(Pending::Dead(10, DeadReason::Empty))));
    remember(&mut pending, "a".into(), Pending::Revived);
    assert!(matches!(pending.get("a"), Some(Pending::Revived)));
    assert!(keep(LocalChange::Outcome { key: "a".into(), failed: true }).is_none());
}

#[test]
fn quality_demotions_are_kept_apart_from_dead_marks_and_the_longest_wins() {
    use crate::quality::Signal;
    let mut pending = HashMap::new();
    remember(&mut pending, "m".into(), Pending::Dead(10, DeadReason::Empty));
    for change in [
        LocalChange::Demoted { key: "m".into(), until_ms: 50, reason: Signal::WrongScript },
        LocalChange::Demoted { key: "m".into(), until_ms: 20, reason: Signal::Empty },
    ] {
        let (k, p) = keep(change).unwrap();
        remember(&mut pending, k, p);
    }
    assert!(matches!(pending.get("m"), Some(Pending::Dead(10, _))), "the dead mark stays");
    assert!(matches!(pending.get("quality:m"), Some(Pending::Demoted(50, Signal::WrongScript))));
    let (k, p) = keep(LocalChange::Restored { key: "m".into() }).unwrap();
    remember(&mut pending, k, p);
    assert!(matches!(pending.get("quality:m"), Some(Pending::Restored)));
}

/// `/readyz` reads this flag: it must say degraded from the moment shared
/// state starts, not only once the sync job has first run (before the
/// fix, an instance reported "ready" while it still dropped outcomes).
#[tokio::test(flavor = "current_thread")]
async fn shared_state_is_degraded_until_the_link_is_first_up() {
    let config = crate::config::StateConfig {
        backend: crate::config::StateBackend::Redis,
        redis_url: Some(crate::secret::Secret::new("redis://127.0.0.1:1")),
        key_prefix: "spillway-unit:".into(),
        data_dir: std::env::temp_dir(),
    };
    let health = Arc::new(HealthRegistry::new());
    let status = Arc::new(StateStatus::default());
    let supervisor = crate::supervisor::Supervisor::new(CancellationToken::new());
    let rules: RulesFn = Arc::new(|| BreakerConfig {
        window: std::time::Duration::from_secs(60),
        consecutive_failures: 5,
        failure_rate: 0.3,
        min_requests: 10,
        open_for: std::time::Duration::from_secs(120),
        open_min: std::time::Duration::from_secs(10),
    });
    start_redis(&config, &health, &status, &supervisor, rules).unwrap();
    assert!(status.degraded(), "degraded before the sync job has run");
    tokio::task::yield_now().await;
    assert!(status.degraded(), "still degraded while connecting");
    supervisor.token().cancel();
}
