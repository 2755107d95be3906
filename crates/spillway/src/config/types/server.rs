//! `server:` and `state:` as compiled.

use crate::secret::Secret;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// `server:`
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Listen address.
    pub listen: SocketAddr,
    /// Accepted client keys (empty: no client auth).
    pub api_keys: Vec<Secret>,
    /// Admin token (none: admin API disabled).
    pub admin_token: Option<Secret>,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Requests in flight before 503.
    pub max_concurrent_requests: usize,
    /// Deadline for a client's request headers.
    pub header_read_timeout: Duration,
    /// Deadline for a client's request body (a slow body never holds a
    /// concurrency slot: it is read first).
    pub body_read_timeout: Duration,
    /// How long a client may accept no bytes of an answer being written
    /// before its connection is closed.
    pub client_write_timeout: Duration,
    /// Grace period for in-flight requests at shutdown.
    pub shutdown_grace: Duration,
    /// Serving threads (`spillway serve`).
    pub workers: usize,
    /// Cross-origin requests (none: off).
    pub cors: Option<CorsConfig>,
    /// How often the config file's content is checked for a change to
    /// reload (zero: never).
    pub watch_config: Duration,
    /// After SIGTERM, how long to keep accepting with `/readyz` at 503
    /// before the listener closes and `shutdown_grace` starts.
    pub drain_delay: Duration,
    /// Serving a non-loopback address without client keys was asked for.
    pub allow_unauthenticated: bool,
    /// `admin_token` was made at start (loopback only): `serve` prints it
    /// and keeps it in `state.data_dir` for `spillway status`.
    pub generate_admin_token: bool,
}

/// `server.cors`, compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorsConfig {
    /// Allowed origins, exactly as browsers send them; empty with `any`.
    pub allow_origins: Vec<String>,
    /// `"*"` was listed: any origin.
    pub any_origin: bool,
    /// `Access-Control-Allow-Headers`, lower case, comma-separated.
    pub allow_headers: String,
    /// Prefixes of `name-*` entries: a requested header that starts with
    /// one is allowed too (named back in the preflight's answer).
    pub allow_header_prefixes: Vec<String>,
    /// `Access-Control-Max-Age`.
    pub max_age: Duration,
}

/// Where shared state lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateBackend {
    /// In-process only.
    Memory,
    /// Shared through Redis.
    Redis,
}

/// `state:`
#[derive(Debug, Clone)]
pub struct StateConfig {
    /// Backend.
    pub backend: StateBackend,
    /// Redis URL (may hold a password).
    pub redis_url: Option<Secret>,
    /// Prefix of every Redis key.
    pub key_prefix: String,
    /// Embedded durable store directory.
    pub data_dir: PathBuf,
}
