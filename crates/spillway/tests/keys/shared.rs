//! The Redis backend: every instance counts in the same place, so limits
//! are exact over any number of instances; what a key does while Redis is
//! down is its `on_store_down`.

use super::*;
use redis_support::{any_redis, free_port, own_redis, unique_prefix};

fn redis_state(url: &str, prefix: &str) -> String {
    format!("state:\n  backend: redis\n  redis_url: {url}\n  key_prefix: \"{prefix}\"\n")
}

/// Sends `n` concurrent chat requests with `key`, spread round-robin over
/// `gateways`; the count of each status.
async fn hammer(gateways: &[TestGateway], key: &str, n: usize, user: Option<&str>) -> (usize, usize, usize) {
    let mut tasks = Vec::new();
    for i in 0..n {
        let url = format!("{}/v1/chat/completions", gateways[i % gateways.len()].url);
        let (key, user) = (key.to_string(), user.map(str::to_string));
        tasks.push(tokio::spawn(async move {
            let mut r = client().post(url).bearer_auth(key).json(&chat("chat", i % 2 == 0));
            if let Some(u) = user {
                r = r.header("x-spillway-user", u);
            }
            let resp = r.send().await.unwrap();
            let status = resp.status().as_u16();
            let _ = resp.bytes().await;
            status
        }));
    }
    let (mut ok, mut limited, mut other) = (0, 0, 0);
    for t in tasks {
        match t.await.unwrap() {
            200 => ok += 1,
            429 => limited += 1,
            _ => other += 1,
        }
    }
    (ok, limited, other)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_instances_admit_exactly_rpm_in_a_minute() {
    let Some((url, _server)) = any_redis("three_instances_admit_exactly_rpm_in_a_minute").await else { return };
    let paid = FakeUpstream::start().await;
    let prefix = unique_prefix("keys-exact");
    let keys = "  - { id: team, key: sk-team-secret-1, rpm: 30 }\n  - { id: users, key: sk-users-secret-1, per_user: { rpm: 5 } }\n";
    let config = yaml(&paid, keys, &redis_state(&url, &prefix));
    let gateways = vec![start(&config).await, start(&config).await, start(&config).await];
    let started = tokio::time::Instant::now();
    let (ok, limited, other) = hammer(&gateways, "sk-team-secret-1", 120, None).await;
    let took = started.elapsed();
    eprintln!(
        "three instances, rpm 30, 120 concurrent requests: {ok} admitted, {limited} refused, {other} other in {took:?}"
    );
    assert!(took < std::time::Duration::from_secs(50), "the test must stay inside one window");
    assert_eq!((ok, limited, other), (30, 90, 0));
    let (ok, limited, _) = hammer(&gateways, "sk-users-secret-1", 30, Some("ann")).await;
    assert_eq!((ok, limited), (5, 25), "per_user over three instances");
    let (ok, _, _) = hammer(&gateways, "sk-users-secret-1", 6, Some("bob")).await;
    assert_eq!(ok, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_is_spent_over_every_instance() {
    let Some((url, _server)) = any_redis("a_budget_is_spent_over_every_instance").await else { return };
    let paid = FakeUpstream::start().await;
    let prefix = unique_prefix("keys-budget");
    let config = yaml(
        &paid,
        "  - { id: a, key: sk-a-secret-1, budget: { usd: 1.0, per: month } }\n",
        &redis_state(&url, &prefix),
    );
    let (a, b) = (start(&config).await, start(&config).await);
    assert_eq!(ask(&a, "sk-a-secret-1", "paid", false).await.status(), 200);
    assert_eq!(ask(&b, "sk-a-secret-1", "paid", false).await.status(), 200);
    let mut refused = false;
    for _ in 0..50 {
        if ask(&a, "sk-a-secret-1", "paid", false).await.status() == 429 {
            refused = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(refused);
    assert_eq!(paid.calls(), 2, "$1.40 spent over two instances stops the third");
}

#[tokio::test]
async fn with_redis_down_a_key_follows_its_on_store_down() {
    let paid = FakeUpstream::start().await;
    let url = format!("redis://127.0.0.1:{}/0", free_port());
    let keys = "  - { id: lenient, key: sk-lenient-1, rpm: 2 }\n  - { id: strict, key: sk-strict-1, rpm: 2, on_store_down: deny }\n";
    let gw = start(&yaml(&paid, keys, &redis_state(&url, "down:"))).await;
    let resp = ask(&gw, "sk-strict-1", "chat", false).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "limits_unavailable");
    assert_eq!(ask(&gw, "sk-lenient-1", "chat", false).await.status(), 200);
    assert_eq!(ask(&gw, "sk-lenient-1", "chat", false).await.status(), 200);
    assert_eq!(ask(&gw, "sk-lenient-1", "chat", false).await.status(), 429, "the limit applies on this instance");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_mid_load_falls_back_then_counts_in_redis_again() {
    let Some(mut server) = own_redis("a_redis_restart_mid_load").await else { return };
    let paid = FakeUpstream::start().await;
    let keys = "  - { id: lenient, key: sk-lenient-1, rpm: 4 }\n  - { id: strict, key: sk-strict-1, rpm: 100, on_store_down: deny }\n";
    let config = yaml(&paid, keys, &redis_state(&server.url(), &unique_prefix("keys-restart")));
    let (a, b) = (start(&config).await, start(&config).await);
    // Shared: 2 on a and 2 on b use the key's 4.
    for gw in [&a, &b, &a, &b] {
        assert_eq!(ask(gw, "sk-lenient-1", "chat", false).await.status(), 200);
    }
    assert_eq!(ask(&a, "sk-lenient-1", "chat", false).await.status(), 429);
    assert_eq!(ask(&b, "sk-strict-1", "chat", false).await.status(), 200);
    server.stop();
    // Redis gone: `deny` refuses, `allow` counts on each instance alone.
    assert_eq!(ask(&b, "sk-strict-1", "chat", false).await.status(), 503);
    assert_eq!(ask(&a, "sk-lenient-1", "chat", false).await.status(), 200);
    assert!(server.restart().await);
    // Back: the counts are Redis's again (a fresh server: nothing counted yet).
    let mut back = false;
    for _ in 0..100 {
        if ask(&b, "sk-strict-1", "chat", false).await.status() == 200 {
            back = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(back, "admissions never returned to Redis");
    let (ok, limited, _) = hammer(&[a, b], "sk-lenient-1", 10, None).await;
    assert_eq!((ok, limited), (4, 6), "exact again once Redis is back");
}
