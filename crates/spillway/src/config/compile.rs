//! The semantic half of config compilation: every rule SPEC §4 states,
//! checked in one pass that collects all errors with their YAML paths.
//!
//! Pure: no network, no clients. The one file access is checking that
//! referenced files (`ca_file`, prompt templates) exist, so a typo fails
//! `spillway check` instead of the first request.

use super::raw::*;
use super::units::{parse_duration, parse_size};
use super::*;
use std::collections::HashSet;

/// Collects errors while compiling.
struct Ctx {
    errors: Vec<ConfigError>,
}

impl Ctx {
    fn err(&mut self, path: impl AsRef<str>, msg: impl Into<String>) {
        self.errors.push(ConfigError::new(path.as_ref(), msg));
    }

    fn duration(&mut self, path: &str, value: Option<&String>, default: Duration) -> Duration {
        match value {
            None => default,
            Some(v) => parse_duration(v).unwrap_or_else(|e| {
                self.err(path, e);
                default
            }),
        }
    }

    fn share(&mut self, path: &str, value: Option<f64>, default: f64) -> f64 {
        match value {
            Some(v) if !(0.0..=1.0).contains(&v) || v.is_nan() => {
                self.err(path, format!("expected a share between 0 and 1, got {v}"));
                default
            }
            Some(v) => v,
            None => default,
        }
    }
}

/// Compiles shape-checked raw config (plus the shape errors already found).
pub fn compile(input: (RawConfig, Vec<ConfigError>), source: Option<&Path>) -> Result<Config, ConfigErrors> {
    let (raw, shape_errors) = input;
    let mut cx = Ctx { errors: shape_errors };
    let base_dir = source.and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();

    let server = compile_server(&mut cx, raw.server.unwrap_or_default());
    let state = compile_state(&mut cx, raw.state.unwrap_or_default());
    let mut providers = IndexMap::new();
    for (name, p) in raw.providers {
        if let Some(p) = compile_provider(&mut cx, &name, p, &base_dir) {
            providers.insert(name, p);
        }
    }
    if providers.is_empty() {
        cx.err("providers", "at least one provider is required");
    }
    let health = compile_health(&mut cx, raw.health.unwrap_or_default());
    let d = raw.discovery.unwrap_or_default();
    let discovery = DiscoveryConfig {
        interval: cx.duration("discovery.interval", d.interval.as_ref(), Duration::from_secs(12 * 3600)),
        cache_ttl: cx.duration("discovery.cache_ttl", d.cache_ttl.as_ref(), Duration::from_secs(24 * 3600)),
    };
    let mut cascades = IndexMap::new();
    for (name, c) in raw.cascades {
        if let Some(c) = compile_cascade(&mut cx, &name, c, &providers) {
            cascades.insert(name, c);
        }
    }
    if cascades.is_empty() {
        cx.err("cascades", "at least one cascade is required");
    }
    for c in cascades.values().filter(|c| c.kind == CascadeKind::Embedding) {
        check_embedding_cascade(&mut cx, c, &providers);
    }
    let prompts = raw.prompts.into_iter().enumerate().map(|(i, p)| compile_prompt(&mut cx, i, p, &base_dir)).collect();
    let mut escalation = Vec::new();
    for (i, e) in raw.escalation.into_iter().enumerate() {
        let path = format!("escalation[{i}]");
        for (field, name) in [("from", &e.from), ("to", &e.to)] {
            match cascades.get(name.as_str()) {
                None => cx.err(format!("{path}.{field}"), format!("unknown cascade `{name}`")),
                Some(c) if c.kind != CascadeKind::Chat => cx.err(
                    format!("{path}.{field}"),
                    format!("`{name}` is an embedding cascade: escalation is for chat"),
                ),
                Some(_) => {}
            }
        }
        if e.when != "frustrated" {
            cx.err(format!("{path}.when"), format!("unknown condition `{}`: expected `frustrated`", e.when));
        }
        escalation.push(EscalationRule { from: e.from, to: e.to });
    }
    let alerts = compile_alerts(&mut cx, raw.alerts.unwrap_or_default());
    let h = raw.handoff.unwrap_or_default();
    let handoff = HandoffConfig {
        reply: h.reply.unwrap_or_else(|| {
            "Your request has been passed to an operator. You will get an answer shortly.".to_string()
        }),
        webhook: h.webhook.map(|u| {
            check_url(&mut cx, "handoff.webhook", &u);
            Secret::new(u)
        }),
        retention: cx.duration("handoff.retention", h.retention.as_ref(), Duration::from_secs(30 * 86_400)),
    };

    if cx.errors.is_empty() {
        Ok(Config {
            source: source.map(Path::to_path_buf),
            server,
            state,
            providers,
            health,
            discovery,
            cascades,
            prompts,
            escalation,
            alerts,
            handoff,
        })
    } else {
        Err(ConfigErrors(cx.errors))
    }
}

fn check_url(cx: &mut Ctx, path: &str, url: &str) {
    if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 10 {
        cx.err(path, format!("expected an http:// or https:// URL, got `{url}`"));
    }
}

fn compile_server(cx: &mut Ctx, s: RawServer) -> ServerConfig {
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
        shutdown_grace: cx.duration("server.shutdown_grace", s.shutdown_grace.as_ref(), Duration::from_secs(30)),
    }
}

fn compile_state(cx: &mut Ctx, s: RawState) -> StateConfig {
    let backend = match s.backend.as_deref() {
        None | Some("memory") => StateBackend::Memory,
        Some("redis") => StateBackend::Redis,
        Some(other) => {
            cx.err("state.backend", format!("unknown backend `{other}`: expected `memory` or `redis`"));
            StateBackend::Memory
        }
    };
    if let Some(url) = &s.redis_url {
        if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
            // The URL may hold a password: never echo it.
            cx.err("state.redis_url", "expected a redis:// or rediss:// URL");
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

const LISTING_FORMATS: [&str; 7] = ["openai", "groq", "openrouter", "anthropic", "gigachat", "ollama", "vllm"];

fn compile_provider(cx: &mut Ctx, name: &str, p: RawProvider, base_dir: &Path) -> Option<ProviderConfig> {
    let path = format!("providers.{name}");
    if name.is_empty() || name.contains('/') {
        cx.err(&path, "a provider name must be non-empty and contain no `/`");
    }
    let kind = match p.kind.as_str() {
        "openai" => ProviderKind::OpenAi,
        "anthropic" => ProviderKind::Anthropic,
        "gigachat" => ProviderKind::GigaChat,
        "yandex" => ProviderKind::Yandex,
        "mock" => ProviderKind::Mock,
        other => {
            cx.err(
                format!("{path}.kind"),
                format!("unknown kind `{other}`: expected openai, anthropic, gigachat, yandex or mock"),
            );
            return None;
        }
    };
    let base_url = p.base_url.map(|u| u.trim_end_matches('/').to_string());
    if let Some(u) = &base_url {
        check_url(cx, &format!("{path}.base_url"), u);
    }
    match kind {
        ProviderKind::OpenAi if base_url.is_none() => cx.err(format!("{path}.base_url"), "required for kind `openai`"),
        ProviderKind::GigaChat if p.auth_key.is_none() => {
            cx.err(format!("{path}.auth_key"), "required for kind `gigachat`")
        }
        ProviderKind::Yandex if p.folder_id.is_none() => {
            cx.err(format!("{path}.folder_id"), "required for kind `yandex`")
        }
        ProviderKind::Yandex if p.api_key.is_none() && p.iam_token.is_none() => {
            cx.err(format!("{path}.api_key"), "kind `yandex` needs `api_key` or `iam_token`")
        }
        ProviderKind::Anthropic if p.api_key.is_none() => {
            cx.err(format!("{path}.api_key"), "required for kind `anthropic`")
        }
        ProviderKind::Mock if p.models.as_ref().is_none_or(Vec::is_empty) => {
            cx.err(format!("{path}.models"), "a mock provider needs at least one model")
        }
        _ => {}
    }
    if let Some(u) = &p.auth_url {
        check_url(cx, &format!("{path}.auth_url"), u);
    }
    let ca_file = p.ca_file.map(|f| {
        let file = base_dir.join(&f);
        if !file.is_file() {
            cx.err(format!("{path}.ca_file"), format!("file not found: {}", file.display()));
        }
        file
    });
    let discovery_format = match p.discovery {
        Some(d) if d.enabled.unwrap_or(true) => {
            let default = match kind {
                ProviderKind::Anthropic => "anthropic",
                ProviderKind::GigaChat => "gigachat",
                _ => "openai",
            };
            let f = d.format.unwrap_or_else(|| default.to_string());
            if !LISTING_FORMATS.contains(&f.as_str()) {
                cx.err(
                    format!("{path}.discovery.format"),
                    format!("unknown format `{f}`: expected one of {}", LISTING_FORMATS.join(", ")),
                );
            }
            if matches!(kind, ProviderKind::Mock | ProviderKind::Yandex) {
                cx.err(format!("{path}.discovery"), format!("kind `{}` has no model listing", kind.as_str()));
            }
            Some(f)
        }
        _ => None,
    };
    if p.max_in_flight == Some(0) {
        cx.err(format!("{path}.max_in_flight"), "must be greater than 0 (leave it out for no limit)");
    }
    if p.default_max_tokens == Some(0) {
        cx.err(format!("{path}.default_max_tokens"), "must be greater than 0");
    }
    let mut models = Vec::new();
    let mut seen = HashSet::new();
    for (i, m) in p.models.unwrap_or_default().into_iter().enumerate() {
        let mpath = format!("{path}.models[{i}]");
        if m.id.trim().is_empty() {
            cx.err(format!("{mpath}.id"), "empty model id");
        }
        if !seen.insert(m.id.clone()) {
            cx.err(format!("{mpath}.id"), format!("duplicate model id `{}`", m.id));
        }
        if m.dimensions == Some(0) {
            cx.err(format!("{mpath}.dimensions"), "must be greater than 0");
        }
        if let Some(pr) = &m.price_per_1m {
            if pr.input < 0.0 || pr.output < 0.0 || pr.input.is_nan() || pr.output.is_nan() {
                cx.err(format!("{mpath}.price_per_1m"), "prices cannot be negative");
            }
        }
        let behavior = match (m.behavior, kind) {
            (Some(b), ProviderKind::Mock) => Some(compile_behavior(cx, &format!("{mpath}.behavior"), b)),
            (Some(_), _) => {
                cx.err(format!("{mpath}.behavior"), "only mock providers take `behavior`");
                None
            }
            (None, ProviderKind::Mock) => Some(MockBehavior { error_status: 503, ..MockBehavior::default() }),
            (None, _) => None,
        };
        let continuation = continuation_mode(cx, &format!("{mpath}.continuation"), m.continuation.as_deref());
        models.push(StaticModel {
            id: m.id,
            context: m.context,
            price: m.price_per_1m.map(|p| Price { input: p.input, output: p.output }),
            quality: m.quality,
            dimensions: m.dimensions,
            behavior,
            continuation,
        });
    }
    let load = p.load.map(|l| compile_load(cx, &format!("{path}.load"), l));
    let mut headers = Vec::new();
    for (k, v) in p.headers.unwrap_or_default() {
        if http::HeaderName::from_bytes(k.as_bytes()).is_err() {
            cx.err(format!("{path}.headers.{k}"), "invalid header name");
        } else if http::HeaderValue::from_str(&v).is_err() {
            cx.err(format!("{path}.headers.{k}"), "invalid header value");
        }
        headers.push((k, Secret::new(v)));
    }
    Some(ProviderConfig {
        name: name.to_string(),
        kind,
        base_url,
        api_key: p.api_key.map(Secret::new),
        headers,
        max_in_flight: p.max_in_flight,
        discovery_format,
        auth_key: p.auth_key.map(Secret::new),
        scope: p.scope,
        auth_url: p.auth_url,
        ca_file,
        folder_id: p.folder_id,
        iam_token: p.iam_token.map(Secret::new),
        api_version: p.api_version,
        models,
        default_max_tokens: p.default_max_tokens,
        skip_when_lazy: p.skip_when_lazy.unwrap_or(false),
        native_json: p
            .native_json
            .unwrap_or(matches!(kind, ProviderKind::OpenAi | ProviderKind::Anthropic | ProviderKind::Mock)),
        load,
        continuation: continuation_mode(cx, &format!("{path}.continuation"), p.continuation.as_deref()),
        allow_any_model: p.allow_any_model.unwrap_or(false),
    })
}

/// `behavior.json`: a mode applies to every answer; shares must add up to
/// at most 1.
fn compile_mock_json(cx: &mut Ctx, path: &str, raw: Option<RawMockJson>) -> MockJson {
    match raw {
        None => MockJson::default(),
        Some(RawMockJson::Mode(mode)) => match mode.as_str() {
            "plain" => MockJson::default(),
            "fenced" => MockJson { fenced: 1.0, ..MockJson::default() },
            "renamed" => MockJson { renamed: 1.0, ..MockJson::default() },
            "broken" => MockJson { broken: 1.0, ..MockJson::default() },
            other => {
                cx.err(
                    path,
                    format!("unknown mode `{other}`: expected plain, fenced, renamed, broken or a map of shares"),
                );
                MockJson::default()
            }
        },
        Some(RawMockJson::Shares(s)) => {
            let json = MockJson {
                fenced: cx.share(&format!("{path}.fenced"), s.fenced, 0.0),
                renamed: cx.share(&format!("{path}.renamed"), s.renamed, 0.0),
                broken: cx.share(&format!("{path}.broken"), s.broken, 0.0),
            };
            let total = json.fenced + json.renamed + json.broken;
            if total > 1.0 + 1e-9 {
                cx.err(path, format!("the shares add up to {total}, more than 1"));
            }
            json
        }
    }
}

fn compile_behavior(cx: &mut Ctx, path: &str, b: RawMockBehavior) -> MockBehavior {
    let json = compile_mock_json(cx, &format!("{path}.json"), b.json);
    for (field, value) in [("reply_tokens", b.reply_tokens), ("saturate_at", b.saturate_at)] {
        if value == Some(0) {
            cx.err(format!("{path}.{field}"), "must be greater than 0 (leave it out for the default)");
        }
    }
    let error_status = b.error_status.unwrap_or(503);
    if !(100..=599).contains(&error_status) {
        cx.err(format!("{path}.error_status"), format!("not an HTTP status: {error_status}"));
    }
    if let Some(t) = b.tokens_per_s {
        if t < 0.0 || t.is_nan() {
            cx.err(format!("{path}.tokens_per_s"), "cannot be negative");
        }
    }
    if b.rate_limit_per_min == Some(0) {
        cx.err(format!("{path}.rate_limit_per_min"), "must be greater than 0 (leave it out for no limit)");
    }
    let outages = b
        .outages
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, o)| Outage {
            start: cx.duration(&format!("{path}.outages[{i}].start"), Some(&o.start), Duration::ZERO),
            duration: cx.duration(&format!("{path}.outages[{i}].duration"), Some(&o.duration), Duration::ZERO),
            status: o.status.unwrap_or(502),
        })
        .collect();
    MockBehavior {
        latency: cx.duration(&format!("{path}.latency"), b.latency.as_ref(), Duration::ZERO),
        first_token: cx.duration(&format!("{path}.first_token"), b.first_token.as_ref(), Duration::ZERO),
        tokens_per_s: b.tokens_per_s.unwrap_or(0.0),
        error_rate: cx.share(&format!("{path}.error_rate"), b.error_rate, 0.0),
        error_status,
        rate_limit_per_min: b.rate_limit_per_min,
        empty_rate: cx.share(&format!("{path}.empty_rate"), b.empty_rate, 0.0),
        cut_rate: cx.share(&format!("{path}.cut_rate"), b.cut_rate, 0.0),
        json,
        reply_tokens: b.reply_tokens,
        saturate_at: b.saturate_at,
        reply: b.reply,
        hang: b.hang.unwrap_or(false),
        outages,
    }
}

fn compile_load(cx: &mut Ctx, path: &str, l: RawLoad) -> LoadConfig {
    let capacity = |cx: &mut Ctx| match l.capacity {
        Some(c) if c > 0.0 => c,
        _ => {
            cx.err(format!("{path}.capacity"), format!("source `{}` needs a positive `capacity`", l.source));
            1.0
        }
    };
    let source = match l.source.as_str() {
        "vllm_metrics" => match &l.url {
            Some(u) => {
                check_url(cx, &format!("{path}.url"), u);
                LoadSource::VllmMetrics { url: u.clone() }
            }
            None => {
                cx.err(format!("{path}.url"), "source `vllm_metrics` needs `url`");
                LoadSource::Emulated
            }
        },
        "nvml" => LoadSource::Nvml { devices: l.devices.clone().unwrap_or_else(|| vec![0]) },
        "inflight" => LoadSource::Inflight { capacity: capacity(cx) },
        "token_velocity" => LoadSource::TokenVelocity { capacity: capacity(cx) },
        "emulated" => LoadSource::Emulated,
        other => {
            cx.err(
                format!("{path}.source"),
                format!("unknown source `{other}`: expected vllm_metrics, nvml, inflight, token_velocity or emulated"),
            );
            LoadSource::Emulated
        }
    };
    if l.profiles.is_empty() {
        cx.err(format!("{path}.profiles"), "at least one profile is required");
    }
    let last = l.profiles.len().saturating_sub(1);
    let mut previous = f64::NEG_INFINITY;
    let mut profiles = Vec::new();
    for (i, p) in l.profiles.into_iter().enumerate() {
        let ppath = format!("{path}.profiles[{i}]");
        match (p.below, i == last) {
            (Some(_), true) => {
                cx.err(format!("{ppath}.below"), "the last profile takes no `below` (it applies above all others)")
            }
            (None, false) => cx.err(format!("{ppath}.below"), "required on every profile but the last"),
            (Some(b), false) => {
                if !(0.0..=1.0).contains(&b) {
                    cx.err(format!("{ppath}.below"), format!("expected a load between 0 and 1, got {b}"));
                } else if b <= previous {
                    cx.err(format!("{ppath}.below"), "thresholds must increase from one profile to the next");
                }
                previous = b;
            }
            (None, true) => {}
        }
        if let Some(f) = p.max_tokens_factor {
            if !(f > 0.0 && f <= 1.0) {
                cx.err(format!("{ppath}.max_tokens_factor"), format!("expected a factor in (0, 1], got {f}"));
            }
        }
        profiles.push(LoadProfile {
            name: p.name,
            below: p.below,
            system_prompt: p.system_prompt,
            max_tokens_factor: p.max_tokens_factor,
        });
    }
    let hysteresis = l.hysteresis.unwrap_or(0.03);
    if !(0.0..0.5).contains(&hysteresis) {
        cx.err(format!("{path}.hysteresis"), format!("expected a margin between 0 and 0.5, got {hysteresis}"));
    }
    LoadConfig {
        source,
        interval: cx.duration(&format!("{path}.interval"), l.interval.as_ref(), Duration::from_secs(1)),
        profiles,
        hysteresis,
    }
}

fn compile_health(cx: &mut Ctx, h: RawHealth) -> HealthConfig {
    let b = h.breaker.unwrap_or_default();
    let r = h.retries.unwrap_or_default();
    let t = h.timeouts.unwrap_or_default();
    let breaker = BreakerConfig {
        window: cx.duration("health.breaker.window", b.window.as_ref(), Duration::from_secs(60)),
        consecutive_failures: b.consecutive_failures.unwrap_or(5),
        failure_rate: cx.share("health.breaker.failure_rate", b.failure_rate, 0.30),
        min_requests: b.min_requests.unwrap_or(10),
        open_for: cx.duration("health.breaker.open_for", b.open_for.as_ref(), Duration::from_secs(120)),
        open_min: cx.duration("health.breaker.open_min", b.open_min.as_ref(), Duration::from_secs(10)),
    };
    if breaker.consecutive_failures == 0 {
        cx.err("health.breaker.consecutive_failures", "must be greater than 0");
    }
    let timeouts = TimeoutConfig {
        connect: cx.duration("health.timeouts.connect", t.connect.as_ref(), Duration::from_secs(2)),
        first_token: cx.duration("health.timeouts.first_token", t.first_token.as_ref(), Duration::from_secs(15)),
        idle: cx.duration("health.timeouts.idle", t.idle.as_ref(), Duration::from_secs(30)),
        total: cx.duration("health.timeouts.total", t.total.as_ref(), Duration::from_secs(120)),
    };
    for (name, d) in [
        ("connect", timeouts.connect),
        ("first_token", timeouts.first_token),
        ("idle", timeouts.idle),
        ("total", timeouts.total),
    ] {
        if d.is_zero() {
            cx.err(format!("health.timeouts.{name}"), "must be greater than 0");
        }
    }
    HealthConfig {
        dead_ttl: cx.duration("health.dead_ttl", h.dead_ttl.as_ref(), Duration::from_secs(3600)),
        breaker,
        retries: RetryConfig {
            max: r.max.unwrap_or(1),
            backoff: cx.duration("health.retries.backoff", r.backoff.as_ref(), Duration::from_millis(50)),
            jitter: cx.share("health.retries.jitter", r.jitter, 0.5),
        },
        timeouts,
    }
}

fn model_ref(cx: &mut Ctx, path: &str, text: &str, providers: &IndexMap<String, ProviderConfig>) -> Option<ModelRef> {
    let Some(r) = ModelRef::parse(text) else {
        cx.err(path, format!("expected a model ref `provider/model-id`, got `{text}`"));
        return None;
    };
    match providers.get(&r.provider) {
        None => {
            cx.err(path, format!("unknown provider `{}` in `{text}`", r.provider));
            None
        }
        Some(p) if p.kind == ProviderKind::Mock && !p.models.iter().any(|m| m.id == r.model) => {
            cx.err(path, format!("mock provider `{}` has no model `{}`", r.provider, r.model));
            None
        }
        Some(_) => Some(r),
    }
}

fn compile_cascade(
    cx: &mut Ctx,
    name: &str,
    c: RawCascade,
    providers: &IndexMap<String, ProviderConfig>,
) -> Option<CascadeConfig> {
    let path = format!("cascades.{name}");
    if name == "auto" || name.contains('/') {
        cx.err(&path, "a cascade cannot be named `auto` or contain `/` (those select other things)");
    }
    let kind = match c.kind.as_deref() {
        None | Some("chat") => CascadeKind::Chat,
        Some("embedding") => {
            if c.models.is_none() {
                cx.err(
                    format!("{path}.models"),
                    "an embedding cascade needs `models` (listings do not say which models embed)",
                );
            }
            for (key, present) in [("handoff", c.handoff == Some(true)), ("hedge_after", c.hedge_after.is_some())] {
                if present {
                    cx.err(format!("{path}.{key}"), "not available for an embedding cascade");
                }
            }
            CascadeKind::Embedding
        }
        Some(other) => {
            cx.err(format!("{path}.kind"), format!("unknown kind `{other}`: expected chat or embedding"));
            CascadeKind::Chat
        }
    };
    let discovery_keys = [
        ("strategy", c.strategy.is_some()),
        ("providers", c.providers.is_some()),
        ("preferred", c.preferred.is_some()),
        ("filters", c.filters.is_some()),
        ("min_other_providers", c.min_other_providers.is_some()),
        ("size", c.size.is_some()),
    ];
    let source = if let Some(models) = c.models {
        for (key, present) in discovery_keys {
            if present {
                cx.err(
                    format!("{path}.{key}"),
                    "a cascade has either `models` (a fixed chain) or discovery settings, not both",
                );
            }
        }
        if models.is_empty() {
            cx.err(format!("{path}.models"), "a fixed chain needs at least one model");
        }
        let refs = models
            .iter()
            .enumerate()
            .filter_map(|(i, m)| model_ref(cx, &format!("{path}.models[{i}]"), m, providers))
            .collect();
        CascadeSource::Fixed(refs)
    } else {
        let strategy = match c.strategy.as_deref() {
            None | Some("speed_first") => Strategy::SpeedFirst,
            Some("quality_first") => Strategy::QualityFirst,
            Some("cheapest_first") => Strategy::CheapestFirst,
            Some(other) => {
                cx.err(
                    format!("{path}.strategy"),
                    format!("unknown strategy `{other}`: expected speed_first, quality_first or cheapest_first"),
                );
                Strategy::SpeedFirst
            }
        };
        let preferred: Vec<ModelRef> = c
            .preferred
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter_map(|(i, m)| model_ref(cx, &format!("{path}.preferred[{i}]"), m, providers))
            .collect();
        let source_providers = c.providers.unwrap_or_default();
        for (i, p) in source_providers.iter().enumerate() {
            if !providers.contains_key(p) {
                cx.err(format!("{path}.providers[{i}]"), format!("unknown provider `{p}`"));
            }
        }
        if source_providers.is_empty() && preferred.is_empty() {
            cx.err(&path, "a cascade needs `models`, or discovery settings with `providers` or `preferred`");
        }
        let f = c.filters.unwrap_or_default();
        if let Some(m) = f.max_cost_per_1m {
            if m < 0.0 || m.is_nan() {
                cx.err(format!("{path}.filters.max_cost_per_1m"), "cannot be negative");
            }
        }
        let size = c.size.unwrap_or(10);
        if size == 0 {
            cx.err(format!("{path}.size"), "must be greater than 0");
        }
        CascadeSource::Discovered(DiscoverySpec {
            strategy,
            providers: source_providers,
            preferred,
            filters: Filters {
                min_context: f.min_context,
                max_cost_per_1m: f.max_cost_per_1m,
                free_only: f.free_only.unwrap_or(false),
                exclude_patterns: f.exclude_patterns.unwrap_or_default(),
            },
            min_other_providers: c.min_other_providers.unwrap_or(0),
            size,
        })
    };
    let last_resort = c.last_resort.as_ref().and_then(|m| model_ref(cx, &format!("{path}.last_resort"), m, providers));
    let hedge_after =
        c.hedge_after.as_ref().map(|h| cx.duration(&format!("{path}.hedge_after"), Some(h), Duration::from_secs(2)));
    let daily_budget_usd = c.budget.map(|b| {
        if b.daily_usd < 0.0 || b.daily_usd.is_nan() {
            cx.err(format!("{path}.budget.daily_usd"), "cannot be negative");
        }
        b.daily_usd
    });
    Some(CascadeConfig {
        name: name.to_string(),
        kind,
        source,
        last_resort,
        handoff: c.handoff.unwrap_or(false),
        hedge_after,
        daily_budget_usd,
        continue_streams: c.continue_streams.unwrap_or(true),
    })
}

/// `continuation: prefill | instruct | none`.
fn continuation_mode(cx: &mut Ctx, path: &str, v: Option<&str>) -> Option<ContinuationMode> {
    match v? {
        "prefill" => Some(ContinuationMode::Prefill),
        "instruct" => Some(ContinuationMode::Instruct),
        "none" => Some(ContinuationMode::None),
        other => {
            cx.err(path, format!("unknown continuation `{other}`: expected prefill, instruct or none"));
            None
        }
    }
}

/// An embedding cascade's models: each of a kind with an embeddings call,
/// and all of one dimension where the config names it — a fallback to a
/// model of another dimension would hand the client vectors it cannot
/// compare with the ones it stored.
fn check_embedding_cascade(cx: &mut Ctx, c: &CascadeConfig, providers: &IndexMap<String, ProviderConfig>) {
    let path = format!("cascades.{}", c.name);
    let CascadeSource::Fixed(models) = &c.source else { return };
    let mut refs: Vec<(String, &ModelRef)> =
        models.iter().enumerate().map(|(i, m)| (format!("{path}.models[{i}]"), m)).collect();
    if let Some(last) = &c.last_resort {
        refs.push((format!("{path}.last_resort"), last));
    }
    let mut first: Option<(u32, &ModelRef)> = None;
    for (at, r) in refs {
        let Some(p) = providers.get(&r.provider) else { continue };
        let dims = p.models.iter().find(|m| m.id == r.model).and_then(|m| m.dimensions);
        match p.kind {
            ProviderKind::OpenAi => {}
            ProviderKind::Mock if dims.is_none() => {
                cx.err(&at, format!("mock model `{r}` needs `dimensions` to serve embeddings"));
            }
            ProviderKind::Mock => {}
            other => {
                cx.err(
                    &at,
                    format!("kind `{}` has no embeddings API in Spillway (use openai or mock)", other.as_str()),
                );
            }
        }
        match (dims, first) {
            (Some(d), Some((f, fr))) if d != f => cx.err(
                &at,
                format!("`{r}` has dimension {d} but `{fr}` has {f}: an embedding cascade falls back only across models of one dimension"),
            ),
            (Some(d), None) => first = Some((d, r)),
            _ => {}
        }
    }
}

fn compile_prompt(cx: &mut Ctx, i: usize, p: RawPrompt, base_dir: &Path) -> PromptRule {
    let path = format!("prompts[{i}]");
    if p.match_.trim().is_empty() {
        cx.err(format!("{path}.match"), "empty pattern");
    }
    if p.system_prefix.is_none() && p.template.is_none() {
        cx.err(&path, "a prompt variant needs `system_prefix` or `template`");
    }
    let output = match p.output.as_deref() {
        None | Some("text") => TemplateOutput::Text,
        Some("messages") => TemplateOutput::Messages,
        Some(other) => {
            cx.err(format!("{path}.output"), format!("unknown output `{other}`: expected `text` or `messages`"));
            TemplateOutput::Text
        }
    };
    if p.output.is_some() && p.template.is_none() {
        cx.err(format!("{path}.output"), "`output` applies to a `template`, and this variant has none");
    }
    let mut template_source = None;
    let template = p.template.map(|t| {
        let file = base_dir.join(&t);
        match std::fs::read_to_string(&file) {
            Ok(source) => match super::template::check_template(&source, output) {
                Ok(()) => template_source = Some(source),
                Err(e) => cx.err(format!("{path}.template"), format!("template {}: {e}", file.display())),
            },
            Err(_) => cx.err(format!("{path}.template"), format!("file not found: {}", file.display())),
        }
        file
    });
    PromptRule {
        pattern: p.match_,
        version: p.version,
        system_prefix: p.system_prefix,
        template,
        template_source,
        template_name: None,
        output,
    }
}

fn compile_alerts(cx: &mut Ctx, a: RawAlerts) -> AlertsConfig {
    let telegram = a.telegram.map(|t| {
        let base = t.api_base.unwrap_or_else(|| "https://api.telegram.org".to_string());
        check_url(cx, "alerts.telegram.api_base", &base);
        (Secret::new(t.bot_token), t.chat_id, base.trim_end_matches('/').to_string())
    });
    let webhook = a.webhook.map(|w| {
        check_url(cx, "alerts.webhook.url", &w.url);
        Secret::new(w.url)
    });
    let fallback_share = a.fallback_share.map(|f| {
        let share = cx.share("alerts.fallback_share.above", Some(f.above), 0.2);
        (share, cx.duration("alerts.fallback_share.for", Some(&f.for_), Duration::from_secs(600)))
    });
    AlertsConfig {
        telegram,
        webhook,
        fallback_share,
        repeat_after: cx.duration("alerts.repeat_after", a.repeat_after.as_ref(), Duration::from_secs(1800)),
    }
}
