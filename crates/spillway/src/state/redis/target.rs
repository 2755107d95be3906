//! Reaching Redis the way `state.redis_url` says ([`RedisTopology`]): one
//! server, the master a Sentinel set names, or a Cluster. Both users of
//! Redis — the state store's link ([`super::link`]) and the handoff queue
//! — connect through a [`Target`]: it hands out a command connection
//! ([`Conn`], on which scripts and pipelines run alike whatever the
//! topology), a pub/sub connection for the link, and the address they
//! reach, so a failover shows in the logs.
//!
//! Failover: a connection to a Sentinel-named master does not follow a
//! failover (the old master, once back, is a replica and answers writes
//! with `READONLY`). So callers make a new connection after a failure, and
//! [`Target::connect`] asks the Sentinels afresh each time. A Cluster
//! connection follows slot moves and promoted replicas by itself.
//!
//! Cluster layout: every key of one deployment carries one hash tag, the
//! key prefix in braces (`{spillway:}dead`), so each Lua script, MULTI and
//! MGET stays on one slot (else the cluster answers `CROSSSLOT`).
//! Spillway's shared state is small: one slot costs nothing, and the
//! cluster buys availability, not room. Changes are published with classic
//! PUBLISH, which a cluster broadcasts to every node, so the link
//! subscribes on any one seed node, the next one after a failure.

use crate::config::RedisTopology;
use ::redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig, PubSub};
use ::redis::cluster::ClusterClientBuilder;
use ::redis::cluster_async::ClusterConnection;
use ::redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use ::redis::{Client, Cmd, IntoConnectionInfo, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long connecting and answering may take, and how often a command
/// connection retries by itself before its caller hears of a failure.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// One connection attempt (and, times three, asking the Sentinels).
    pub connect: Duration,
    /// One command's answer.
    pub response: Duration,
    /// Reconnects per failed command; callers that reconnect themselves keep it low.
    pub retries: usize,
}

/// Where Redis is and how to reach it; no I/O until a connect.
pub struct Target {
    how: How,
    hosts: String,
}

enum How {
    Node(Client),
    /// Boxed: the Sentinel client is large, and there is one target per store.
    Sentinel(Box<Sentinels>),
    Cluster {
        /// Seed node URLs (with credentials), for the cluster client.
        urls: Vec<String>,
        /// The same nodes one by one, for the change subscription.
        seeds: Vec<Client>,
        /// The seed the next subscription tries first.
        next: AtomicUsize,
    },
}

/// How a master is found and checked behind Sentinels.
struct Sentinels {
    /// Behind a lock: the client caches its Sentinel connections and asks
    /// them one at a time.
    client: tokio::sync::Mutex<SentinelClient>,
    /// What the probe asks which master the Sentinels name now.
    watch: SentinelWatch,
}

/// A connection to one Sentinel, kept for the probe's question (which
/// master the Sentinels name), made again on any failure.
struct SentinelWatch {
    sentinels: Vec<Client>,
    service: String,
    conn: tokio::sync::Mutex<Option<::redis::aio::MultiplexedConnection>>,
}

/// How long the probe's question to a Sentinel may take: the answer is a
/// hint, and a slow Sentinel must not make a working master look down.
const SENTINEL_HINT_TIMEOUT: Duration = Duration::from_millis(250);

impl SentinelWatch {
    /// `ip:port` of the master the first Sentinel that answers names; `None`
    /// when none answers in time.
    async fn named_master(&self) -> Option<String> {
        let mut slot = self.conn.lock().await;
        if slot.is_none() {
            for s in &self.sentinels {
                if let Ok(Ok(c)) =
                    tokio::time::timeout(SENTINEL_HINT_TIMEOUT, s.get_multiplexed_async_connection()).await
                {
                    *slot = Some(c);
                    break;
                }
            }
        }
        let conn = slot.as_mut()?;
        let ask = ::redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg(&self.service).clone();
        match tokio::time::timeout(SENTINEL_HINT_TIMEOUT, ask.query_async::<Option<(String, u16)>>(conn)).await {
            Ok(Ok(Some((ip, port)))) => Some(format!("{ip}:{port}")),
            _ => {
                *slot = None;
                None
            }
        }
    }
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.hosts)
    }
}

/// A command connection of any topology.
#[derive(Clone)]
pub enum Conn {
    /// One server or a Sentinel-named master (reconnects to that address).
    Node(ConnectionManager),
    /// A cluster (routes by slot, follows topology changes).
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Node(c) => c.req_packed_command(cmd),
            Self::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Node(c) => c.req_packed_commands(cmd, offset, count),
            Self::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Node(c) => c.get_db(),
            Self::Cluster(c) => c.get_db(),
        }
    }
}

/// What the link holds while connected.
pub struct Linked {
    /// Commands.
    pub conn: Conn,
    /// The change subscription (not subscribed yet).
    pub pubsub: PubSub,
    /// The server reached, `host:port` (for a cluster, its seed hosts).
    pub node: String,
}

/// `host:port` of a client, for logs (never the URL: it may hold a password).
pub fn address_of(client: &Client) -> String {
    match &client.get_connection_info().addr {
        ::redis::ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
        ::redis::ConnectionAddr::TcpTls { host, port, .. } => format!("{host}:{port} (tls)"),
        ::redis::ConnectionAddr::Unix(path) => path.display().to_string(),
    }
}

/// Whether `prefix` already holds a hash tag (a non-empty `{…}`).
fn has_hash_tag(prefix: &str) -> bool {
    prefix.find('{').is_some_and(|open| prefix[open + 1..].find('}').is_some_and(|len| len > 0))
}

impl Target {
    /// A target for `url` (any form [`RedisTopology`] reads). Fails only on
    /// a malformed URL; the error never holds it.
    pub fn open(url: &str) -> RedisResult<Self> {
        let topology = RedisTopology::parse(url)
            .map_err(|e| RedisError::from((::redis::ErrorKind::InvalidClientConfig, "malformed URL", e)))?;
        let hosts = topology.hosts();
        let how = match topology {
            RedisTopology::Node(url) => How::Node(Client::open(url)?),
            RedisTopology::Sentinel { sentinels, service, node, tls } => {
                let node = SentinelNodeConnectionInfo {
                    tls_mode: tls.then_some(::redis::TlsMode::Secure),
                    redis_connection_info: Some(node.into_connection_info()?.redis),
                };
                let watch = SentinelWatch {
                    sentinels: sentinels.iter().map(|u| Client::open(u.as_str())).collect::<RedisResult<_>>()?,
                    service: service.clone(),
                    conn: tokio::sync::Mutex::new(None),
                };
                let client = SentinelClient::build(sentinels, service, Some(node), SentinelServerType::Master)?;
                How::Sentinel(Box::new(Sentinels { client: tokio::sync::Mutex::new(client), watch }))
            }
            RedisTopology::Cluster { nodes } => How::Cluster {
                seeds: nodes.iter().map(|u| Client::open(u.as_str())).collect::<RedisResult<_>>()?,
                urls: nodes,
                next: AtomicUsize::new(0),
            },
        };
        Ok(Self { how, hosts })
    }

    /// What the URL names, for logs: `host:port`, `sentinel NAME via …`, `cluster …`.
    pub fn hosts(&self) -> &str {
        &self.hosts
    }

    /// The prefix keys are written under: on a cluster, `prefix` in braces
    /// (one hash tag, one slot) unless it holds a tag already; elsewhere
    /// `prefix` as configured, so existing deployments keep their keys.
    pub fn key_prefix(&self, prefix: &str) -> String {
        match self.how {
            How::Cluster { .. } if !has_hash_tag(prefix) => format!("{{{prefix}}}"),
            _ => prefix.to_string(),
        }
    }

    /// The one server to talk to: the configured one, or the master the
    /// Sentinels name now (`None` for a cluster).
    async fn node(&self, limits: Limits) -> RedisResult<Option<Client>> {
        match &self.how {
            How::Node(client) => Ok(Some(client.clone())),
            How::Sentinel(s) => {
                let ask = async { s.client.lock().await.async_get_client().await };
                match tokio::time::timeout(limits.connect * 3, ask).await {
                    Ok(client) => client.map(Some),
                    Err(_) => Err(RedisError::from((::redis::ErrorKind::IoError, "no Sentinel answered in time"))),
                }
            }
            How::Cluster { .. } => Ok(None),
        }
    }

    async fn manager(client: Client, limits: Limits) -> RedisResult<ConnectionManager> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(limits.connect)
            .set_response_timeout(limits.response)
            .set_number_of_retries(limits.retries)
            .set_max_delay(200);
        ConnectionManager::new_with_config(client, config).await
    }

    async fn cluster(urls: &[String], limits: Limits) -> RedisResult<ClusterConnection> {
        ClusterClientBuilder::new(urls.to_vec())
            .connection_timeout(limits.connect)
            .response_timeout(limits.response)
            .retries(u32::try_from(limits.retries).unwrap_or(u32::MAX))
            .min_retry_wait(10)
            .max_retry_wait(200)
            .build()?
            .get_async_connection()
            .await
    }

    /// Checks that `conn` (to `node`) still reaches what the store writes
    /// to: on a cluster, the node serving `key`'s slot (a PING would ask
    /// every master and pass while the one that matters is down); behind
    /// Sentinels, the master they name now — a planned failover promotes
    /// another while the old one stays up and a master for seconds more,
    /// and a connection that only reads would never hear of it; elsewhere,
    /// that the server answers.
    pub async fn probe(&self, conn: &mut Conn, key: &str, node: &str) -> RedisResult<()> {
        if !matches!(self.how, How::Sentinel(_)) {
            return ::redis::cmd("EXISTS").arg(key).query_async::<i64>(conn).await.map(drop);
        }
        if self.names_another_master(node).await {
            return Err(RedisError::from((::redis::ErrorKind::ReadOnly, "the Sentinels name another master now")));
        }
        let role: Value = ::redis::cmd("ROLE").query_async(conn).await?;
        let master = match &role {
            Value::Array(items) => match items.first() {
                Some(Value::BulkString(b)) => b.as_slice() == b"master",
                Some(Value::SimpleString(s)) => s == "master",
                _ => false,
            },
            _ => false,
        };
        if master {
            Ok(())
        } else {
            Err(RedisError::from((::redis::ErrorKind::ReadOnly, "the server is a replica now (a failover)")))
        }
    }

    /// A command connection to the server that serves writes now, and its
    /// address (for a cluster, the hosts).
    pub async fn connect(&self, limits: Limits) -> RedisResult<(Conn, String)> {
        match (&self.how, self.node(limits).await?) {
            (How::Cluster { urls, .. }, _) => {
                Ok((Conn::Cluster(Self::cluster(urls, limits).await?), self.hosts.clone()))
            }
            (_, Some(client)) => {
                let node = address_of(&client);
                Ok((Conn::Node(Self::manager(client, limits).await?), node))
            }
            (_, None) => Err(RedisError::from((::redis::ErrorKind::ClientError, "no server to connect to"))),
        }
    }

    /// Whether the Sentinels name a master other than `node` now (a
    /// failover): a connection to `node` should be made again. `false` for
    /// other topologies, and when no Sentinel answers in time.
    pub async fn names_another_master(&self, node: &str) -> bool {
        match &self.how {
            How::Sentinel(s) => {
                s.watch.named_master().await.is_some_and(|named| named != node.trim_end_matches(" (tls)"))
            }
            _ => false,
        }
    }

    /// A command connection and a pub/sub connection, to the same server
    /// where there is one (the Sentinels are asked once for both).
    pub async fn link(&self, limits: Limits) -> RedisResult<Linked> {
        match &self.how {
            How::Cluster { urls, seeds, next } => {
                let conn = Conn::Cluster(Self::cluster(urls, limits).await?);
                let first = next.load(Ordering::Relaxed);
                let mut last = None;
                for i in 0..seeds.len() {
                    let seed = &seeds[(first + i) % seeds.len()];
                    match tokio::time::timeout(limits.connect, seed.get_async_pubsub()).await {
                        Ok(Ok(pubsub)) => {
                            // After a failure the next subscription starts with the next seed.
                            next.store(first + i + 1, Ordering::Relaxed);
                            // The cluster's own failovers are its business:
                            // the node reached is the cluster, not the seed.
                            return Ok(Linked { conn, pubsub, node: self.hosts.clone() });
                        }
                        Ok(Err(e)) => last = Some(e),
                        Err(_) => last = Some(RedisError::from((::redis::ErrorKind::IoError, "connection timed out"))),
                    }
                }
                Err(last.unwrap_or_else(|| RedisError::from((::redis::ErrorKind::ClientError, "no seed nodes"))))
            }
            _ => {
                let Some(client) = self.node(limits).await? else {
                    return Err(RedisError::from((::redis::ErrorKind::ClientError, "no server to connect to")));
                };
                let pubsub = match tokio::time::timeout(limits.connect, client.get_async_pubsub()).await {
                    Ok(p) => p?,
                    Err(_) => return Err(RedisError::from((::redis::ErrorKind::IoError, "connection timed out"))),
                };
                let node = address_of(&client);
                Ok(Linked { conn: Conn::Node(Self::manager(client, limits).await?), pubsub, node })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_keeps_every_key_of_a_deployment_in_one_slot() {
        let cluster = Target::open("redis+cluster://u:pw@127.0.0.1:7000,127.0.0.1:7001").unwrap();
        assert_eq!(cluster.key_prefix("spillway:"), "{spillway:}");
        assert_eq!(cluster.key_prefix("{gw}:"), "{gw}:", "a tag of the operator's own is kept");
        assert_eq!(cluster.key_prefix("a{}b:"), "{a{}b:}", "an empty tag is no tag");
        assert_eq!(cluster.hosts(), "cluster 127.0.0.1:7000,127.0.0.1:7001");
        let node = Target::open("redis://u:pw@127.0.0.1:6379/0").unwrap();
        assert_eq!(node.key_prefix("spillway:"), "spillway:", "single servers keep their layout");
        let sentinel = Target::open("redis+sentinel://:pw@127.0.0.1:26379/mymaster").unwrap();
        assert_eq!(sentinel.key_prefix("spillway:"), "spillway:");
        assert!(!format!("{sentinel:?}{node:?}{cluster:?}").contains("pw"));
    }
}
