//! `/admin/keys`: keys made, read, changed and revoked at run time; kept
//! hashed in the state store, surviving a restart; revoked on every
//! instance within a second.

use super::*;
use redis_support::{any_redis, unique_prefix};
use std::time::Duration;

const ADMIN: &str = "admin-token-1";

pub async fn admin(gw: &TestGateway, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut r = client().request(method, format!("{}{path}", gw.url)).bearer_auth(ADMIN);
    if let Some(b) = body {
        r = r.json(&b);
    }
    let resp = r.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn config(paid: &FakeUpstream, state: &str) -> String {
    yaml(paid, "  - { id: cfg, key: sk-config-key-1 }\n", state).replace(
        "server:\n  api_keys: [plain-key-1]\n",
        &format!("server:\n  api_keys: [plain-key-1]\n  admin_token: {ADMIN}\n"),
    )
}

#[tokio::test]
async fn keys_made_at_run_time_work_are_listed_and_survive_a_restart() {
    let paid = FakeUpstream::start().await;
    let dir = std::env::temp_dir().join(format!("spillway-keys-admin-{}", fastrand::u64(..)));
    let state = format!("state: {{ data_dir: '{}' }}\n", dir.display());
    let gw = start(&config(&paid, &state)).await;
    let (status, made) = admin(
        &gw,
        reqwest::Method::POST,
        "/admin/keys",
        Some(json!({"name": "mobile app", "cascades": ["chat"], "rpm": 2, "budget": {"usd": 5.0, "per": "day"},
                    "metadata": {"team": "mobile"}})),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let secret = made["key"].as_str().unwrap().to_string();
    let id = made["id"].as_str().unwrap().to_string();
    assert!(secret.starts_with("sk-spw-"), "{secret}");
    assert_eq!(ask(&gw, &secret, "chat", false).await.status(), 200);
    assert_eq!(ask(&gw, &secret, "paid", false).await.status(), 403);
    let (_, list) = admin(&gw, reqwest::Method::GET, "/admin/keys", None).await;
    let text = list.to_string();
    assert!(!text.contains(&secret) && !text.contains(&secret[7..]), "no secret in the list: {text}");
    let ids: Vec<&str> = list["keys"].as_array().unwrap().iter().map(|k| k["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["cfg", id.as_str()]);
    let (status, shown) = admin(&gw, reqwest::Method::GET, &format!("/admin/keys/{id}"), None).await;
    assert_eq!(status, 200);
    assert_eq!(shown["usage"]["requests"], 1, "{shown}");
    assert_eq!(shown["usage"]["input_tokens"].as_u64().map(|n| n > 0), Some(true), "{shown}");
    assert!(shown["usage"]["period_start"].as_str().unwrap().len() == 10);
    // PATCH: new limits at once.
    let (status, changed) =
        admin(&gw, reqwest::Method::PATCH, &format!("/admin/keys/{id}"), Some(json!({"rpm": 100, "cascades": null})))
            .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(ask(&gw, &secret, "paid", false).await.status(), 200, "every cascade now");
    assert_eq!(
        admin(&gw, reqwest::Method::DELETE, "/admin/keys/cfg", None).await.0,
        409,
        "config keys live in the config"
    );
    drop(gw);
    tokio::time::sleep(Duration::from_millis(100)).await;

    // A new process on the same data_dir knows the key.
    let gw = start(&config(&paid, &state)).await;
    let mut known = false;
    for _ in 0..100 {
        if ask(&gw, &secret, "chat", false).await.status() == 200 {
            known = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(known, "the key did not survive the restart");
    let (status, _) = admin(&gw, reqwest::Method::DELETE, &format!("/admin/keys/{id}"), None).await;
    assert_eq!(status, 200);
    assert_eq!(ask(&gw, &secret, "chat", false).await.status(), 401, "revoked at once");
    assert_eq!(admin(&gw, reqwest::Method::GET, &format!("/admin/keys/{id}"), None).await.0, 404);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_revoked_on_one_instance_is_refused_by_every_instance_within_a_second() {
    let Some((url, _server)) = any_redis("revoked_on_every_instance").await else { return };
    let paid = FakeUpstream::start().await;
    let prefix = unique_prefix("keys-revoke");
    let state = format!("state:\n  backend: redis\n  redis_url: {url}\n  key_prefix: \"{prefix}\"\n");
    let (a, b, c) =
        (start(&config(&paid, &state)).await, start(&config(&paid, &state)).await, start(&config(&paid, &state)).await);
    let (status, made) = admin(&a, reqwest::Method::POST, "/admin/keys", Some(json!({"name": "x"}))).await;
    assert_eq!(status, 201);
    let secret = made["key"].as_str().unwrap().to_string();
    let id = made["id"].as_str().unwrap().to_string();
    // Made on a: known to b and c within a second.
    let t0 = tokio::time::Instant::now();
    for gw in [&b, &c] {
        while ask(gw, &secret, "chat", false).await.status() != 200 {
            assert!(t0.elapsed() < Duration::from_secs(1), "a new key took over a second to reach every instance");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    eprintln!("a key made on one instance answered on all three after {:?}", t0.elapsed());
    assert_eq!(admin(&a, reqwest::Method::DELETE, &format!("/admin/keys/{id}"), None).await.0, 200);
    let t1 = tokio::time::Instant::now();
    for gw in [&a, &b, &c] {
        while ask(gw, &secret, "chat", false).await.status() != 401 {
            assert!(t1.elapsed() < Duration::from_secs(1), "a revoked key still answered after a second");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    eprintln!("a key revoked on one instance was refused by all three after {:?}", t1.elapsed());
}
