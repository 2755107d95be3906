//! The Redis-backed handoff queue (`state.backend: redis`): an item queued
//! on one instance is listed and answered on another, and read back on the
//! first. Talks to the Redis at `SPILLWAY_TEST_REDIS_URL` or one it starts
//! (a cluster with `SPILLWAY_TEST_REDIS=cluster`); skips when there is
//! none, except under `CI=true`, where that fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;

use common::*;
use serde_json::{json, Value};

#[tokio::test]
async fn two_instances_share_the_queue() {
    let Some((url, _server)) = redis_support::any_redis("two_instances_share_the_queue").await else { return };
    let prefix = redis_support::unique_prefix("handoff-share");
    let yaml = format!(
        "server:\n  api_keys: [key-a]\n  admin_token: adm\nstate:\n  backend: redis\n  redis_url: {url}\n  key_prefix: \"{prefix}\"\nproviders:\n  down:\n    kind: mock\n    models:\n      - {{ id: m, behavior: {{ error_rate: 1.0, error_status: 503 }} }}\n{FAST_HEALTH}cascades:\n  support:\n    models: [down/m]\n    handoff: true\n"
    );
    let one = start(&yaml).await;
    let two = start(&yaml).await;
    let resp = client()
        .post(format!("{}/v1/chat/completions", one.url))
        .bearer_auth("key-a")
        .json(&chat("support", false))
        .send()
        .await
        .unwrap();
    assert_eq!(header(&resp, "x-spillway-tier"), "handoff");
    let id = header(&resp, "x-spillway-handoff-id").to_string();

    let list = two.admin_get("/admin/handoff?status=open", "adm").await;
    assert_eq!(list["data"][0]["id"], id.as_str());
    let answered = client()
        .post(format!("{}/admin/handoff/{id}/answer", two.url))
        .bearer_auth("adm")
        .json(&json!({"text": "Answered from instance two."}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);

    let item: Value = client()
        .get(format!("{}/v1/handoff/{id}", one.url))
        .bearer_auth("key-a")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (item["status"].as_str(), item["answer"].as_str()),
        (Some("answered"), Some("Answered from instance two."))
    );
    // The owner's id is keyed by one key in Redis: instance two derives the
    // same id for `key-a`, so the client may ask either instance.
    let from_two = client().get(format!("{}/v1/handoff/{id}", two.url)).bearer_auth("key-a").send().await.unwrap();
    assert_eq!(from_two.status(), 200);

    // Clean up this test's keys.
    let keys = redis_support::keys(&url, &format!("{}*", redis_support::stored_prefix(&url, &prefix))).await;
    if !keys.is_empty() {
        let () = redis::cmd("DEL").arg(keys).query_async(&mut redis_support::raw(&url).await).await.unwrap();
    }
}

/// Every operation of the queue on this run's Redis (on a cluster: the
/// MULTI, the MGET, the answer script and the purge stay on one slot).
#[tokio::test]
async fn the_queue_works_on_any_topology() {
    use spillway::handoff::{Answered, Queue, Status};
    let Some((url, _server)) = redis_support::any_redis("the_queue_works_on_any_topology").await else { return };
    let q = spillway::handoff::redis::RedisQueue::connect(&url, &redis_support::unique_prefix("handoff-ops"))
        .await
        .unwrap();
    // The shared key-id key is set once and read back (SET NX + GET in one MULTI).
    q.key_ids().await.unwrap();
    for (i, id) in ["ho_a", "ho_b"].into_iter().enumerate() {
        let item: spillway::handoff::Item = serde_json::from_value(json!({
            "id": id, "status": "open", "cascade": "support", "client_key_id": null, "messages": [],
            "attempts": [], "created_ms": 10 + i, "answer": null, "answered_ms": null
        }))
        .unwrap();
        q.push(item).await.unwrap();
    }
    assert_eq!(q.open_count().await.unwrap(), 2);
    assert!(matches!(q.answer("ho_a", "done", 20).await.unwrap(), Answered::Done(_)));
    assert!(matches!(q.answer("ho_a", "again", 21).await.unwrap(), Answered::AlreadyAnswered(_)));
    assert!(matches!(q.answer("ho_x", "none", 22).await.unwrap(), Answered::Missing));
    let listed: Vec<String> = q.list(None).await.unwrap().into_iter().map(|i| i.id).collect();
    assert_eq!(listed, ["ho_a", "ho_b"]);
    assert_eq!(q.list(Some(Status::Answered)).await.unwrap()[0].answer.as_deref(), Some("done"));
    assert_eq!(q.purge(u64::MAX).await.unwrap(), 2);
    assert_eq!(q.open_count().await.unwrap(), 0);
}

mod redis_support;

/// With Redis down, a handoff answers within its deadlines (the item goes to
/// the spool in `data_dir`, nothing the client was told is lost), the admin
/// API answers fast, and the item reaches Redis once Redis is back.
#[tokio::test]
async fn a_handoff_while_redis_is_down_is_spooled_and_drained() {
    let Some(mut server) = redis_support::own_redis("a_handoff_while_redis_is_down_is_spooled").await else { return };
    let prefix = redis_support::unique_prefix("handoff-spool");
    let dir = std::env::temp_dir().join(format!("spillway-spool-{}-{}", std::process::id(), fastrand::u64(..)));
    let yaml = format!(
        "server:\n  admin_token: adm\nstate:\n  backend: redis\n  redis_url: {}\n  key_prefix: \"{prefix}\"\n  data_dir: {}\nproviders:\n  down:\n    kind: mock\n    models:\n      - {{ id: m, behavior: {{ error_rate: 1.0, error_status: 503 }} }}\n{FAST_HEALTH}cascades:\n  support:\n    models: [down/m]\n    handoff: true\n",
        server.url(),
        dir.display()
    );
    let gw = start(&yaml).await;
    server.stop();
    let started = tokio::time::Instant::now();
    let resp = gw.post(&chat("support", false)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-tier"), "handoff");
    let id = header(&resp, "x-spillway-handoff-id").to_string();
    assert!(started.elapsed() < std::time::Duration::from_secs(4), "the handoff took {:?}", started.elapsed());
    assert!(dir.join(spillway::handoff::spool::SPOOL_FILE).exists(), "the item was spooled in data_dir");

    // The admin API answers fast and shows the spooled item.
    let started = tokio::time::Instant::now();
    let state = gw.admin_get("/admin/state", "adm").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(4), "/admin/state took {:?}", started.elapsed());
    assert!(state.is_object());
    let list = gw.admin_get("/admin/handoff?status=open", "adm").await;
    assert_eq!(list["data"][0]["id"], id.as_str());
    let item = gw.get(&format!("/v1/handoff/{id}")).await;
    assert_eq!(item.status(), 200);

    // Redis returns: the drain job moves the item there.
    assert!(server.restart().await);
    let q = spillway::handoff::redis::RedisQueue::new(&server.url(), &prefix).unwrap();
    let mut in_redis = false;
    for _ in 0..200 {
        use spillway::handoff::Queue;
        if q.get(&id).await.ok().flatten().is_some() {
            in_redis = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(in_redis, "the spooled item never reached Redis");
    let list = gw.admin_get("/admin/handoff?status=open", "adm").await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "listed once, not twice: {list}");
    let _ = std::fs::remove_dir_all(&dir);
}
