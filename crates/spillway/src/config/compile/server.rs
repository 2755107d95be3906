//! `server:` and `state:`.

use super::*;

pub(super) fn compile_server(cx: &mut Ctx, s: RawServer, has_virtual_keys: bool) -> ServerConfig {
    let listen_text = s.listen.unwrap_or_else(|| "127.0.0.1:8080".to_string());
    let listen = super::listen::parse_listen(&listen_text).unwrap_or_else(|e| {
        cx.err("server.listen", e);
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
    let generate_admin_token = s.generate_admin_token.unwrap_or(false);
    let admin_token = match s.admin_token {
        Some(t) if t.trim().is_empty() => {
            cx.err("server.admin_token", "empty token (leave it out to disable the admin API)");
            None
        }
        Some(_) if generate_admin_token => {
            cx.err("server.generate_admin_token", "set either `admin_token` or `generate_admin_token`, not both");
            None
        }
        Some(t) => Some(Secret::new(t)),
        None if generate_admin_token => {
            if !listen.ip().is_loopback() {
                cx.err(
                    "server.generate_admin_token",
                    format!("only on a loopback address (`{listen}` is not): set `admin_token` instead"),
                );
            }
            Some(Secret::new(super::listen::generated_admin_token()))
        }
        None => None,
    };
    let allow_unauthenticated = s.allow_unauthenticated.unwrap_or(false);
    if let Some(e) =
        super::listen::exposed_without_keys(listen, !api_keys.is_empty() || has_virtual_keys, allow_unauthenticated)
    {
        cx.err("server.listen", e);
    }
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
        allow_unauthenticated,
        generate_admin_token,
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

/// The request headers browsers may send when `allow_headers` is not given:
/// what the official browser-capable SDKs send (openai-node and the
/// Anthropic TypeScript SDK with `dangerouslyAllowBrowser`, the AI SDK),
/// the gateway's own, and every `x-stainless-*` header (a family the
/// Stainless-made SDKs keep adding to).
pub(crate) const CORS_DEFAULT_HEADERS: &str = "authorization, content-type, accept, user-agent, x-api-key, \
x-request-id, x-spillway-escalate, x-spillway-user, openai-organization, openai-project, openai-beta, anthropic-version, \
anthropic-beta, anthropic-dangerous-direct-browser-access, api-key, x-goog-api-key, x-stainless-lang, \
x-stainless-package-version, x-stainless-os, x-stainless-arch, x-stainless-runtime, \
x-stainless-runtime-version, x-stainless-retry-count, x-stainless-timeout, x-stainless-read-timeout, \
x-stainless-async, x-stainless-helper, x-stainless-helper-method, x-stainless-poll-helper, \
x-stainless-custom-poll-interval, x-stainless-*";

/// Splits a header list into the names sent as they are and the
/// prefixes of `name-*` entries (any requested header that starts with
/// one is allowed too).
fn header_patterns(list: &[&str]) -> (String, Vec<String>) {
    let (prefixes, names): (Vec<&str>, Vec<&str>) = list.iter().partition(|h| h.len() > 1 && h.ends_with('*'));
    let prefixes = prefixes.iter().map(|p| p.trim_end_matches('*').to_string()).collect();
    (names.join(", "), prefixes)
}

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
    let list: Vec<String> = match c.allow_headers {
        None => CORS_DEFAULT_HEADERS.split(", ").map(str::to_string).collect(),
        Some(list) => {
            for (i, h) in list.iter().enumerate() {
                let name = h.strip_suffix('*').filter(|p| !p.is_empty()).unwrap_or(h);
                if h != "*" && (name.contains('*') || http::HeaderName::from_bytes(name.as_bytes()).is_err()) {
                    cx.err(
                        format!("server.cors.allow_headers[{i}]"),
                        format!("`{h}` is not a header name (or a prefix such as `x-stainless-*`)"),
                    );
                }
            }
            list.iter().map(|h| h.to_ascii_lowercase()).collect()
        }
    };
    let (allow_headers, allow_header_prefixes) = header_patterns(&list.iter().map(String::as_str).collect::<Vec<_>>());
    let max_age = cx.duration("server.cors.max_age", c.max_age.as_ref(), Duration::from_secs(600));
    CorsConfig { allow_origins, any_origin, allow_headers, allow_header_prefixes, max_age }
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
