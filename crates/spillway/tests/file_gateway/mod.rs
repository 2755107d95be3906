//! A gateway started the way `spillway serve` starts it: from a config
//! *file*, with the discovery refresh job running, so tests can reload the
//! file and restart on the same `data_dir`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

use serde_json::Value;
use spillway::app::{App, Listener};
use spillway::server::AppState;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub const ADMIN: &str = "admin-secret";

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("spillway-{tag}-{}-{}", std::process::id(), fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A gateway serving from `dir/spillway.yaml`.
pub struct FileGateway {
    pub url: String,
    pub state: Arc<AppState>,
    pub config_path: PathBuf,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl FileGateway {
    /// Writes `yaml` to `dir/spillway.yaml` and serves it, started as
    /// `spillway serve` starts (the composition root, every job running).
    pub async fn start(dir: &Path, yaml: &str) -> Self {
        let config_path = dir.join("spillway.yaml");
        std::fs::write(&config_path, yaml).unwrap();
        let config = spillway::config::load_file(&config_path).unwrap_or_else(|e| panic!("config:\n{e}"));
        let app = App::start(config).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        let state = app.state.clone();
        let task = tokio::spawn(app.serve(Listener::Here(listener), shutdown.clone()));
        Self { url, state, config_path, shutdown, task }
    }

    /// Stops the server and every background job, and waits for them.
    pub async fn stop(self) {
        self.shutdown.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }

    /// The model refs of a cascade's plan, last resort included.
    pub fn plan(&self, cascade: &str) -> Vec<String> {
        let gw = self.state.gateway.load();
        gw.cascades.get(cascade).map(|p| p.targets.iter().map(|t| t.name.clone()).collect()).unwrap_or_default()
    }

    /// Polls until `cond` holds on the plan of `cascade` (at most 5 s).
    pub async fn wait_plan(&self, cascade: &str, cond: impl Fn(&[String]) -> bool) -> Vec<String> {
        for _ in 0..250 {
            let plan = self.plan(cascade);
            if cond(&plan) {
                return plan;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the plan of {cascade} never matched; it is {:?}", self.plan(cascade));
    }

    /// `POST {path}` with the admin token; status and JSON body.
    pub async fn admin_post(&self, path: &str) -> (u16, Value) {
        let resp = reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .post(format!("{}{path}", self.url))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

/// A `base_url` nothing listens on.
pub async fn closed_base_url() -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}/v1")
}
