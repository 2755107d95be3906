//! The Redis state store against a real Redis server: the conformance
//! suite, propagation between two stores (two instances), one shared
//! breaker over both, key hygiene, and an outage with recovery.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod redis_support;

use redis_support::*;
use spillway::health::clock::now_ms;
use spillway::state::redis::RedisStore;
use spillway::state::{conformance, BreakerRules, LinkState, StateChange, StateStore, StoredMark};
use spillway::supervisor::Supervisor;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A store with its link running; waits until it is up.
async fn connected(url: &str, prefix: &str, sup: &Supervisor) -> Arc<RedisStore> {
    let (store, link) = RedisStore::new(url, prefix).unwrap();
    sup.spawn(link);
    let mut state = store.link().unwrap();
    tokio::time::timeout(Duration::from_secs(5), state.wait_for(|s| *s == LinkState::Up)).await.unwrap().unwrap();
    store
}

fn rules(consecutive: u32) -> BreakerRules {
    BreakerRules {
        consecutive_failures: consecutive,
        failure_rate: 0.9,
        min_requests: 100,
        window: Duration::from_secs(60),
        open_for: Duration::from_secs(30),
    }
}

#[tokio::test]
async fn redis_store_passes_the_conformance_suite() {
    let Some((url, _server)) = any_redis("redis_store_passes_the_conformance_suite").await else { return };
    let sup = Supervisor::new(CancellationToken::new());
    let prefix = unique_prefix("conformance");
    let store = connected(&url, &prefix, &sup).await;
    if let Err(e) = conformance::run(store.as_ref(), &prefix).await {
        panic!("{e}");
    }
    assert_eq!(store.backend(), "redis");
    sup.stop(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn a_mark_made_by_one_instance_reaches_the_other_within_100ms() {
    let Some((url, _server)) = any_redis("a_mark_made_by_one_instance_reaches_the_other").await else { return };
    let sup = Supervisor::new(CancellationToken::new());
    let prefix = unique_prefix("propagation");
    let a = connected(&url, &prefix, &sup).await;
    let b = connected(&url, &prefix, &sup).await;
    let mut heard = b.subscribe();
    let mut delays = Vec::new();
    for i in 0..50 {
        let key = format!("p/model-{i}");
        let start = tokio::time::Instant::now();
        let now = now_ms();
        a.mark_dead(&key, StoredMark { until_ms: now + 60_000, reason: "rate_limited".into() }, now).await.unwrap();
        loop {
            let change = tokio::time::timeout(Duration::from_millis(100), heard.recv()).await.unwrap().unwrap();
            if matches!(&change, StateChange::Dead { key: k, .. } if *k == key) {
                break;
            }
        }
        delays.push(start.elapsed());
    }
    delays.sort();
    let p99 = delays[delays.len() * 99 / 100 - 1];
    eprintln!("propagation A→B: median {:?}, p99 {:?}", delays[delays.len() / 2], p99);
    assert!(p99 < Duration::from_millis(100), "p99 {p99:?}");
    sup.stop(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn failures_split_over_two_instances_open_one_shared_breaker() {
    let Some((url, _server)) = any_redis("failures_split_over_two_instances").await else { return };
    let sup = Supervisor::new(CancellationToken::new());
    let prefix = unique_prefix("breaker");
    let a = connected(&url, &prefix, &sup).await;
    let b = connected(&url, &prefix, &sup).await;
    let mut heard_by_a = a.subscribe();
    let key = "p/flaky";
    let now = now_ms();
    let mut trips = 0;
    // A, B, A, B, A: five failures in a row over both instances.
    for i in 0..5u64 {
        let store = if i % 2 == 0 { &a } else { &b };
        if store.record_outcome(key, true, now + i, rules(5)).await.unwrap().is_some() {
            trips += 1;
            assert_eq!(i, 4, "the fifth failure trips");
        }
    }
    assert_eq!(trips, 1);
    // A hears the trip B made.
    let change = tokio::time::timeout(Duration::from_millis(100), heard_by_a.recv()).await.unwrap().unwrap();
    assert!(matches!(change, StateChange::BreakerOpen { ref key, .. } if key == "p/flaky"), "{change:?}");
    assert!(a.snapshot(now + 10).await.unwrap().open.contains_key(key));
    // Concurrent failures from both: still exactly one trip.
    let key2 = "p/racy";
    let (ra, rb) = tokio::join!(
        futures_util::future::join_all((0..20).map(|i| a.record_outcome(key2, true, now + i, rules(5)))),
        futures_util::future::join_all((0..20).map(|i| b.record_outcome(key2, true, now + i, rules(5)))),
    );
    let trips = ra.into_iter().chain(rb).filter(|r| matches!(r, Ok(Some(_)))).count();
    assert_eq!(trips, 1);
    sup.stop(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn every_key_is_under_the_prefix_and_expires() {
    let Some((url, _server)) = any_redis("every_key_is_under_the_prefix_and_expires").await else { return };
    let sup = Supervisor::new(CancellationToken::new());
    let prefix = unique_prefix("hygiene");
    let store = connected(&url, &prefix, &sup).await;
    let now = now_ms();
    store.mark_dead("p/a", StoredMark { until_ms: now + 5_000, reason: "empty".into() }, now).await.unwrap();
    store.record_outcome("p/b", false, now, rules(5)).await.unwrap();
    for i in 0..5 {
        store.record_outcome("p/c", true, now + i, rules(5)).await.unwrap();
    }
    store.record_ttft("p/a", 10.0).await.unwrap();
    store.incr("traffic:c:primary", 1, Duration::from_secs(60)).await.unwrap();
    store.cache_put("cascade:x", "[]".into(), Duration::from_secs(60)).await.unwrap();
    // Expired marks are pruned on the next write.
    store.mark_dead("p/d", StoredMark { until_ms: now + 10_000, reason: "empty".into() }, now + 6_000).await.unwrap();
    let snap = store.snapshot(now + 6_000).await.unwrap();
    assert!(!snap.dead.contains_key("p/a") && snap.dead.contains_key("p/d"));

    // On a cluster the keys carry the prefix in braces: one hash tag, one slot.
    let stored = store.key_prefix().to_string();
    assert_eq!(stored, stored_prefix(&url, &prefix));
    assert_eq!(stored.starts_with('{'), on_cluster(), "{stored}");
    let keys = keys(&url, &format!("{stored}*")).await;
    let mut conn = raw(&url).await;
    assert!(keys.len() >= 5, "{keys:?}");
    for key in &keys {
        let ttl: i64 = redis::cmd("PTTL").arg(key).query_async(&mut conn).await.unwrap();
        assert!(ttl > 0, "{key} has no TTL");
    }
    let dead_fields: Vec<String> =
        redis::cmd("HKEYS").arg(format!("{stored}dead")).query_async(&mut conn).await.unwrap();
    assert_eq!(dead_fields, vec!["p/d".to_string()]);
    sup.stop(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn an_outage_fails_fast_and_the_store_reconnects_by_itself() {
    let Some(mut server) = own_redis("an_outage_fails_fast_and_the_store_reconnects").await else { return };
    let sup = Supervisor::new(CancellationToken::new());
    let prefix = unique_prefix("outage");
    let store = connected(&server.url(), &prefix, &sup).await;
    let mut link = store.link().unwrap();
    server.stop();
    tokio::time::timeout(Duration::from_secs(3), link.wait_for(|s| matches!(s, LinkState::Down(_))))
        .await
        .expect("the link notices the outage")
        .unwrap();
    let started = tokio::time::Instant::now();
    let now = now_ms();
    let r = store.mark_dead("p/x", StoredMark { until_ms: now + 1_000, reason: "empty".into() }, now).await;
    assert!(r.is_err());
    assert!(started.elapsed() < Duration::from_millis(50), "fails fast, took {:?}", started.elapsed());
    assert!(server.restart().await);
    tokio::time::timeout(Duration::from_secs(5), link.wait_for(|s| *s == LinkState::Up))
        .await
        .expect("the link reconnects")
        .unwrap();
    let mut heard = store.subscribe();
    store.mark_dead("p/x", StoredMark { until_ms: now + 60_000, reason: "empty".into() }, now).await.unwrap();
    let change = tokio::time::timeout(Duration::from_millis(500), heard.recv()).await.unwrap().unwrap();
    assert!(matches!(change, StateChange::Dead { .. }), "the subscription is back");
    sup.stop(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn an_unreachable_redis_at_start_is_a_degraded_store_not_an_error() {
    let port = free_port();
    let sup = Supervisor::new(CancellationToken::new());
    let (store, link) = RedisStore::new(&format!("redis://user:pw@127.0.0.1:{port}/0"), "x:").unwrap();
    sup.spawn(link);
    let mut state = store.link().unwrap();
    tokio::time::timeout(Duration::from_secs(3), state.wait_for(|s| matches!(s, LinkState::Down(_))))
        .await
        .unwrap()
        .unwrap();
    let LinkState::Down(detail) = state.borrow().clone() else { unreachable!() };
    assert!(!detail.contains("pw"), "{detail}");
    assert!(store.counter("c").await.is_err());
    sup.stop(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn batched_answers_and_ttft_samples_count_like_single_ones() {
    let Some((url, _server)) = any_redis("batched_answers_and_ttft_samples").await else { return };
    let sup = Supervisor::new(CancellationToken::new());
    let prefix = unique_prefix("batched");
    let store = connected(&url, &prefix, &sup).await;
    let memory = spillway::state::memory::MemoryStore::new();
    let rate = BreakerRules { failure_rate: 0.5, min_requests: 4, ..rules(10) };
    let now = now_ms();
    for s in [store.as_ref() as &dyn StateStore, &memory] {
        s.record_answers("p/m", 2, now, rate).await.unwrap();
        assert_eq!(s.record_outcome("p/m", true, now + 1, rate).await.unwrap(), None);
        let trip = s.record_outcome("p/m", true, now + 2, rate).await.unwrap();
        assert_eq!(trip, Some(spillway::state::SharedTrip::Rate { failures: 2, requests: 4 }), "{}", s.backend());
        s.record_ttfts("p/t", &[100.0, 200.0, 300.0]).await.unwrap();
    }
    let (r, m) = (store.ttft_all().await.unwrap()["p/t"], memory.ttft_all().await.unwrap()["p/t"]);
    // The median of 100, 200, 300 on both.
    assert!((r - m).abs() < 1e-9 && (r - 200.0).abs() < 1e-9, "{r} {m}");
    sup.stop(Duration::from_secs(2)).await;
}

/// The test servers' start: a port taken between `free_port` and the bind
/// (by another server, or by any outgoing connection) is told apart from a
/// started server, so `spawn_fresh` tries fresh ports instead of failing
/// the test ten seconds later, or talking to someone else's server.
#[tokio::test]
async fn a_test_server_whose_port_is_taken_is_seen_to_fail_at_once() {
    let Some(held) = Single::start().await else {
        unavailable("a_test_server_whose_port_is_taken_is_seen_to_fail_at_once");
        return;
    };
    let started = std::time::Instant::now();
    let spawned = try_spawn("redis-server", &single_args(held.port), held.port).await;
    assert!(matches!(spawned, Spawned::Exited), "a server that cannot bind is not another's answer");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let (child, ports) = spawn_fresh("redis-server", 1, |p| single_args(p[0])).await.unwrap();
    kill(&mut Some(child));
    assert_ne!(ports[0], held.port);
}
