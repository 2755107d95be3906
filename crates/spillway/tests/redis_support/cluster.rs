//! A local Redis Cluster of masters only, for one test: `redis-server
//! --cluster-enabled yes` per node on free ports (the bus port too, with
//! `cluster-port`), joined by `redis-cli --cluster create`, in a temporary
//! directory that keeps each node's `nodes.conf`, so a stopped cluster
//! comes back whole on [`Cluster::restart`].

use super::{kill, spawn_fresh, spawn_server, TempDir};
use std::process::Child;
use std::time::Duration;

struct Node {
    port: u16,
    bus: u16,
    child: Option<Child>,
}

/// The running cluster; every node is killed on drop.
pub struct Cluster {
    nodes: Vec<Node>,
    dir: TempDir,
}

impl Cluster {
    /// Starts `masters` nodes and joins them; `None` when `redis-server` or
    /// `redis-cli` is missing.
    pub async fn start(masters: usize) -> Option<Self> {
        let dir = TempDir::new("cluster");
        let mut nodes = Vec::new();
        for _ in 0..masters {
            let (child, ports) = spawn_fresh("redis-server", 2, |p| node_args(&dir, p[0], p[1])).await?;
            nodes.push(Node { port: ports[0], bus: ports[1], child: Some(child) });
        }
        let cluster = Self { nodes, dir };
        let addresses: Vec<String> = cluster.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let created = tokio::task::spawn_blocking(move || {
            std::process::Command::new("redis-cli")
                .args(["--cluster", "create"])
                .args(&addresses)
                .args(["--cluster-replicas", "0", "--cluster-yes"])
                .output()
        })
        .await
        .unwrap();
        match created {
            Ok(out) => {
                assert!(out.status.success(), "redis-cli --cluster create: {}", String::from_utf8_lossy(&out.stdout))
            }
            Err(_) => return None,
        }
        cluster.wait_ok().await;
        Some(cluster)
    }

    async fn spawn_all(&mut self) -> bool {
        for n in &mut self.nodes {
            n.child = spawn_server("redis-server", &node_args(&self.dir, n.port, n.bus), n.port).await;
            if n.child.is_none() {
                return false;
            }
        }
        true
    }

    /// Waits until every node says `cluster_state:ok`.
    async fn wait_ok(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        'nodes: for n in &self.nodes {
            let client = redis::Client::open(format!("redis://127.0.0.1:{}/", n.port)).unwrap();
            while tokio::time::Instant::now() < deadline {
                if let Ok(mut c) = client.get_multiplexed_async_connection().await {
                    let info: String = redis::cmd("CLUSTER").arg("INFO").query_async(&mut c).await.unwrap_or_default();
                    if info.contains("cluster_state:ok") {
                        continue 'nodes;
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("the cluster node on port {} never reached cluster_state:ok", n.port);
        }
    }

    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,…`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// Kills every node.
    pub fn stop(&mut self) {
        for n in &mut self.nodes {
            kill(&mut n.child);
        }
    }

    /// Starts every node again; they find each other from `nodes.conf`.
    pub async fn restart(&mut self) -> bool {
        if !self.spawn_all().await {
            return false;
        }
        self.wait_ok().await;
        true
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A node's arguments: its port, its bus port, its `nodes.conf` in `dir`.
fn node_args(dir: &TempDir, port: u16, bus: u16) -> Vec<String> {
    let (conf, data) = (dir.join(&format!("nodes-{port}.conf")), dir.join(""));
    let args = [
        "--port",
        &port.to_string(),
        "--cluster-port",
        &bus.to_string(),
        "--bind",
        "127.0.0.1",
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        &conf,
        "--cluster-node-timeout",
        "2000",
        "--dir",
        &data,
        "--save",
        "",
        "--appendonly",
        "no",
    ];
    args.map(String::from).to_vec()
}
