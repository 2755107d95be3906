//! A local Sentinel set for one test: a master, a replica of it, and three
//! `redis-sentinel`s watching them (quorum 2, a master is down after 1 s
//! without answers), each on free ports with a private writable config
//! (Sentinels rewrite their file), in a temporary directory.

use super::{free_port, kill, spawn_server, TempDir};
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
        let master = free_port();
        let mut data = Vec::new();
        for (i, replica_of) in [None, Some(master)].into_iter().enumerate() {
            let port = if i == 0 { master } else { free_port() };
            let (p, d, m) = (port.to_string(), dir.join(&format!("data-{i}")), master.to_string());
            std::fs::create_dir_all(&d).unwrap();
            let mut args = vec!["--port", &p, "--bind", "127.0.0.1", "--dir", &d, "--save", "", "--appendonly", "no"];
            if replica_of.is_some() {
                args.extend(["--replicaof", "127.0.0.1", &m]);
            }
            let child = spawn_server("redis-server", &args, port).await?;
            data.push(Server { port, child: Some(child) });
        }
        let mut set = Self { data, sentinels: Vec::new(), _dir: dir };
        for i in 0..3 {
            let port = free_port();
            let file = set._dir.join(&format!("sentinel-{i}.conf"));
            std::fs::write(
                &file,
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor {MASTER} 127.0.0.1 {master} 2\n\
                     sentinel down-after-milliseconds {MASTER} 1000\nsentinel failover-timeout {MASTER} 10000\n\
                     sentinel parallel-syncs {MASTER} 1\n",
                    set._dir.join("")
                ),
            )
            .unwrap();
            let child = spawn_server("redis-sentinel", &[&file], port).await?;
            set.sentinels.push(Server { port, child: Some(child) });
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
