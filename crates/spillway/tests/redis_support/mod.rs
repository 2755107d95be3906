//! Finding or starting a Redis server for tests.
//!
//! `SPILLWAY_TEST_REDIS_URL` names a shared server; otherwise a test starts
//! its own `redis-server` on a free port (no persistence), which it can
//! also stop and start again to play an outage. With neither a URL nor a
//! `redis-server` binary a test skips with a message, except under
//! `CI=true`, where it fails: CI must run these tests.
//!
//! `SPILLWAY_TEST_REDIS=cluster` runs the same tests on a three-master
//! Redis Cluster each test starts for itself ([`cluster`]), whatever the
//! URL says: `scripts/test.sh` runs the shared-state files both ways.
//! [`sentinel`] starts a master, a replica and three Sentinels.

// Helpers of tests: failures must be loud.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

pub mod cluster;
pub mod instance;
pub mod sentinel;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The Redis a test started: one server, or a cluster when
/// `SPILLWAY_TEST_REDIS=cluster`. Stopped on drop.
pub enum RedisServer {
    Single(Single),
    Cluster(cluster::Cluster),
}

impl RedisServer {
    /// Starts the topology this run asks for; `None` when the binaries are
    /// not installed.
    pub async fn start() -> Option<Self> {
        if on_cluster() {
            return cluster::Cluster::start(3).await.map(Self::Cluster);
        }
        Single::start().await.map(Self::Single)
    }

    /// The URL for `state.redis_url`.
    pub fn url(&self) -> String {
        match self {
            Self::Single(s) => s.url(),
            Self::Cluster(c) => c.url(),
        }
    }

    /// Starts it again (after [`Self::stop`]), on the same ports.
    pub async fn restart(&mut self) -> bool {
        match self {
            Self::Single(s) => s.restart().await,
            Self::Cluster(c) => c.restart().await,
        }
    }

    /// Kills it (an outage: clients see their connections close).
    pub fn stop(&mut self) {
        match self {
            Self::Single(s) => s.stop(),
            Self::Cluster(c) => c.stop(),
        }
    }
}

/// Whether this run puts the Redis tests on a cluster (`SPILLWAY_TEST_REDIS=cluster`).
pub fn on_cluster() -> bool {
    std::env::var("SPILLWAY_TEST_REDIS").is_ok_and(|v| v == "cluster")
}

/// A command connection to `url` of any topology, for reading raw keys.
pub async fn raw(url: &str) -> spillway::state::redis::target::Conn {
    use spillway::state::redis::target::{Limits, Target};
    let limits = Limits { connect: Duration::from_secs(2), response: Duration::from_secs(2), retries: 2 };
    Target::open(url).unwrap().connect(limits).await.unwrap().0
}

/// The prefix keys really carry on `url`: `prefix` in braces on a cluster.
pub fn stored_prefix(url: &str, prefix: &str) -> String {
    spillway::state::redis::target::Target::open(url).unwrap().key_prefix(prefix)
}

/// Every key matching `pattern`, on every node (a test-only `KEYS`).
pub async fn keys(url: &str, pattern: &str) -> Vec<String> {
    redis::cmd("KEYS").arg(pattern).query_async(&mut raw(url).await).await.unwrap()
}

/// A `redis-server` child process, killed on drop.
pub struct Single {
    pub port: u16,
    child: Option<Child>,
}

impl Single {
    /// Starts one on a free port; `None` when `redis-server` is not installed.
    pub async fn start() -> Option<Self> {
        let (child, ports) = spawn_fresh("redis-server", 1, |p| single_args(p[0])).await?;
        Some(Self { port: ports[0], child: Some(child) })
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts the server again on the same port (after [`Self::stop`]).
    pub async fn restart(&mut self) -> bool {
        self.child = spawn_server("redis-server", &single_args(self.port), self.port).await;
        self.child.is_some()
    }

    /// Kills the server (an outage: clients see their connections close).
    pub fn stop(&mut self) {
        kill(&mut self.child);
    }
}

impl Drop for Single {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A lone server's arguments: no persistence.
pub fn single_args(port: u16) -> Vec<String> {
    let args =
        ["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"].map(String::from);
    args.to_vec()
}

/// How a spawned server went.
pub enum Spawned {
    Up(Child),
    /// The program is not installed.
    Missing,
    /// It exited before it listened: its port was taken meanwhile.
    Exited,
}

/// Spawns `program` and waits until it answers on `port` as itself.
pub async fn try_spawn(program: &str, args: &[String], port: u16) -> Spawned {
    let Ok(mut child) = Command::new(program).args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn() else {
        return Spawned::Missing;
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return Spawned::Exited;
        }
        match server_pid(port).await {
            Some(pid) if pid == child.id() => return Spawned::Up(child),
            // Another process listens there: ours cannot bind.
            Some(_) => {
                kill(&mut Some(child));
                return Spawned::Exited;
            }
            None => {}
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("{program} did not start on port {port}");
}

/// The process id of the Redis server answering on `port` (`INFO
/// server`), `None` while none answers.
async fn server_pid(port: u16) -> Option<u32> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    conn.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n").await.ok()?;
    let mut answer = Vec::new();
    let read = async {
        let mut chunk = [0u8; 4096];
        loop {
            let n = conn.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            answer.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&answer);
            if let Some((_, rest)) = text.split_once("process_id:") {
                if let Some((pid, _)) = rest.split_once("\r\n") {
                    return pid.parse().ok();
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(2), read).await.ok()?
}

/// Spawns `program` (`redis-server`, `redis-sentinel`) with `args` and
/// waits until it listens on `port`; `None` when it is not installed.
/// For a server coming back on ports it had: one that exits fails the test.
pub async fn spawn_server(program: &str, args: &[String], port: u16) -> Option<Child> {
    match try_spawn(program, args, port).await {
        Spawned::Up(child) => Some(child),
        Spawned::Missing => None,
        Spawned::Exited => panic!("{program} exited instead of listening on port {port}"),
    }
}

/// Spawns `program` on `count` free ports (`args` makes its arguments from
/// them; the first is the one it answers on) and waits until it listens;
/// `None` when it is not installed. A free port can be taken between
/// [`free_port`] and the server's bind (every outgoing connection of a
/// parallel test draws from the same range): a server that exits is
/// started again on fresh ports.
pub async fn spawn_fresh(
    program: &str,
    count: usize,
    mut args: impl FnMut(&[u16]) -> Vec<String>,
) -> Option<(Child, Vec<u16>)> {
    for _ in 0..5 {
        let ports: Vec<u16> = (0..count).map(|_| free_port()).collect();
        match try_spawn(program, &args(&ports), ports[0]).await {
            Spawned::Up(child) => return Some((child, ports)),
            Spawned::Missing => return None,
            Spawned::Exited => continue,
        }
    }
    panic!("{program} exited five times on fresh ports");
}

/// Kills a server with SIGKILL (`kill -9`: no goodbye to its clients) and reaps it.
pub fn kill(child: &mut Option<Child>) {
    if let Some(mut c) = child.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// A private temporary directory, removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("spillway-{name}-{}-{}", std::process::id(), fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// `dir/name`, as text for a server's arguments.
    pub fn join(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Says why a test cannot run: a skip message, or a failure under CI.
pub fn unavailable(test: &str) {
    let msg = format!("{test}: no Redis (set SPILLWAY_TEST_REDIS_URL or install redis-server and redis-sentinel)");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}; CI must run the Redis tests");
    }
    eprintln!("SKIPPED {msg}");
}

/// A Redis to use: the shared one from the environment, else an own server
/// (kept alive by the returned guard). `None`: skip (see [`unavailable`]).
pub async fn any_redis(test: &str) -> Option<(String, Option<RedisServer>)> {
    if let Ok(url) = std::env::var("SPILLWAY_TEST_REDIS_URL") {
        if !url.is_empty() && !on_cluster() {
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
