//! Hot reload (SPEC §4): a valid file replaces the config atomically while
//! requests in flight finish on the old one; an invalid file is rejected
//! with every error and the old config stays; discovered cascades are
//! rebuilt for the new config at once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;
mod file_gateway;

use common::{chat, header, FakeUpstream, Reply};
use file_gateway::{FileGateway, TempDir, ADMIN};
use serde_json::json;
use spillway::discovery::DiscoveryEvent;

fn mock_config(cascades: &str) -> String {
    format!(
        "
server:
  admin_token: {ADMIN}
providers:
  mock:
    kind: mock
    models:
      - {{ id: a, behavior: {{ latency: 1ms }} }}
      - {{ id: b, behavior: {{ latency: 1ms }} }}
      - {{ id: slow, behavior: {{ latency: 400ms }} }}
cascades:
{cascades}
{}",
        common::FAST_HEALTH
    )
}

async fn ask(url: &str, cascade: &str) -> reqwest::Response {
    common::client().post(format!("{url}/v1/chat/completions")).json(&chat(cascade, false)).send().await.unwrap()
}

#[tokio::test]
async fn a_valid_file_replaces_the_config_and_requests_in_flight_finish_on_the_old() {
    let dir = TempDir::new("reload-valid");
    let gw =
        FileGateway::start(dir.path(), &mock_config("  chat: { models: [mock/a] }\n  slow: { models: [mock/slow] }"))
            .await;
    assert_eq!(header(&ask(&gw.url, "chat").await, "x-spillway-model"), "mock/a");
    let mut rx = gw.state.gateway.load().shared.discovery.subscribe();

    // A slow request starts on the old config, which has the `slow` cascade.
    let url = gw.url.clone();
    let in_flight = tokio::spawn(async move { ask(&url, "slow").await });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;

    std::fs::write(&gw.config_path, mock_config("  chat: { models: [mock/b] }")).unwrap();
    let (status, body) = gw.admin_post("/admin/config/reload").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "reloaded");

    let old = in_flight.await.unwrap();
    assert_eq!(old.status(), 200, "the request in flight finished on the old config");
    assert_eq!(header(&old, "x-spillway-model"), "mock/slow");
    assert_eq!(header(&ask(&gw.url, "chat").await, "x-spillway-model"), "mock/b");
    assert_eq!(ask(&gw.url, "slow").await.status(), 404, "the new config has no `slow` cascade");
    assert!(matches!(rx.try_recv(), Ok(DiscoveryEvent::ConfigReloaded { .. })));
    gw.stop().await;
}

#[tokio::test]
async fn an_invalid_file_is_rejected_with_every_error_and_the_old_config_stays() {
    let dir = TempDir::new("reload-invalid");
    let gw = FileGateway::start(dir.path(), &mock_config("  chat: { models: [mock/a] }")).await;
    let mut rx = gw.state.gateway.load().shared.discovery.subscribe();

    let broken = mock_config("  chat: { models: [nowhere/a] }") + "discovery: { interval: soon }\n";
    std::fs::write(&gw.config_path, broken).unwrap();
    let (status, body) = gw.admin_post("/admin/config/reload").await;
    assert_eq!(status, 422, "{body}");
    let errors: Vec<String> =
        body["errors"].as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_string()).collect();
    assert!(errors.iter().any(|e| e.starts_with("discovery.interval")), "{errors:?}");
    assert!(errors.iter().any(|e| e.starts_with("cascades.chat")), "{errors:?}");
    assert_eq!(body["error"]["code"], "config_rejected");

    assert_eq!(header(&ask(&gw.url, "chat").await, "x-spillway-model"), "mock/a", "the old config stays");
    match rx.try_recv() {
        Ok(DiscoveryEvent::ConfigRejected { errors: sent }) => assert_eq!(sent, errors),
        other => panic!("expected ConfigRejected, got {other:?}"),
    }

    // Not YAML at all is rejected the same way.
    std::fs::write(&gw.config_path, "providers: [unclosed").unwrap();
    let (status, _) = gw.admin_post("/admin/config/reload").await;
    assert_eq!(status, 422);
    assert_eq!(header(&ask(&gw.url, "chat").await, "x-spillway-model"), "mock/a");
    gw.stop().await;
}

#[tokio::test]
async fn reload_rebuilds_discovered_cascades_from_the_cached_listings() {
    let up = FakeUpstream::start().await;
    let data: Vec<_> = ["qwen3-235b", "llama-3.3-70b", "small-8b"]
        .iter()
        .map(|id| json!({"id": id, "active": true, "context_window": 131072}))
        .collect();
    up.route("/v1/models", Reply::json(json!({"object": "list", "data": data})));
    let dir = TempDir::new("reload-discovered");
    let yaml = |exclude: &str| {
        format!(
            "
server: {{ admin_token: {ADMIN} }}
state: {{ data_dir: {} }}
providers:
  groq: {{ kind: openai, base_url: '{}', discovery: {{ format: groq }} }}
cascades:
  chat: {{ strategy: quality_first, providers: [groq], filters: {{ exclude_patterns: [{exclude}] }} }}
",
            dir.path().display(),
            up.base_url()
        )
    };
    let gw = FileGateway::start(dir.path(), &yaml("guard")).await;
    gw.wait_plan("chat", |p| p.len() == 3).await;

    std::fs::write(&gw.config_path, yaml("qwen")).unwrap();
    let (status, body) = gw.admin_post("/admin/config/reload").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["changes"], json!(["chat: -groq/qwen3-235b (removed)"]));
    assert_eq!(gw.plan("chat"), ["groq/llama-3.3-70b", "groq/small-8b"]);
    gw.stop().await;
}

#[tokio::test]
async fn a_reload_reports_what_changed() {
    let dir = TempDir::new("reload-changed");
    let gw =
        FileGateway::start(dir.path(), &mock_config("  chat: { models: [mock/a] }\n  other: { models: [mock/b] }"))
            .await;
    let (status, body) = gw.admin_post("/admin/config/reload").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["changed"], json!([]), "the same file: {body}");
    assert_eq!(body["message"], "nothing changed");
    let next = mock_config("  chat: { models: [mock/b] }\n  fresh: { models: [mock/a] }")
        .replace("max: 1, backoff: 1ms", "max: 2, backoff: 1ms");
    std::fs::write(&gw.config_path, next).unwrap();
    let (status, body) = gw.admin_post("/admin/config/reload").await;
    assert_eq!(status, 200, "{body}");
    let changed: Vec<&str> = body["changed"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(
        changed,
        ["cascades.chat: changed", "cascades.fresh: added", "cascades.other: removed", "health: changed"],
        "{body}"
    );
    assert!(body["message"].as_str().unwrap().contains("cascades.fresh: added"));
    // A rotated admin token is a change, though it is never shown.
    let rotated = std::fs::read_to_string(&gw.config_path).unwrap().replace(ADMIN, "rotated-token");
    std::fs::write(&gw.config_path, rotated).unwrap();
    let (_, body) = gw.admin_post("/admin/config/reload").await;
    assert_eq!(body["changed"], json!(["server: changed"]), "{body}");
    assert!(!body.to_string().contains("rotated-token"));
    gw.stop().await;
}

/// A Kubernetes ConfigMap update: the mounted file is a symlink through
/// `..data`, which the kubelet swaps to a new directory. The gateway
/// notices the new content within `server.watch_config` and reloads it by
/// itself; a broken file is rejected once (not at every poll) and the old
/// config stays.
#[tokio::test(start_paused = true)]
async fn a_changed_file_is_reloaded_by_itself_and_a_broken_one_rejected_once() {
    use std::os::unix::fs::symlink;
    let dir = TempDir::new("reload-watch");
    let version = |n: u32, yaml: &str| {
        let v = dir.path().join(format!("..v{n}"));
        std::fs::create_dir_all(&v).unwrap();
        std::fs::write(v.join("spillway.yaml"), yaml).unwrap();
        let tmp = dir.path().join("..data_tmp");
        symlink(format!("..v{n}"), &tmp).unwrap();
        std::fs::rename(&tmp, dir.path().join("..data")).unwrap();
    };
    version(1, &mock_config("  chat: { models: [mock/a] }"));
    symlink("..data/spillway.yaml", dir.path().join("spillway.yaml")).unwrap();
    // FileGateway writes through the symlink: the same content.
    let gw = FileGateway::start(dir.path(), &mock_config("  chat: { models: [mock/a] }")).await;
    let mut rx = gw.state.gateway.load().shared.discovery.subscribe();
    // Unchanged content: nothing happens over several polls.
    let quiet = tokio::time::timeout(std::time::Duration::from_secs(20), next_reload(&mut rx)).await;
    assert!(quiet.is_err(), "no reload without a change: {quiet:?}");

    version(2, &mock_config("  chat: { models: [mock/b] }"));
    let event = tokio::time::timeout(std::time::Duration::from_secs(6), next_reload(&mut rx)).await.unwrap();
    assert!(matches!(event, DiscoveryEvent::ConfigReloaded { .. }), "{event:?}");
    assert_eq!(gw.plan("chat")[0], "mock/b");

    version(3, "providers: [not, a, map]\n");
    let event = tokio::time::timeout(std::time::Duration::from_secs(6), next_reload(&mut rx)).await.unwrap();
    assert!(matches!(event, DiscoveryEvent::ConfigRejected { .. }), "{event:?}");
    let again = tokio::time::timeout(std::time::Duration::from_secs(20), next_reload(&mut rx)).await;
    assert!(again.is_err(), "a broken file is rejected once, not at every poll: {again:?}");
    assert_eq!(gw.plan("chat")[0], "mock/b", "the old config stays");
    gw.stop().await;
}

/// The next reload's outcome on the discovery bus.
async fn next_reload(rx: &mut tokio::sync::broadcast::Receiver<DiscoveryEvent>) -> DiscoveryEvent {
    loop {
        let e = rx.recv().await.unwrap();
        if matches!(e, DiscoveryEvent::ConfigReloaded { .. } | DiscoveryEvent::ConfigRejected { .. }) {
            return e;
        }
    }
}
