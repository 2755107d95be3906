//! The rules every [`StateStore`] must follow, as one runnable check.
//!
//! `run(store, prefix)` exercises a store through its trait and returns the
//! first broken rule. The memory store runs it in unit tests; the Redis
//! store runs it against a real Redis server. Keys are built from `prefix`
//! so runs on a shared server do not collide.

use super::*;

fn check(cond: bool, what: &str) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(format!("state store rule broken: {what}"))
    }
}

fn rules() -> BreakerRules {
    BreakerRules {
        consecutive_failures: 3,
        failure_rate: 0.5,
        min_requests: 4,
        window: Duration::from_secs(60),
        open_for: Duration::from_secs(30),
    }
}

/// Runs every rule; `Err` names the first one broken.
pub async fn run(store: &dyn StateStore, prefix: &str) -> Result<(), String> {
    let e = |e: StateError| e.to_string();
    let now = crate::health::clock::now_ms();
    let key = format!("{prefix}p/model");
    let mut changes = store.subscribe();

    // Dead marks extend, never shorten, and are published.
    let m1 =
        store.mark_dead(&key, StoredMark { until_ms: now + 10_000, reason: "empty".into() }, now).await.map_err(e)?;
    check(m1.until_ms == now + 10_000, "a first mark is kept as given")?;
    let m2 = store
        .mark_dead(&key, StoredMark { until_ms: now + 5_000, reason: "not_found".into() }, now)
        .await
        .map_err(e)?;
    check(m2.until_ms == now + 10_000 && m2.reason == "empty", "a shorter mark never shortens a longer one")?;
    let m3 = store
        .mark_dead(&key, StoredMark { until_ms: now + 20_000, reason: "rate_limited".into() }, now)
        .await
        .map_err(e)?;
    check(m3.until_ms == now + 20_000 && m3.reason == "rate_limited", "a longer mark extends")?;
    let first = changes.recv().await.map_err(|e| e.to_string())?;
    check(matches!(first, StateChange::Dead { ref key, .. } if key.ends_with("p/model")), "a mark is published")?;
    let snap = store.snapshot(now).await.map_err(e)?;
    check(snap.dead.get(&key).map(|m| m.until_ms) == Some(now + 20_000), "the snapshot holds live marks")?;
    let later = store.snapshot(now + 20_001).await.map_err(e)?;
    check(!later.dead.contains_key(&key), "expired marks are not in the snapshot")?;

    // Shared breaker: failures from anyone count; one trip, seen once.
    let bkey = format!("{prefix}p/breaker");
    for i in 0..2 {
        let t = store.record_outcome(&bkey, true, now + i, rules()).await.map_err(e)?;
        check(t.is_none(), "no trip before the consecutive threshold")?;
    }
    let t = store.record_outcome(&bkey, true, now + 2, rules()).await.map_err(e)?;
    check(t == Some(SharedTrip::Consecutive(3)), "the third failure in a row trips")?;
    let again = store.record_outcome(&bkey, true, now + 3, rules()).await.map_err(e)?;
    check(again.is_none(), "an open breaker does not trip again")?;
    let snap = store.snapshot(now + 4).await.map_err(e)?;
    check(
        snap.open.get(&bkey).map(|(u, _)| *u) == Some(now + 2 + 30_000),
        "the trip opens the shared breaker for open_for",
    )?;
    store.close_breaker(&bkey).await.map_err(e)?;
    check(!store.snapshot(now + 5).await.map_err(e)?.open.contains_key(&bkey), "closing removes the open breaker")?;

    // The rate rule over the window, with successes between failures.
    let rkey = format!("{prefix}p/rate");
    let seq = [false, true, false, true];
    let mut last = None;
    for (i, failed) in seq.iter().enumerate() {
        last = store.record_outcome(&rkey, *failed, now + i as u64, rules()).await.map_err(e)?;
    }
    check(
        last == Some(SharedTrip::Rate { failures: 2, requests: 4 }),
        "2 failures of 4 requests trips the 0.5 rate rule",
    )?;

    // Revive clears everything about a key.
    store.revive(&key).await.map_err(e)?;
    check(!store.snapshot(now).await.map_err(e)?.dead.contains_key(&key), "revive clears the mark")?;

    // TTFT is the median of the recent samples, shared.
    let tkey = format!("{prefix}p/ttft");
    store.record_ttft(&tkey, 100.0).await.map_err(e)?;
    store.record_ttft(&tkey, 200.0).await.map_err(e)?;
    let t = store.ttft_all().await.map_err(e)?.get(&tkey).copied();
    check(t == Some(150.0), "TTFT is the median of the samples")?;
    store.record_ttfts(&tkey, &[5000.0]).await.map_err(e)?;
    let t = store.ttft_all().await.map_err(e)?.get(&tkey).copied();
    check(t == Some(200.0), "one slow sample does not move the median")?;
    store.record_ttfts(&tkey, &[40.0; super::TTFT_WINDOW]).await.map_err(e)?;
    let t = store.ttft_all().await.map_err(e)?.get(&tkey).copied();
    check(t == Some(40.0), "only the last TTFT_WINDOW samples count")?;

    // Counters add up; cache round-trips.
    let ckey = format!("{prefix}counter");
    check(store.incr(&ckey, 2, Duration::from_secs(60)).await.map_err(e)? == 2, "incr returns the new value")?;
    check(store.incr(&ckey, 3, Duration::from_secs(60)).await.map_err(e)? == 5, "incr adds")?;
    check(store.counter(&ckey).await.map_err(e)? == 5, "counter reads")?;
    check(store.counter(&format!("{prefix}absent")).await.map_err(e)? == 0, "an absent counter is 0")?;
    let cache = format!("{prefix}cache");
    store.cache_put(&cache, "{\"a\":1}".into(), Duration::from_secs(60)).await.map_err(e)?;
    check(store.cache_get(&cache).await.map_err(e)?.as_deref() == Some("{\"a\":1}"), "the cache round-trips")?;
    check(store.cache_get(&format!("{prefix}nope")).await.map_err(e)?.is_none(), "a missing cache entry is None")?;
    Ok(())
}
