//! `state.redis_url` read into a topology: one server, a master found
//! through Sentinels, or a Cluster. Pure parsing: `check` and startup
//! reject a malformed URL with its YAML path; the state layer
//! (`state::redis::target`) opens the clients from the parsed form.
//!
//! The URL may hold a password, so nothing here echoes it: errors name
//! the part that is wrong, and [`RedisTopology`]'s `Debug` shows hosts only.

/// Where the shared state lives.
#[derive(Clone, PartialEq, Eq)]
pub enum RedisTopology {
    /// One server: `redis://`, `rediss://`, `valkey://` or `valkeys://`,
    /// passed to the client as written.
    Node(String),
    /// The master a set of Sentinels names:
    /// `redis+sentinel://[user:password@]host:26379,host2:26379/master[/db]`.
    Sentinel {
        /// One `redis://host:port/` URL per Sentinel, without credentials:
        /// those belong to the data nodes (Sentinels rarely have a password,
        /// and one sent to a server without it fails the connection).
        sentinels: Vec<String>,
        /// The name the Sentinels monitor the master under.
        service: String,
        /// A URL carrying the data nodes' credentials and database
        /// (`redis://user:password@host/db`); its host is a placeholder,
        /// the Sentinels say where the master is.
        node: String,
        /// `rediss+sentinel://`: TLS to the Sentinels and the nodes.
        tls: bool,
    },
    /// A Redis Cluster: `redis+cluster://[user:password@]host:7000,host2:7001`;
    /// one full URL per seed node (the client learns the rest).
    Cluster {
        /// `redis://[user:password@]host:port/` per seed node.
        nodes: Vec<String>,
    },
}

impl std::fmt::Debug for RedisTopology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.hosts())
    }
}

/// The schemes of a single server.
const NODE_SCHEMES: [&str; 4] = ["redis://", "rediss://", "valkey://", "valkeys://"];

const EXPECTED: &str = "expected a redis://, rediss://, valkey:// or valkeys:// URL, \
     or a redis+sentinel:// or redis+cluster:// host list";

impl RedisTopology {
    /// Reads `url`; the error says what is wrong without repeating the URL.
    pub fn parse(url: &str) -> Result<Self, String> {
        if NODE_SCHEMES.iter().any(|s| url.starts_with(s)) {
            return Ok(Self::Node(url.to_string()));
        }
        let (scheme, rest) = url.split_once("://").ok_or(EXPECTED)?;
        let (base, kind) = scheme.split_once('+').ok_or(EXPECTED)?;
        let tls = match base {
            "redis" | "valkey" => false,
            "rediss" | "valkeys" => true,
            _ => return Err(EXPECTED.into()),
        };
        let plain = if tls { "rediss" } else { "redis" };
        if rest.contains(['?', '#']) {
            return Err(format!("{scheme}:// URLs take no query or fragment"));
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((u, h)) => (format!("{u}@"), h),
            None => (String::new(), authority),
        };
        match kind {
            "sentinel" => {
                let hosts = host_list(hosts, 26379)?;
                let mut parts = path.split('/');
                let service = parts.next().unwrap_or_default();
                if service.is_empty() {
                    return Err(format!("name the master after the hosts: {scheme}://host:26379,host2:26379/mymaster"));
                }
                let db = parts.next().filter(|d| !d.is_empty()).unwrap_or("0");
                if db.parse::<u16>().is_err() || parts.next().is_some() {
                    return Err("after the master's name only a database number may follow (`/mymaster/0`)".into());
                }
                Ok(Self::Sentinel {
                    sentinels: hosts.iter().map(|h| format!("{plain}://{h}/")).collect(),
                    service: service.to_string(),
                    node: format!("{plain}://{userinfo}{}/{db}", hosts[0]),
                    tls,
                })
            }
            "cluster" => {
                if !(path.is_empty() || path == "0") {
                    return Err("a cluster has only database 0: end the host list with `/` or nothing".into());
                }
                let hosts = host_list(hosts, 6379)?;
                Ok(Self::Cluster { nodes: hosts.iter().map(|h| format!("{plain}://{userinfo}{h}/")).collect() })
            }
            _ => Err(EXPECTED.into()),
        }
    }

    /// The hosts, for logs and the admin view (never the credentials).
    pub fn hosts(&self) -> String {
        let host_of = |url: &str| {
            let rest = url.split_once("://").map_or(url, |(_, r)| r);
            let authority = rest.split('/').next().unwrap_or_default();
            authority.rsplit_once('@').map_or(authority, |(_, h)| h).to_string()
        };
        match self {
            Self::Node(url) => host_of(url),
            Self::Sentinel { sentinels, service, .. } => {
                let list: Vec<String> = sentinels.iter().map(|s| host_of(s)).collect();
                format!("sentinel {service} via {}", list.join(","))
            }
            Self::Cluster { nodes } => {
                let list: Vec<String> = nodes.iter().map(|s| host_of(s)).collect();
                format!("cluster {}", list.join(","))
            }
        }
    }
}

/// `host[:port],host[:port]…` with the default port filled in.
fn host_list(text: &str, default_port: u16) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (i, entry) in text.split(',').enumerate() {
        // `[::1]:26379`: the port follows the closing bracket.
        let (host, port) = match entry.rsplit_once(':') {
            Some((h, p)) if !p.contains(']') => (h, Some(p)),
            _ => (entry, None),
        };
        if host.is_empty() || host.contains(['/', '@', ' ']) {
            return Err(format!("host {} of the list is empty or malformed", i + 1));
        }
        let port = match port {
            Some(p) => p.parse::<u16>().map_err(|_| format!("host {} of the list has a malformed port", i + 1))?,
            None => default_port,
        };
        out.push(format!("{host}:{port}"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_server_passes_through() {
        for url in ["redis://:pw@h:6379/2", "rediss://h", "valkey://h:1", "valkeys://h"] {
            assert_eq!(RedisTopology::parse(url), Ok(RedisTopology::Node(url.to_string())));
        }
        assert!(RedisTopology::parse("http://h").is_err());
        assert_eq!(format!("{:?}", RedisTopology::parse("redis://u:s3cret@h:6380/0").unwrap()), "h:6380");
    }

    #[test]
    fn a_sentinel_set_names_its_master() {
        let t = RedisTopology::parse("redis+sentinel://u:s3cret@a:26380,b,[::1]:26382/mymaster/3").unwrap();
        assert_eq!(
            t,
            RedisTopology::Sentinel {
                sentinels: vec!["redis://a:26380/".into(), "redis://b:26379/".into(), "redis://[::1]:26382/".into()],
                service: "mymaster".into(),
                node: "redis://u:s3cret@a:26380/3".into(),
                tls: false,
            }
        );
        assert_eq!(format!("{t:?}"), "sentinel mymaster via a:26380,b:26379,[::1]:26382");
        let v = RedisTopology::parse("valkeys+sentinel://h/m").unwrap();
        assert!(matches!(v, RedisTopology::Sentinel { tls: true, .. }));
        for bad in
            ["redis+sentinel://h:26379", "redis+sentinel://h:26379/", "redis+sentinel://h:x/m", "redis+sentinel://,h/m"]
        {
            assert!(RedisTopology::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cluster_lists_its_seed_nodes() {
        let t = RedisTopology::parse("redis+cluster://:pw@h:7000,h:7001,h").unwrap();
        assert_eq!(
            t,
            RedisTopology::Cluster {
                nodes: vec!["redis://:pw@h:7000/".into(), "redis://:pw@h:7001/".into(), "redis://:pw@h:6379/".into()]
            }
        );
        assert_eq!(format!("{t:?}"), "cluster h:7000,h:7001,h:6379");
        assert!(RedisTopology::parse("redis+cluster://h:7000/1").is_err());
        assert!(RedisTopology::parse("redis+cluster://h:7000?x=1").is_err());
        assert!(RedisTopology::parse("redis+shard://h").is_err());
    }

    #[test]
    fn a_malformed_url_is_a_config_error_at_its_path() {
        let yaml = "state:\n  backend: redis\n  redis_url: redis+sentinel://:s3cret@h:26379\n\
                    providers:\n  m:\n    kind: mock\ncascades:\n  c:\n    models: [m/x]\n";
        let Err(errors) = crate::config::load_str(yaml, None, &|_| None) else { panic!("accepted") };
        let text = errors.to_string();
        assert!(text.contains("state.redis_url: name the master"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
        let ok = yaml.replace("h:26379", "h:26379,h2/mymaster");
        let other = crate::config::load_str(&ok, None, &|_| None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(!other.contains("state.redis_url"), "{other}");
    }

    #[test]
    fn errors_never_repeat_the_password() {
        for bad in ["redis+sentinel://u:s3cret@h", "redis+cluster://u:s3cret@h:x", "mongo://u:s3cret@h"] {
            let e = RedisTopology::parse(bad).unwrap_err();
            assert!(!e.contains("s3cret"), "{e}");
        }
    }
}
