//! `providers:`, with the mock's behaviours and each provider's continuation mode.

use super::load::compile_load;
use super::*;

const LISTING_FORMATS: [&str; 9] =
    ["openai", "groq", "openrouter", "anthropic", "gigachat", "ollama", "vllm", "azure", "gemini"];

pub(super) fn compile_provider(
    cx: &mut Ctx,
    name: &str,
    p: RawProvider,
    base_dir: &Path,
    breaker: &BreakerConfig,
) -> Option<ProviderConfig> {
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
        "azure" => ProviderKind::Azure,
        "gemini" => ProviderKind::Gemini,
        "bedrock" => ProviderKind::Bedrock,
        other => {
            cx.err(
                format!("{path}.kind"),
                format!(
                    "unknown kind `{other}`: expected openai, anthropic, gigachat, yandex, azure, gemini, bedrock or mock"
                ),
            );
            return None;
        }
    };
    super::providers_cloud::check_cloud_kind(cx, &path, kind, &p);
    let kind_price = super::providers_cloud::default_price(kind, &p);
    let aws = super::providers_cloud::aws_config(kind, &p);
    let base_url = p.base_url.map(|u| u.trim_end_matches('/').to_string());
    if let Some(u) = &base_url {
        check_url(cx, &format!("{path}.base_url"), u);
    }
    // A well-known provider's name stands for its endpoint.
    let base_url = base_url
        .or_else(|| (kind == ProviderKind::OpenAi).then(|| super::known::base_url(name)).flatten().map(str::to_string));
    match kind {
        ProviderKind::OpenAi if base_url.is_none() => cx.err(
            format!("{path}.base_url"),
            format!("required for kind `openai` (except for a provider named after one of {})", super::known::names()),
        ),
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
        ProviderKind::Mock
            if p.models.as_ref().is_none_or(Vec::is_empty) && p.listing.as_ref().is_none_or(Vec::is_empty) =>
        {
            cx.err(format!("{path}.models"), "a mock provider needs at least one model (in `models` or `listing`)")
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
        // A mock's own listing turns discovery on (format `mock`: read from
        // the config, never fetched); `discovery: { enabled: false }` turns it off.
        Some(d) if kind == ProviderKind::Mock && p.listing.is_some() => {
            d.enabled.unwrap_or(true).then(|| "mock".to_string())
        }
        None if kind == ProviderKind::Mock && p.listing.is_some() => Some("mock".to_string()),
        Some(d) if d.enabled.unwrap_or(true) => {
            let default = match kind {
                ProviderKind::Anthropic => "anthropic",
                ProviderKind::GigaChat => "gigachat",
                ProviderKind::Azure => "azure",
                ProviderKind::Gemini => "gemini",
                _ => "openai",
            };
            let f = d.format.unwrap_or_else(|| default.to_string());
            if !LISTING_FORMATS.contains(&f.as_str()) {
                cx.err(
                    format!("{path}.discovery.format"),
                    format!("unknown format `{f}`: expected one of {}", LISTING_FORMATS.join(", ")),
                );
            }
            if kind == ProviderKind::Mock {
                cx.err(
                    format!("{path}.discovery"),
                    "a mock provider has no listing to fetch: give it a `listing:` instead",
                );
            } else if matches!(kind, ProviderKind::Yandex | ProviderKind::Bedrock) {
                cx.err(format!("{path}.discovery"), format!("kind `{}` has no model listing", kind.as_str()));
            }
            Some(f)
        }
        _ => None,
    };
    let listing = p.listing.map(|l| compile_listing(cx, &path, kind, l));
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
    let price = p.price_per_1m.as_ref().map(|pr| {
        if pr.input < 0.0 || pr.output < 0.0 || pr.input.is_nan() || pr.output.is_nan() {
            cx.err(format!("{path}.price_per_1m"), "prices cannot be negative");
        }
        Price { input: pr.input, output: pr.output }
    });
    let price = price.or(kind_price);
    let breaker = p.breaker.map(|b| super::health::compile_breaker(cx, &format!("{path}.breaker"), &b, breaker));
    let headers = super::compile_headers(cx, &format!("{path}.headers"), p.headers.unwrap_or_default());
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
        native_json: p.native_json.unwrap_or(matches!(
            kind,
            ProviderKind::OpenAi
                | ProviderKind::Anthropic
                | ProviderKind::Mock
                | ProviderKind::Azure
                | ProviderKind::Gemini
                | ProviderKind::Bedrock
        )),
        load,
        continuation: continuation_mode(cx, &format!("{path}.continuation"), p.continuation.as_deref()),
        allow_any_model: p.allow_any_model.unwrap_or(false),
        whole_as_stream: p.whole_as_stream.unwrap_or(true),
        first_token: p.first_token.as_ref().map(|d| {
            let at = format!("{path}.first_token");
            let d = cx.duration(&at, Some(d), Duration::from_secs(15));
            if d.is_zero() {
                cx.err(&at, "must be greater than 0");
            }
            d
        }),
        price,
        breaker,
        listing,
        aws,
    })
}

/// A mock provider's `listing:`: unique ids, prices that are not negative.
fn compile_listing(cx: &mut Ctx, path: &str, kind: ProviderKind, listing: Vec<RawListedModel>) -> Vec<ListedModel> {
    if kind != ProviderKind::Mock {
        cx.err(format!("{path}.listing"), "only mock providers take `listing` (the others are fetched)");
    }
    let mut seen = HashSet::new();
    listing
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let at = format!("{path}.listing[{i}]");
            if m.id.trim().is_empty() {
                cx.err(format!("{at}.id"), "empty model id");
            } else if !seen.insert(m.id.clone()) {
                cx.err(format!("{at}.id"), format!("duplicate model id `{}`", m.id));
            }
            if let Some(pr) = &m.price_per_1m {
                if !(pr.input >= 0.0 && pr.output >= 0.0) {
                    cx.err(format!("{at}.price_per_1m"), "prices cannot be negative");
                }
            }
            ListedModel {
                id: m.id,
                context: m.context,
                price: m.price_per_1m.map(|p| Price { input: p.input, output: p.output }),
                free: m.free.unwrap_or(false),
            }
        })
        .collect()
}

/// `behavior.json`: a mode applies to every answer; shares must add up to
/// at most 1.
pub(super) fn compile_mock_json(cx: &mut Ctx, path: &str, raw: Option<RawMockJson>) -> MockJson {
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

pub(super) fn compile_behavior(cx: &mut Ctx, path: &str, b: RawMockBehavior) -> MockBehavior {
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
    for (field, value) in [
        ("rate_limit_per_min", b.rate_limit_per_min.map(u64::from)),
        ("requests_per_day", b.requests_per_day.map(u64::from)),
        ("tokens_per_day", b.tokens_per_day),
        ("concurrency", b.concurrency.map(u64::from)),
    ] {
        if value == Some(0) {
            cx.err(format!("{path}.{field}"), "must be greater than 0 (leave it out for no limit)");
        }
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
        requests_per_day: b.requests_per_day,
        tokens_per_day: b.tokens_per_day,
        concurrency: b.concurrency,
        empty_rate: cx.share(&format!("{path}.empty_rate"), b.empty_rate, 0.0),
        cut_rate: cx.share(&format!("{path}.cut_rate"), b.cut_rate, 0.0),
        json,
        reply_tokens: b.reply_tokens,
        saturate_at: b.saturate_at,
        reply: b.reply,
        hang: b.hang.unwrap_or(false),
        outages,
        wrong_script_rate: cx.share(&format!("{path}.wrong_script_rate"), b.wrong_script_rate, 0.0),
        near_empty_rate: cx.share(&format!("{path}.near_empty_rate"), b.near_empty_rate, 0.0),
        repeat_rate: cx.share(&format!("{path}.repeat_rate"), b.repeat_rate, 0.0),
        bad_windows: b
            .bad_windows
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, w)| {
                let at = |f: &str| format!("{path}.bad_windows[{i}].{f}");
                (
                    cx.duration(&at("start"), Some(&w.start), Duration::ZERO),
                    cx.duration(&at("duration"), Some(&w.duration), Duration::ZERO),
                )
            })
            .collect(),
    }
}

/// `continuation: prefill | instruct | none`.
pub(super) fn continuation_mode(cx: &mut Ctx, path: &str, v: Option<&str>) -> Option<ContinuationMode> {
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

#[cfg(test)]
mod listing_tests {
    use crate::config::{load_str, ListedModel, Price};

    fn errors(yaml: &str) -> Vec<String> {
        match load_str(yaml, None, &|_| None) {
            Ok(_) => Vec::new(),
            Err(e) => e.0.into_iter().map(|e| format!("{}: {}", e.path, e.message)).collect(),
        }
    }

    #[test]
    fn a_mock_listing_turns_discovery_on_and_keeps_prices_and_free_flags() {
        let yaml = "
providers:
  m:
    kind: mock
    listing:
      - { id: a, context: 8192, price_per_1m: { input: 0.5, output: 1 } }
      - { id: 'b:free', free: true }
cascades:
  chat: { strategy: speed_first, providers: [m] }
";
        let config = load_str(yaml, None, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        let m = &config.providers["m"];
        assert_eq!(m.discovery_format.as_deref(), Some("mock"));
        let listing = m.listing.as_deref().unwrap_or_default();
        assert_eq!(
            listing[0],
            ListedModel {
                id: "a".into(),
                context: Some(8192),
                price: Some(Price { input: 0.5, output: 1.0 }),
                free: false
            }
        );
        assert!(listing[1].free && listing[1].price.is_none());
        let off = yaml.replace("    listing:", "    discovery: { enabled: false }\n    listing:");
        let config = load_str(&off, None, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.providers["m"].discovery_format, None);
    }

    #[test]
    fn listing_errors_carry_their_paths() {
        let errs = errors(
            "
providers:
  real: { kind: openai, base_url: 'http://127.0.0.1:9/v1', listing: [ { id: x } ], models: [ { id: x } ] }
  m:
    kind: mock
    listing: [ { id: a }, { id: a }, { id: b, price_per_1m: { input: -1, output: 0 } } ]
  empty: { kind: mock }
cascades:
  chat: { models: [real/x] }
",
        );
        for expected in [
            "providers.real.listing: only mock providers take `listing`",
            "providers.m.listing[1].id: duplicate model id `a`",
            "providers.m.listing[2].price_per_1m: prices cannot be negative",
            "providers.empty.models: a mock provider needs at least one model",
        ] {
            assert!(errs.iter().any(|e| e.starts_with(expected)), "missing `{expected}` in {errs:#?}");
        }
    }
}
