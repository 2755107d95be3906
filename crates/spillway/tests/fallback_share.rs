//! The fallback-share alert across instances: two in-process gateways share
//! one state store; their traffic crosses the threshold only when added up,
//! and exactly one of them publishes the alert (the claim in the store;
//! each dispatcher then deduplicates its own repeats). Without a shared store the same
//! traffic stays quiet (each instance alone has too few answers). Paused
//! time: the share job's ticks run as the test advances the clock.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

use spillway::alerts::{Event, Outbound};
use spillway::gateway::{Gateway, Shared};
use spillway::health::clock::now_ms;
use spillway::state::memory::MemoryStore;
use spillway::state::StateStore;
use spillway::supervisor::Supervisor;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// A 10 s window (1 s buckets, a check every second), alerts above 50%.
const YAML: &str = "providers:
  p:
    kind: mock
    models: [{ id: a }, { id: b }]
cascades:
  chat:
    models: [p/a, p/b]
alerts:
  fallback_share: { above: 0.5, for: 10s }
  repeat_after: 1h
";

struct Instance {
    gw: Gateway,
    alerts: broadcast::Receiver<Outbound>,
    _jobs: Supervisor,
}

fn instance(store: Option<Arc<dyn StateStore>>) -> Instance {
    let config = spillway::config::load_str(YAML, None, &|_| None).unwrap();
    let shared = Shared::default();
    if let Some(store) = store {
        shared.state.set_store(store);
    }
    // A component test of the share job across instances: each instance's
    // generation jobs run as `serve` starts them, but the two meet in one
    // in-memory store on the paused clock (a real Redis cannot be paused).
    let gw = Gateway::build(config, &shared).unwrap();
    let alerts = gw.shared.alerts.subscribe();
    let jobs = Supervisor::new(CancellationToken::new());
    gw.start_jobs(&jobs);
    Instance { gw, alerts, _jobs: jobs }
}

/// Every answer is a fallback; each instance gets one every 3 s, so a
/// 10 s window holds 3–4 per instance (fewer than the 5 a share needs)
/// and 6–8 for both.
async fn serve_split(a: &Instance, b: &Instance, seconds: u64) {
    for _ in 0..seconds * 2 / 3 {
        a.gw.shared.alerts.traffic.record("chat", true, now_ms());
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        b.gw.shared.alerts.traffic.record("chat", true, now_ms());
        tokio::time::sleep(Duration::from_millis(1_500)).await;
    }
}

fn fallback_alerts(i: &mut Instance) -> Vec<Event> {
    let mut out = Vec::new();
    while let Ok(m) = i.alerts.try_recv() {
        if let Outbound::Alert(e @ Event::FallbackShare { .. }) = m {
            out.push(e);
        }
    }
    out
}

#[tokio::test(start_paused = true)]
async fn split_traffic_alerts_once_for_both_instances() {
    let store: Arc<dyn StateStore> = Arc::new(MemoryStore::new());
    let (mut a, mut b) = (instance(Some(store.clone())), instance(Some(store)));
    serve_split(&a, &b, 60).await;
    let (from_a, from_b) = (fallback_alerts(&mut a), fallback_alerts(&mut b));
    assert_eq!(from_a.len() + from_b.len(), 1, "a: {from_a:?}, b: {from_b:?}");
    let alert = from_a.iter().chain(&from_b).next().unwrap();
    assert!(
        matches!(alert, Event::FallbackShare { cascade, share, .. } if cascade == "chat" && (*share - 1.0).abs() < 1e-9),
        "{alert:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn without_a_shared_store_each_instance_sees_too_little() {
    let (mut a, mut b) = (instance(None), instance(None));
    serve_split(&a, &b, 60).await;
    assert!(fallback_alerts(&mut a).is_empty());
    assert!(fallback_alerts(&mut b).is_empty());
    // The same instance alone, with enough traffic, alerts from its own
    // counters (each tick publishes; its dispatcher sends the first).
    for _ in 0..30 {
        a.gw.shared.alerts.traffic.record("chat", true, now_ms());
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert!(!fallback_alerts(&mut a).is_empty());
    assert!(fallback_alerts(&mut b).is_empty());
}
