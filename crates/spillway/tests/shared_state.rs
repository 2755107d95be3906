//! Two `spillway serve` processes sharing state through one Redis: a dead
//! mark made by one is honoured by the other, failures split over both
//! open one breaker, and a Redis outage degrades without failing requests
//! and heals without a restart.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod redis_support;

use redis_support::*;
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use test_upstreams::{FakeUpstream, Reply};

/// A `spillway serve` child process, killed on drop.
struct Instance {
    url: String,
    child: Child,
    log: std::path::PathBuf,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn yaml(port: u16, redis_url: &str, prefix: &str, dir: &std::path::Path, ups: &[&FakeUpstream], hook: &str) -> String {
    let providers: String = ups
        .iter()
        .enumerate()
        .map(|(i, up)| format!("  up{i}:\n    kind: openai\n    base_url: {}\n    api_key: k{i}\n", up.base_url()))
        .collect();
    let models: Vec<String> = (0..ups.len()).map(|i| format!("up{i}/m")).collect();
    format!(
        "server:\n  listen: 127.0.0.1:{port}\n  admin_token: admin\n\
         state:\n  backend: redis\n  redis_url: {redis_url}\n  key_prefix: \"{prefix}\"\n  data_dir: {}\n\
         providers:\n{providers}\
         health:\n  dead_ttl: 10m\n  retries: {{ max: 0, backoff: 1ms, jitter: 0 }}\n  \
         breaker: {{ window: 60s, consecutive_failures: 5, failure_rate: 1.0, min_requests: 1000, open_for: 60s }}\n  \
         timeouts: {{ connect: 1s, first_token: 3s, idle: 3s, total: 10s }}\n\
         alerts:\n  webhook: {{ url: \"{hook}\" }}\n  repeat_after: 1s\n\
         cascades:\n  c:\n    models: [{}]\n",
        dir.display(),
        models.join(", ")
    )
}

async fn start(name: &str, redis_url: &str, prefix: &str, ups: &[&FakeUpstream], hook: &str) -> Instance {
    let dir = std::env::temp_dir().join(format!("spillway-shared-{}-{}-{name}", std::process::id(), fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let config = dir.join("spillway.yaml");
    std::fs::write(&config, yaml(port, redis_url, prefix, &dir.join("data"), ups, hook)).unwrap();
    let log = dir.join("stderr.log");
    let child = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(["serve", "--config", config.to_str().unwrap()])
        .env("SPILLWAY_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let inst = Instance { url: format!("http://127.0.0.1:{port}"), child, log };
    let ready = poll(Duration::from_secs(10), || async {
        let r = client().get(format!("{}/readyz", inst.url)).send().await.ok()?;
        let v: Value = r.json().await.ok()?;
        (v["state"]["degraded"] == false).then_some(())
    })
    .await;
    assert!(
        ready.is_some(),
        "{name} did not become ready:\n{}",
        std::fs::read_to_string(&inst.log).unwrap_or_default()
    );
    inst
}

/// One client for the whole test, so polls reuse their connections.
fn client() -> reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| reqwest::Client::builder().no_proxy().build().unwrap()).clone()
}

/// Polls `f` every 2 ms until it returns `Some` or `limit` passes.
async fn poll<T, F: std::future::Future<Output = Option<T>>>(limit: Duration, mut f: impl FnMut() -> F) -> Option<T> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return Some(v);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

impl Instance {
    /// Sends a chat request; returns the status and the model that answered.
    async fn chat(&self) -> (u16, String) {
        let body = json!({"model": "c", "messages": [{"role": "user", "content": "Hi"}]});
        let r = client().post(format!("{}/v1/chat/completions", self.url)).json(&body).send().await.unwrap();
        let model = r.headers().get("x-spillway-model").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        (r.status().as_u16(), model)
    }

    /// Streams a chat request to its end; the status, the model and the last event.
    async fn chat_stream(&self) -> (u16, String, String) {
        let body = json!({"model": "c", "stream": true, "messages": [{"role": "user", "content": "Hi"}]});
        let r = client().post(format!("{}/v1/chat/completions", self.url)).json(&body).send().await.unwrap();
        let status = r.status().as_u16();
        let model = r.headers().get("x-spillway-model").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let text = r.text().await.unwrap();
        let last = text.split("\n\n").filter_map(|e| e.strip_prefix("data: ")).last().unwrap_or_default().to_string();
        (status, model, last)
    }

    async fn model_state(&self, model: &str) -> Value {
        let v: Value = client()
            .get(format!("{}/admin/state", self.url))
            .bearer_auth("admin")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let models = v["cascades"][0]["models"].as_array().cloned().unwrap_or_default();
        models.into_iter().find(|m| m["model"] == model).unwrap_or(Value::Null)
    }

    async fn readyz(&self) -> (u16, Value) {
        let r = client().get(format!("{}/readyz", self.url)).send().await.unwrap();
        (r.status().as_u16(), r.json().await.unwrap())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

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
