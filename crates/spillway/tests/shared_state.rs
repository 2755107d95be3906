//! Two `spillway serve` processes sharing state through one Redis: a dead
//! mark made by one is honoured by the other, failures split over both
//! open one breaker, and a Redis outage degrades without failing requests
//! and heals without a restart.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod redis_support;

use redis_support::instance::*;
use redis_support::*;
use std::time::Duration;
use test_upstreams::{FakeUpstream, Reply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_seen_by_a_keeps_b_away_from_that_model() {
    let Some((url, _server)) = any_redis("a_429_seen_by_a_keeps_b_away_from_that_model").await else { return };
    let (up0, up1, hook) =
        (FakeUpstream::start().await, FakeUpstream::start().await, FakeUpstream::start_at("/hook").await);
    let prefix = unique_prefix("shared-429");
    let hook_url = format!("{}/hook", hook.origin());
    let a = start("a", &url, &prefix, &[&up0, &up1], &hook_url).await;
    let b = start("b", &url, &prefix, &[&up0, &up1], &hook_url).await;

    assert_eq!(b.model_state("up0/m").await["alive"], true);
    up0.push(Reply::error(429, "rate_limit_exceeded", "slow down").header("retry-after", "600"));
    assert_eq!(a.chat().await, (200, "up1/m".to_string()));
    assert_eq!(up0.calls(), 1);
    let started = tokio::time::Instant::now();
    let seen = poll(Duration::from_millis(100), || async {
        let m = b.model_state("up0/m").await;
        (m["dead"]["reason"] == "rate_limited").then_some(())
    })
    .await;
    assert!(seen.is_some(), "B did not hear of A's 429 within 100 ms:\n{}", b.log());
    eprintln!("A's 429 reached B's /admin/state after {:?}", started.elapsed());
    for _ in 0..3 {
        assert_eq!(b.chat().await, (200, "up1/m".to_string()));
    }
    assert_eq!(up0.calls(), 1, "B never called the rate-limited model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_split_over_a_and_b_open_one_shared_breaker() {
    let Some((url, _server)) = any_redis("failures_split_over_a_and_b_open_one_shared_breaker").await else { return };
    let (up0, up1, hook) =
        (FakeUpstream::start().await, FakeUpstream::start().await, FakeUpstream::start_at("/hook").await);
    up0.set_default(Reply::error(500, "server_error", "boom"));
    let prefix = unique_prefix("shared-breaker");
    let hook_url = format!("{}/hook", hook.origin());
    let a = start("a", &url, &prefix, &[&up0, &up1], &hook_url).await;
    let b = start("b", &url, &prefix, &[&up0, &up1], &hook_url).await;

    // 3 failures on A and 2 on B: neither local breaker (5 in a row) trips.
    for i in 0..5 {
        let inst = if i % 2 == 0 { &a } else { &b };
        assert_eq!(inst.chat().await, (200, "up1/m".to_string()));
    }
    assert_eq!(up0.calls(), 5);
    for inst in [&a, &b] {
        let open = poll(Duration::from_secs(2), || async {
            let m = inst.model_state("up0/m").await;
            (m["breaker"]["state"] == "open").then_some(())
        })
        .await;
        assert!(open.is_some(), "the shared breaker is open on every instance:\n{}", inst.log());
    }
    for inst in [&a, &b, &a, &b] {
        assert_eq!(inst.chat().await, (200, "up1/m".to_string()));
    }
    assert_eq!(up0.calls(), 5, "no instance calls a model behind an open shared breaker");
}

/// The streamed twin: a streamed answer on B is an outcome the shared
/// breaker hears of, so failures on either side of it are not "in a row".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_on_b_resets_the_shared_failure_count() {
    let Some((url, _server)) = any_redis("a_streamed_answer_on_b_resets_the_shared_failure_count").await else {
        return;
    };
    let (up0, up1, hook) =
        (FakeUpstream::start().await, FakeUpstream::start().await, FakeUpstream::start_at("/hook").await);
    up1.set_default(Reply::stream(&["from ", "up1"]));
    let prefix = unique_prefix("shared-stream-reset");
    let hook_url = format!("{}/hook", hook.origin());
    let a = start("a", &url, &prefix, &[&up0, &up1], &hook_url).await;
    let b = start("b", &url, &prefix, &[&up0, &up1], &hook_url).await;
    let fail = || Reply::error(500, "server_error", "boom");
    // 4 failures split over A and B (5 in a row open the shared breaker)...
    for inst in [&a, &b, &a, &b] {
        up0.push(fail());
        assert_eq!(inst.chat_stream().await.1, "up1/m");
    }
    // ...then a streamed answer from up0 on B...
    up0.push(Reply::stream(&["up0 ", "is fine"]));
    let (status, model, last) = b.chat_stream().await;
    assert_eq!((status, model.as_str(), last.as_str()), (200, "up0/m", "[DONE]"));
    // (Answers are batched for 50 ms before they go to the store; failures
    // go at once. These are separate processes on real time.)
    tokio::time::sleep(Duration::from_millis(150)).await;
    // ...so 4 more failures are 4 in a row, not 8: the breaker stays closed.
    for inst in [&a, &b, &a, &b] {
        up0.push(fail());
        assert_eq!(inst.chat_stream().await.1, "up1/m");
    }
    // Shared changes travel through Redis: give a trip time to arrive.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for inst in [&a, &b] {
        assert_eq!(inst.model_state("up0/m").await["breaker"]["state"], "closed", "{}", inst.log());
    }
    up0.push(Reply::stream(&["still ", "called"]));
    assert_eq!(a.chat_stream().await.1, "up0/m");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_outage_degrades_without_failing_requests_and_sharing_resumes() {
    let Some(mut server) = own_redis("a_redis_outage_degrades_without_failing_requests").await else { return };
    let (up0, up1, hook) =
        (FakeUpstream::start().await, FakeUpstream::start().await, FakeUpstream::start_at("/hook").await);
    let prefix = unique_prefix("shared-outage");
    let hook_url = format!("{}/hook", hook.origin());
    let a = start("a", &server.url(), &prefix, &[&up0, &up1], &hook_url).await;
    let b = start("b", &server.url(), &prefix, &[&up0, &up1], &hook_url).await;

    server.stop();
    for inst in [&a, &b] {
        let degraded = poll(Duration::from_secs(3), || async {
            let (status, v) = inst.readyz().await;
            assert_eq!(status, 200, "/readyz stays 200 when degraded");
            (v["state"]["degraded"] == true && v["state"]["backend"] == "redis").then_some(())
        })
        .await;
        assert!(degraded.is_some(), "/readyz says degraded:\n{}", inst.log());
    }
    // Requests keep succeeding, from local state.
    for _ in 0..5 {
        assert_eq!(a.chat().await, (200, "up0/m".to_string()));
        assert_eq!(b.chat().await, (200, "up0/m".to_string()));
    }
    assert!(a.log().contains("Redis is unreachable"), "a log line says so:\n{}", a.log());
    let alerted = hook
        .wait_for(Duration::from_secs(5), |h| h.requests().iter().any(|r| r.to_string().contains("redis_degraded")))
        .await;
    assert!(alerted, "an alert event goes out: {:?}", hook.requests());
    // A dead mark made during the outage stays local to A ...
    up0.push(Reply::error(429, "rate_limit_exceeded", "slow down").header("retry-after", "600"));
    assert_eq!(a.chat().await, (200, "up1/m".to_string()));

    assert!(server.restart().await);
    for inst in [&a, &b] {
        let healed = poll(Duration::from_secs(5), || async {
            let (_, v) = inst.readyz().await;
            (v["state"]["degraded"] == false).then_some(())
        })
        .await;
        assert!(healed.is_some(), "reconnects without a restart:\n{}", inst.log());
    }
    // The return is logged and alerted too (a resolved message).
    let restored = hook
        .wait_for(Duration::from_secs(5), |h| h.requests().iter().any(|r| r.to_string().contains("redis_restored")))
        .await;
    assert!(restored, "a restored alert goes out: {:?}", hook.requests());
    assert!(a.log().contains("Redis is reachable again"), "a log line says so:\n{}", a.log());
    // ... and is shared once Redis is back; new marks are shared at once.
    let shared = poll(Duration::from_secs(2), || async {
        (b.model_state("up0/m").await["dead"]["reason"] == "rate_limited").then_some(())
    })
    .await;
    assert!(shared.is_some(), "the mark made during the outage reaches B after reconnecting:\n{}", b.log());
    up1.push(Reply::error(429, "rate_limit_exceeded", "slow down").header("retry-after", "600"));
    let calls = up1.calls();
    let _ = b.chat().await;
    assert_eq!(up1.calls(), calls + 1);
    let seen = poll(Duration::from_millis(100), || async {
        (a.model_state("up1/m").await["dead"]["reason"] == "rate_limited").then_some(())
    })
    .await;
    assert!(seen.is_some(), "sharing resumed: B's mark reaches A within 100 ms");
}
