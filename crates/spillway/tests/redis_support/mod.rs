//! Finding or starting a Redis server for tests.
//!
//! `SPILLWAY_TEST_REDIS_URL` names a shared server; otherwise a test starts
//! its own `redis-server` on a free port (no persistence), which it can
//! also stop and start again to play an outage. With neither a URL nor a
//! `redis-server` binary a test skips with a message, except under
//! `CI=true`, where it fails: CI must run these tests.

// Helpers of tests: failures must be loud.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `redis-server` child process, killed on drop.
pub struct RedisServer {
    pub port: u16,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts one on a free port; `None` when `redis-server` is not installed.
    pub async fn start() -> Option<Self> {
        let mut server = Self { port: free_port(), child: None };
        server.restart().await.then_some(server)
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts the server again on the same port (after [`Self::stop`]).
    pub async fn restart(&mut self) -> bool {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = child else {
            return false;
        };
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while tokio::time::Instant::now() < deadline {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_ok() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("redis-server did not start on port {}", self.port);
    }

    /// Kills the server (an outage: clients see their connections close).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Says why a test cannot run: a skip message, or a failure under CI.
pub fn unavailable(test: &str) {
    let msg = format!("{test}: no Redis (set SPILLWAY_TEST_REDIS_URL or install redis-server)");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}; CI must run the Redis tests");
    }
    eprintln!("SKIPPED {msg}");
}

/// A Redis to use: the shared one from the environment, else an own server
/// (kept alive by the returned guard). `None`: skip (see [`unavailable`]).
pub async fn any_redis(test: &str) -> Option<(String, Option<RedisServer>)> {
    if let Ok(url) = std::env::var("SPILLWAY_TEST_REDIS_URL") {
        if !url.is_empty() {
            return Some((url, None));
        }
    }
    match RedisServer::start().await {
        Some(s) => Some((s.url(), Some(s))),
        None => {
            unavailable(test);
            None
        }
    }
}

/// An own server (for outage tests, which must stop it). `None`: skip.
pub async fn own_redis(test: &str) -> Option<RedisServer> {
    let s = RedisServer::start().await;
    if s.is_none() {
        unavailable(test);
    }
    s
}

/// A key prefix no other test run uses.
pub fn unique_prefix(test: &str) -> String {
    format!("spillway-test:{test}:{}:{}:", std::process::id(), fastrand::u64(..))
}

/// Polls `cond` every 2 ms until it holds or `limit` passes.
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
