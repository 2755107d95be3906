//! The cost of one admission (`cargo test -p spillway --test keys --release
//! -- --ignored --nocapture admission_cost`): the counting alone, in memory
//! and in Redis (one Lua script, one round trip), beside no keys at all.

use super::*;
use redis_support::{any_redis, unique_prefix};
use spillway::config::{KeyBudget, KeySpec, Limits, StateBackend, StateConfig, StoreDown};
use spillway::tenancy::tally::Ask;
use spillway::tenancy::Tenancy;
use std::sync::Arc;

fn key() -> Arc<KeySpec> {
    let limits = Limits {
        rpm: Some(u64::MAX / 4),
        tpm: Some(u64::MAX / 4),
        max_parallel: None,
        budget: Some(KeyBudget { usd: 1e9, per: spillway::config::BudgetPeriod::Month }),
    };
    Arc::new(KeySpec {
        id: "bench".into(),
        name: "bench".into(),
        secret_sha256: String::new(),
        cascades: None,
        limits,
        per_user: Limits::default(),
        expires_at_ms: None,
        metadata: Default::default(),
        on_store_down: StoreDown::Allow,
    })
}

async fn per_admission(state: &StateConfig, n: u32) -> std::time::Duration {
    let t = Arc::new(Tenancy::default());
    let alerts = Arc::new(spillway::alerts::AlertBus::default());
    let key = key();
    let ask = |now_ms| Ask { now_ms, tokens: 500, usd_micro: 10, lease_ms: 180_000 };
    // Warm the connection and the script cache.
    drop(t.admit(state, &alerts, &key, None, ask(spillway::health::clock::now_ms())).await.unwrap());
    let start = std::time::Instant::now();
    for _ in 0..n {
        let (tab, _) = t.admit(state, &alerts, &key, None, ask(spillway::health::clock::now_ms())).await.unwrap();
        tab.add(100, 50, 0.0001);
        drop(tab);
    }
    start.elapsed() / n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check"]
async fn admission_cost() {
    let memory = StateConfig {
        backend: StateBackend::Memory,
        redis_url: None,
        key_prefix: "bench:".into(),
        data_dir: std::env::temp_dir(),
    };
    let sha = std::time::Instant::now();
    for i in 0..10_000 {
        std::hint::black_box(spillway::secret::sha256_hex(&format!("sk-spw-{i:040}")));
    }
    eprintln!("identify (SHA-256 of the key): {:?} per request", sha.elapsed() / 10_000);
    eprintln!("admit + settle, memory: {:?} per request", per_admission(&memory, 10_000).await);
    let Some((url, _server)) = any_redis("admission_cost").await else { return };
    let redis = StateConfig {
        backend: StateBackend::Redis,
        redis_url: Some(spillway::config::Secret::new(url.clone())),
        key_prefix: unique_prefix("bench"),
        data_dir: std::env::temp_dir(),
    };
    let mut conn = redis_support::raw(&url).await;
    let ping = std::time::Instant::now();
    for _ in 0..2_000 {
        let _: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
    }
    eprintln!("a PING round trip to the same Redis, for scale: {:?}", ping.elapsed() / 2_000);
    eprintln!("admit (one script, one round trip), Redis: {:?} per request", per_admission(&redis, 2_000).await);
}
