//! `spillway serve` processes sharing one Redis, for the shared-state and
//! failover tests: each with its own config, port and log file, talked to
//! over HTTP.

use super::free_port;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use test_upstreams::FakeUpstream;

/// A `spillway serve` child process, killed on drop.
pub struct Instance {
    pub url: String,
    child: Child,
    log: std::path::PathBuf,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `spillway ARGS`, logging at INFO as text into `log`; with `env`, in that
/// environment only (else this process's).
pub fn spawn(args: &[&str], env: Option<&HashMap<String, String>>, log: &std::path::Path) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spillway"));
    if let Some(env) = env {
        cmd.env_clear().envs(env);
    }
    cmd.args(args)
        .env("SPILLWAY_LOG", "info")
        .env("SPILLWAY_LOG_FORMAT", "text")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

pub fn yaml(
    port: u16,
    redis_url: &str,
    prefix: &str,
    dir: &std::path::Path,
    ups: &[&FakeUpstream],
    hook: &str,
) -> String {
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

pub async fn start(name: &str, redis_url: &str, prefix: &str, ups: &[&FakeUpstream], hook: &str) -> Instance {
    start_with(name, redis_url, prefix, ups, hook, "").await
}

/// [`start`] with `extra` YAML after the config's last section (its
/// `cascades:`): more cascades, indented by two spaces.
pub async fn start_with(
    name: &str,
    redis_url: &str,
    prefix: &str,
    ups: &[&FakeUpstream],
    hook: &str,
    extra: &str,
) -> Instance {
    let dir = std::env::temp_dir().join(format!("spillway-shared-{}-{}-{name}", std::process::id(), fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let config = dir.join("spillway.yaml");
    std::fs::write(&config, yaml(port, redis_url, prefix, &dir.join("data"), ups, hook) + extra).unwrap();
    let log = dir.join("stderr.log");
    let child = spawn(&["serve", "--config", config.to_str().unwrap()], None, &log);
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
pub fn client() -> reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| reqwest::Client::builder().no_proxy().build().unwrap()).clone()
}

/// Polls `f` every 2 ms until it returns `Some` or `limit` passes.
pub async fn poll<T, F: std::future::Future<Output = Option<T>>>(
    limit: Duration,
    mut f: impl FnMut() -> F,
) -> Option<T> {
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
    pub async fn chat(&self) -> (u16, String) {
        let body = json!({"model": "c", "messages": [{"role": "user", "content": "Hi"}]});
        let r = client().post(format!("{}/v1/chat/completions", self.url)).json(&body).send().await.unwrap();
        let model = r.headers().get("x-spillway-model").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        (r.status().as_u16(), model)
    }

    /// Streams a chat request to its end; the status, the model and the last event.
    pub async fn chat_stream(&self) -> (u16, String, String) {
        let body = json!({"model": "c", "stream": true, "messages": [{"role": "user", "content": "Hi"}]});
        let r = client().post(format!("{}/v1/chat/completions", self.url)).json(&body).send().await.unwrap();
        let status = r.status().as_u16();
        let model = r.headers().get("x-spillway-model").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let text = r.text().await.unwrap();
        let last = text.split("\n\n").filter_map(|e| e.strip_prefix("data: ")).last().unwrap_or_default().to_string();
        (status, model, last)
    }

    /// `GET path` with the admin token, as JSON.
    pub async fn admin(&self, path: &str) -> Value {
        let r = client().get(format!("{}{path}", self.url)).bearer_auth("admin").send().await.unwrap();
        r.json().await.unwrap()
    }

    pub async fn model_state(&self, model: &str) -> Value {
        let v = self.admin("/admin/state").await;
        let models = v["cascades"][0]["models"].as_array().cloned().unwrap_or_default();
        models.into_iter().find(|m| m["model"] == model).unwrap_or(Value::Null)
    }

    pub async fn readyz(&self) -> (u16, Value) {
        let r = client().get(format!("{}/readyz", self.url)).send().await.unwrap();
        (r.status().as_u16(), r.json().await.unwrap())
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}
