//! `server:` (with its CORS rules) and `state:`.

use super::RawSize;
use schemars::JsonSchema;
use serde::Deserialize;

/// `server:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    /// Address to listen on, `host:port` (default `127.0.0.1:8080`); the
    /// host an IP address or a name (`localhost:4000`, resolved once).
    pub listen: Option<String>,
    /// Client keys; when set, clients must send `Authorization: Bearer <key>`.
    pub api_keys: Option<Vec<String>>,
    /// Token for `/admin` and `/ui`; when unset those are disabled (404).
    pub admin_token: Option<String>,
    /// Largest accepted request body (default `4MiB`); larger gets 413.
    pub max_body_bytes: Option<RawSize>,
    /// Requests served at once (default 10000); above it clients get 503 with `Retry-After`.
    pub max_concurrent_requests: Option<u64>,
    /// How long a client may take to send its request headers (default `10s`).
    pub header_read_timeout: Option<String>,
    /// How long a client may take to send its request body (default `10s`);
    /// slower gets 408. The body is read before a concurrency slot is taken.
    pub body_read_timeout: Option<String>,
    /// How long a client may accept no bytes of an answer being written
    /// (default `30s`); then its connection is closed and a stream it was
    /// reading ends, releasing its concurrency slot and upstream call.
    /// `health.timeouts.total` ends a stream whose client reads too
    /// slowly even when some bytes keep getting through.
    pub client_write_timeout: Option<String>,
    /// How long in-flight requests may run after SIGTERM/SIGINT (default `30s`).
    pub shutdown_grace: Option<String>,
    /// Threads serving requests, each with its own event loop and upstream
    /// connections (default: one per CPU).
    pub workers: Option<u64>,
    /// Cross-origin requests from browsers (off when absent): which
    /// origins may call the API, and the preflight's answers.
    pub cors: Option<RawCors>,
    /// How often the config file is checked, and reloaded when its content
    /// changed (a Kubernetes ConfigMap update swaps the file); default `5s`,
    /// `0s` turns it off (SIGHUP and `POST /admin/config/reload` still work).
    pub watch_config: Option<String>,
    /// After SIGTERM, how long `/readyz` answers 503 while new connections
    /// are still accepted, so a load balancer stops sending before the
    /// listener closes (default `0s`; a few seconds behind a Kubernetes Service).
    pub drain_delay: Option<String>,
    /// Serve a non-loopback `listen` address without `api_keys` (default
    /// false: such a config is refused, since anyone who reaches the
    /// gateway could spend the providers' keys).
    pub allow_unauthenticated: Option<bool>,
    /// Make an admin token at each start, print it and keep it in
    /// `state.data_dir/admin-token` for `spillway status` (default false;
    /// loopback `listen` only; not with `admin_token`). The demo uses it.
    pub generate_admin_token: Option<bool>,
}

/// `server.cors:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCors {
    /// Origins allowed to call the API (`https://app.example.com`), or `"*"` for any.
    pub allow_origins: Vec<String>,
    /// Request headers a browser may send (default: what the official
    /// browser SDKs send — `authorization`, `content-type`, `accept`,
    /// `user-agent`, `x-api-key`, `x-request-id`, `x-spillway-escalate`,
    /// `openai-organization`, `openai-project`, `openai-beta`,
    /// `anthropic-version`, `anthropic-beta`,
    /// `anthropic-dangerous-direct-browser-access`, `api-key`,
    /// `x-goog-api-key` and every `x-stainless-*`); a `prefix-*` entry
    /// allows every header that starts with `prefix-`; `"*"` for any.
    pub allow_headers: Option<Vec<String>>,
    /// How long a browser may cache a preflight's answer (default `10m`).
    pub max_age: Option<String>,
}

/// `state:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawState {
    /// `memory` (one instance) or `redis` (several instances share everything).
    pub backend: Option<String>,
    /// `redis://` or `rediss://` URL, with user and password if needed; a Sentinel set
    /// (`redis+sentinel://host:26379,host2:26379/mymaster`) or a Cluster
    /// (`redis+cluster://host:7000,host2:7001`); `valkey` works for `redis` throughout.
    pub redis_url: Option<String>,
    /// Prefix of every Redis key (default `spillway:`).
    pub key_prefix: Option<String>,
    /// Directory of the embedded durable store (default `./spillway-data`).
    pub data_dir: Option<String>,
}
