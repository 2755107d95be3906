//! A local Sentinel set for one test: a master, a replica of it, and three
//! `redis-sentinel`s watching them (quorum 2, a master is down after 1 s
//! without answers), each on free ports with a private writable config
//! (Sentinels rewrite their file), in a temporary directory.

use super::{kill, spawn_fresh, TempDir};
use std::process::Child;
use std::time::Duration;

/// The monitored master's name.
pub const MASTER: &str = "mymaster";

struct Server {
    port: u16,
    child: Option<Child>,
}

/// The running set; everything is killed on drop.
pub struct Sentinels {
    data: Vec<Server>,
    sentinels: Vec<Server>,
    _dir: TempDir,
}

async fn query(port: u16, cmd: &redis::Cmd) -> Option<redis::Value> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).ok()?;
    let mut c =
        tokio::time::timeout(Duration::from_secs(1), client.get_multiplexed_async_connection()).await.ok()?.ok()?;
    tokio::time::timeout(Duration::from_secs(1), cmd.query_async(&mut c)).await.ok()?.ok()
}

impl Sentinels {
    /// Starts the master, the replica and three Sentinels, and waits until
    /// the replica is in sync and every Sentinel knows the others (a
    /// failover needs their votes). `None` when a binary is missing.
    pub async fn start() -> Option<Self> {
        let dir = TempDir::new("sentinel");
        let mut data = Vec::new();
        let mut master = 0;
        for i in 0..2 {
            let d = dir.join(&format!("data-{i}"));
            std::fs::create_dir_all(&d).unwrap();
            let args = |p: &[u16]| {
                let port = p[0].to_string();
                let mut args =
                    vec!["--port", &port, "--bind", "127.0.0.1", "--dir", &d, "--save", "", "--appendonly", "no"]
                        .into_iter()
                        .map(String::from)
                        .collect::<Vec<_>>();
                if i == 1 {
                    args.extend(["--replicaof".into(), "127.0.0.1".into(), master.to_string()]);
                }
                args
            };
            let (child, ports) = spawn_fresh("redis-server", 1, args).await?;
            if i == 0 {
                master = ports[0];
            }
            data.push(Server { port: ports[0], child: Some(child) });
        }
        let mut set = Self { data, sentinels: Vec::new(), _dir: dir };
        for i in 0..3 {
            let file = set._dir.join(&format!("sentinel-{i}.conf"));
            // Sentinels rewrite their file: written afresh for every port tried.
            let conf = |p: &[u16]| {
                std::fs::write(
                    &file,
                    format!(
                        "port {}\nbind 127.0.0.1\ndir {}\nsentinel monitor {MASTER} 127.0.0.1 {master} 2\n\
                         sentinel down-after-milliseconds {MASTER} 1000\nsentinel failover-timeout {MASTER} 10000\n\
                         sentinel parallel-syncs {MASTER} 1\n",
                        p[0],
                        set._dir.join("")
                    ),
                )
                .unwrap();
                vec![file.clone()]
            };
            let (child, ports) = spawn_fresh("redis-sentinel", 1, conf).await?;
            set.sentinels.push(Server { port: ports[0], child: Some(child) });
        }
        set.wait_ready().await;
        Some(set)
    }

    async fn wait_ready(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let replica = self.data[1].port;
        loop {
            let synced = matches!(
                query(replica, redis::cmd("INFO").arg("replication")).await,
                Some(redis::Value::BulkString(b)) if String::from_utf8_lossy(&b).contains("master_link_status:up")
            );
            let mut known = synced;
            for s in &self.sentinels {
                let others = query(s.port, redis::cmd("SENTINEL").arg("SENTINELS").arg(MASTER)).await;
                let replicas = query(s.port, redis::cmd("SENTINEL").arg("REPLICAS").arg(MASTER)).await;
                let count = |v: Option<redis::Value>| match v {
                    Some(redis::Value::Array(a)) => a.len(),
                    _ => 0,
                };
                known &= count(others) == 2 && count(replicas) == 1;
            }
            if known {
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "the Sentinels never learnt of each other and the replica");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `redis+sentinel://127.0.0.1:S1,…/mymaster`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.sentinels.iter().map(|s| format!("127.0.0.1:{}", s.port)).collect();
        format!("redis+sentinel://{}/{MASTER}", hosts.join(","))
    }

    /// `127.0.0.1:PORT` of the master the Sentinels name now.
    pub async fn master(&self) -> Option<String> {
        for s in &self.sentinels {
            let cmd = redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg(MASTER).clone();
            if let Some(redis::Value::Array(v)) = query(s.port, &cmd).await {
                if let [redis::Value::BulkString(host), redis::Value::BulkString(port)] = v.as_slice() {
                    return Some(format!("{}:{}", String::from_utf8_lossy(host), String::from_utf8_lossy(port)));
                }
            }
        }
        None
    }

    /// `127.0.0.1:PORT` of the first master (the one [`Self::kill_master`] kills).
    pub fn first_master(&self) -> String {
        format!("127.0.0.1:{}", self.data[0].port)
    }

    /// A planned failover (`SENTINEL FAILOVER`): the master is demoted
    /// alive, so connections to it may stay open and see `READONLY`.
    pub async fn failover(&self) {
        let cmd = redis::cmd("SENTINEL").arg("FAILOVER").arg(MASTER).clone();
        assert!(query(self.sentinels[0].port, &cmd).await.is_some(), "SENTINEL FAILOVER was refused");
    }

    /// `kill -9` of the first master.
    pub fn kill_master(&mut self) {
        kill(&mut self.data[0].child);
    }
}

impl Drop for Sentinels {
    fn drop(&mut self) {
        for s in self.sentinels.iter_mut().chain(self.data.iter_mut()) {
            kill(&mut s.child);
        }
    }
}
