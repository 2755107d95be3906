//! A small language for gateway tests: start Spillway in-process on
//! `127.0.0.1:0` from a YAML string, talk to it over real HTTP.

// Helpers of tests: failures must be loud, and tests may spawn freely.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

use serde_json::{json, Value};
use spillway::app::{App, Listener};
use spillway::server::AppState;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

#[allow(unused_imports)] // not every test file uses every helper
pub use test_upstreams::{schema::assert_valid, FakeUpstream, Reply};

/// A running gateway.
pub struct TestGateway {
    pub url: String,
    pub state: Arc<AppState>,
    pub shutdown: CancellationToken,
    pub task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    /// The `data_dir` given to a gateway with keys that left it at its
    /// default, removed when the gateway is dropped.
    pub scratch: Option<std::path::PathBuf>,
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(dir) = &self.scratch {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Health settings that make tests deterministic (no jitter, short deadlines).
pub const FAST_HEALTH: &str = "
health:
  retries: { max: 1, backoff: 1ms, jitter: 0 }
  timeouts: { connect: 1s, first_token: 3s, idle: 3s, total: 10s }
";

/// The composition root's state for `yaml`, with its jobs running but no
/// listener: for tests that call the request path in process (paused time
/// drives it). The app lives as long as the test's runtime.
pub fn app_state(yaml: &str) -> Arc<AppState> {
    let config = spillway::config::load_str(yaml, None, &|_| None).unwrap_or_else(|e| panic!("{e}"));
    let app = App::start(config).unwrap();
    let state = app.state.clone();
    std::mem::forget(app); // its jobs live as long as the test's runtime
    state
}

/// Starts a gateway from YAML through the composition root, serving on
/// this test's event loop.
pub async fn start(yaml: &str) -> TestGateway {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    launch(yaml, addr, Listener::Here(listener))
}

/// Starts a gateway from YAML on `workers` serving threads of its own, as
/// `spillway serve` does.
pub async fn start_workers(yaml: &str, workers: usize) -> TestGateway {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    launch(yaml, addr, Listener::Workers(listener, Some(workers)))
}

type ServeTask = tokio::task::JoinHandle<std::io::Result<()>>;

/// `spillway serve`'s own start ([`App::start`]), with a test's listener.
fn launch(yaml: &str, addr: std::net::SocketAddr, listener: Listener) -> TestGateway {
    let mut config = spillway::config::load_str(yaml, None, &|_| None).unwrap_or_else(|e| panic!("config:\n{e}"));
    // Keys' usage is kept in `data_dir` across restarts: tests running at
    // once must not share the default one, or one test's key would start
    // with another's spend.
    let scratch = (!config.keys.is_empty() && config.state.data_dir == std::path::Path::new("./spillway-data"))
        .then(|| std::env::temp_dir().join(format!("spillway-test-{}-{}", std::process::id(), fastrand::u64(..))));
    if let Some(dir) = &scratch {
        config.state.data_dir = dir.clone();
    }
    let app = App::start(config).unwrap();
    let state = app.state.clone();
    let shutdown = CancellationToken::new();
    let task: ServeTask = tokio::spawn(app.serve(listener, shutdown.clone()));
    TestGateway { url: format!("http://{addr}"), state, shutdown, task: Some(task), scratch }
}

/// A provider block pointing at a fake upstream.
pub fn openai_provider(name: &str, up: &FakeUpstream) -> String {
    format!("  {name}:\n    kind: openai\n    base_url: {}\n    api_key: test-key-{name}\n", up.base_url())
}

/// A minimal chat body.
pub fn chat(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "Hello?"}]})
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

impl TestGateway {
    /// Waits for the server task to end (after `shutdown` was cancelled).
    pub async fn stopped(&mut self, limit: std::time::Duration) -> std::io::Result<()> {
        let task = self.task.take().expect("already stopped");
        tokio::time::timeout(limit, task).await.expect("server did not stop in time").expect("server task panicked")
    }

    pub async fn post(&self, body: &Value) -> reqwest::Response {
        client().post(format!("{}/v1/chat/completions", self.url)).json(body).send().await.unwrap()
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        client().get(format!("{}{path}", self.url)).send().await.unwrap()
    }

    /// The value of one series of `/metrics` (`name{labels}` exactly as
    /// exposed), 0 when it is absent.
    pub async fn metric(&self, series: &str) -> f64 {
        let text = self.get("/metrics").await.text().await.unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
            .map_or(0.0, |v| v.trim().parse().unwrap())
    }

    /// `GET path` of the admin API with `token`; the JSON answer (200 asserted).
    pub async fn admin_get(&self, path: &str, token: &str) -> Value {
        let resp = client().get(format!("{}{path}", self.url)).bearer_auth(token).send().await.unwrap();
        assert_eq!(resp.status(), 200, "GET {path}");
        resp.json().await.unwrap()
    }
}

/// Reads a whole SSE response into its `data:` payloads.
pub async fn sse_events(resp: reqwest::Response) -> Vec<String> {
    let text = resp.text().await.unwrap();
    text.split("\n\n").filter_map(|e| e.strip_prefix("data: ")).map(str::to_string).collect()
}

/// The text of a streamed answer.
pub fn streamed_text(events: &[String]) -> String {
    events
        .iter()
        .filter(|e| e.as_str() != "[DONE]")
        .filter_map(|e| serde_json::from_str::<Value>(e).ok())
        .filter_map(|v| v["choices"][0]["delta"]["content"].as_str().map(str::to_string))
        .collect()
}

pub fn header<'a>(resp: &'a reqwest::Response, name: &str) -> &'a str {
    resp.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

/// The log lines written through the process's global subscriber, which
/// [`Logs::capture`] installs (once per test binary: a thread's own
/// subscriber would miss callsites other tests' threads registered first).
#[derive(Clone, Default)]
pub struct Logs(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Installs the global subscriber with `filter` (an `EnvFilter`
    /// directive), writing plain lines here.
    pub fn capture(filter: &str) -> Self {
        let logs = Self::default();
        let sink = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        logs
    }

    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}
