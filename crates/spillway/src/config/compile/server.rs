//! `server:` and `state:`.

use super::*;

pub(super) fn compile_server(cx: &mut Ctx, s: RawServer) -> ServerConfig {
    let listen_text = s.listen.unwrap_or_else(|| "127.0.0.1:8080".to_string());
    let listen = listen_text.parse().unwrap_or_else(|_| {
        cx.err("server.listen", format!("expected host:port such as 127.0.0.1:8080, got `{listen_text}`"));
        SocketAddr::from(([127, 0, 0, 1], 8080))
    });
    let mut api_keys = Vec::new();
    for (i, k) in s.api_keys.unwrap_or_default().into_iter().enumerate() {
        if k.trim().is_empty() {
            cx.err(format!("server.api_keys[{i}]"), "empty key (is its variable set to an empty value?)");
        } else {
            api_keys.push(Secret::new(k));
        }
    }
    let admin_token = match s.admin_token {
        Some(t) if t.trim().is_empty() => {
            cx.err("server.admin_token", "empty token (leave it out to disable the admin API)");
            None
        }
        Some(t) => Some(Secret::new(t)),
        None => None,
    };
    let default_body = 4 * 1024 * 1024;
    let max_body_bytes = match s.max_body_bytes {
        None => default_body,
        Some(RawSize::Bytes(0)) => {
            cx.err("server.max_body_bytes", "must be greater than 0");
            default_body
        }
        Some(RawSize::Bytes(b)) => b,
        Some(RawSize::Text(t)) => match parse_size(&t) {
            Ok(0) => {
                cx.err("server.max_body_bytes", "must be greater than 0");
                default_body
            }
            Ok(b) => b,
            Err(e) => {
                cx.err("server.max_body_bytes", e);
                default_body
            }
        },
    };
    let max_concurrent_requests = s.max_concurrent_requests.unwrap_or(10_000);
    if max_concurrent_requests == 0 {
        cx.err("server.max_concurrent_requests", "must be greater than 0");
    }
    let workers = match s.workers {
        Some(0) => {
            cx.err("server.workers", "must be greater than 0");
            1
        }
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX).min(1024),
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    ServerConfig {
        listen,
        workers,
        api_keys,
        admin_token,
        max_body_bytes: usize::try_from(max_body_bytes).unwrap_or(usize::MAX),
        max_concurrent_requests: usize::try_from(max_concurrent_requests).unwrap_or(usize::MAX),
        header_read_timeout: cx.duration(
            "server.header_read_timeout",
            s.header_read_timeout.as_ref(),
            Duration::from_secs(10),
        ),
        body_read_timeout: cx.duration(
            "server.body_read_timeout",
            s.body_read_timeout.as_ref(),
            Duration::from_secs(10),
        ),
        client_write_timeout: client_write_timeout(cx, s.client_write_timeout.as_ref()),
        shutdown_grace: cx.duration("server.shutdown_grace", s.shutdown_grace.as_ref(), Duration::from_secs(30)),
        cors: s.cors.map(|c| compile_cors(cx, c)),
        watch_config: cx.duration("server.watch_config", s.watch_config.as_ref(), Duration::from_secs(5)),
        drain_delay: cx.duration("server.drain_delay", s.drain_delay.as_ref(), Duration::ZERO),
    }
}

fn client_write_timeout(cx: &mut Ctx, value: Option<&String>) -> Duration {
    let path = "server.client_write_timeout";
    let d = cx.duration(path, value, Duration::from_secs(30));
    if d.is_zero() {
        cx.err(path, "must be greater than 0");
        return Duration::from_secs(30);
    }
    d
}

/// The request headers browsers may send when `allow_headers` is not given.
pub(crate) const CORS_DEFAULT_HEADERS: &str = "authorization, content-type, x-api-key, x-request-id, \
anthropic-version, anthropic-dangerous-direct-browser-access, openai-beta, x-spillway-escalate";

fn compile_cors(cx: &mut Ctx, c: RawCors) -> CorsConfig {
    if c.allow_origins.is_empty() {
        cx.err("server.cors.allow_origins", "list at least one origin (or leave `cors` out to keep it off)");
    }
    let mut allow_origins = Vec::new();
    let mut any_origin = false;
    for (i, o) in c.allow_origins.into_iter().enumerate() {
        let o = o.trim().trim_end_matches('/').to_string();
        if o == "*" {
            any_origin = true;
        } else if !o
            .strip_prefix("https://")
            .or_else(|| o.strip_prefix("http://"))
            .is_some_and(|host| !host.is_empty() && !host.contains('/'))
        {
            cx.err(
                format!("server.cors.allow_origins[{i}]"),
                format!("expected an origin such as https://app.example.com (scheme and host, no path), or \"*\"; got `{o}`"),
            );
        } else {
            allow_origins.push(o);
        }
    }
    let allow_headers = match c.allow_headers {
        None => CORS_DEFAULT_HEADERS.to_string(),
        Some(list) => {
            for (i, h) in list.iter().enumerate() {
                if h != "*" && http::HeaderName::from_bytes(h.as_bytes()).is_err() {
                    cx.err(format!("server.cors.allow_headers[{i}]"), format!("`{h}` is not a header name"));
                }
            }
            list.iter().map(|h| h.to_ascii_lowercase()).collect::<Vec<_>>().join(", ")
        }
    };
    let max_age = cx.duration("server.cors.max_age", c.max_age.as_ref(), Duration::from_secs(600));
    CorsConfig { allow_origins, any_origin, allow_headers, max_age }
}

pub(super) fn compile_state(cx: &mut Ctx, s: RawState) -> StateConfig {
    let backend = match s.backend.as_deref() {
        None | Some("memory") => StateBackend::Memory,
        Some("redis") => StateBackend::Redis,
        Some(other) => {
            cx.err("state.backend", format!("unknown backend `{other}`: expected `memory` or `redis`"));
            StateBackend::Memory
        }
    };
    if let Some(url) = &s.redis_url {
        // The URL may hold a password: the error never echoes it.
        if let Err(e) = crate::config::RedisTopology::parse(url) {
            cx.err("state.redis_url", e);
        }
    }
    if backend == StateBackend::Redis && s.redis_url.is_none() {
        cx.err("state.redis_url", "required with `backend: redis`");
    }
    StateConfig {
        backend,
        redis_url: s.redis_url.map(Secret::new),
        key_prefix: s.key_prefix.unwrap_or_else(|| "spillway:".to_string()),
        data_dir: PathBuf::from(s.data_dir.unwrap_or_else(|| "./spillway-data".to_string())),
    }
}
