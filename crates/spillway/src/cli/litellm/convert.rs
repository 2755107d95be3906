//! A LiteLLM proxy config read into what a Spillway config says: providers
//! (one per LiteLLM provider prefix, `api_base` and key), cascades (one per
//! `model_name` group, its deployments in order, then its `fallbacks`),
//! and the settings that have a Spillway equivalent — with a line for
//! everything that has none. Pure: [`super::emit`] writes the YAML.

use serde_yaml_ng::{Mapping, Value};

/// A provider of the imported config.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    pub name: String,
    /// `openai` or `anthropic`.
    pub kind: &'static str,
    /// None: the kind's or the name's default.
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// Static models.
    pub models: Vec<Model>,
    pub allow_any_model: bool,
}

/// A static model: id, context, prices per 1M (input, output).
pub type Model = (String, Option<u64>, Option<(f64, f64)>);

/// A cascade of the imported config.
#[derive(Debug, Clone, PartialEq)]
pub struct Cascade {
    pub name: String,
    pub embedding: bool,
    pub models: Vec<String>,
}

/// Everything the config says, in Spillway's terms.
#[derive(Debug, Default)]
pub struct Plan {
    pub providers: Vec<Provider>,
    pub cascades: Vec<Cascade>,
    /// `server.api_keys` (from `general_settings.master_key`).
    pub api_keys: Vec<String>,
    pub max_concurrent_requests: Option<u64>,
    pub redis_url: Option<String>,
    /// `health.retries.max`.
    pub retries: Option<u64>,
    /// `health.timeouts.total`, in seconds.
    pub total_timeout_s: Option<f64>,
    /// `health.breaker`: failures before it opens, and its `open_min` in seconds.
    pub breaker: (Option<u64>, Option<f64>),
    /// What could not be carried over, one line each.
    pub left_out: Vec<String>,
}

/// LiteLLM provider prefixes that are an OpenAI-compatible API whose
/// endpoint Spillway knows by name (`config/compile/known.rs`).
const KNOWN_PREFIXES: [(&str, &str); 16] = [
    ("groq", "groq"),
    ("openrouter", "openrouter"),
    ("mistral", "mistral"),
    ("deepseek", "deepseek"),
    ("together_ai", "together"),
    ("fireworks_ai", "fireworks"),
    ("gemini", "gemini"),
    ("xai", "xai"),
    ("perplexity", "perplexity"),
    ("cerebras", "cerebras"),
    ("deepinfra", "deepinfra"),
    ("nvidia_nim", "nvidia"),
    ("sambanova", "sambanova"),
    ("openai", "openai"),
    ("text-completion-openai", "openai"),
    ("custom_openai", "openai"),
];

fn get<'a>(m: &'a Value, key: &str) -> Option<&'a Value> {
    m.as_mapping().and_then(|m| m.get(key)).filter(|v| !v.is_null())
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// LiteLLM's `os.environ/NAME` as Spillway's `${NAME}`; other values as they are.
pub fn secret(value: &str) -> String {
    match value.strip_prefix("os.environ/") {
        Some(name) => format!("${{{name}}}"),
        None => value.to_string(),
    }
}

/// A provider name from an `api_base`'s host (`http://vllm:8000/v1` → `vllm`).
fn host_name(url: &str) -> String {
    let host = url.split("://").nth(1).unwrap_or(url).split(['/', ':']).next().unwrap_or_default();
    let first = host.split('.').next().unwrap_or_default();
    let clean: String =
        first.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    let numeric = host.chars().all(|c| c.is_ascii_digit() || c == '.');
    if clean.is_empty() || numeric || clean == "localhost" {
        "local".into()
    } else {
        clean
    }
}

/// The provider a deployment's `litellm_params` call for, and the model id
/// on it; `Err` says why it has no Spillway equivalent.
fn provider_of(params: &Value) -> Result<(Provider, String), String> {
    let model = text(get(params, "model")).ok_or("no `litellm_params.model`")?;
    let (prefix, id) = model.split_once('/').unwrap_or(("openai", model.as_str()));
    let api_base = text(get(params, "api_base")).map(|u| u.trim_end_matches('/').to_string());
    let api_key = text(get(params, "api_key")).filter(|k| !k.is_empty() && k != "none").map(|k| secret(&k));
    let new = |name: String, kind, base_url| Provider {
        name,
        kind,
        base_url,
        api_key: api_key.clone(),
        models: Vec::new(),
        allow_any_model: false,
    };
    let provider = match prefix {
        "anthropic" => new("anthropic".into(), "anthropic", api_base),
        "ollama" | "ollama_chat" => {
            let base = api_base.unwrap_or_else(|| "http://127.0.0.1:11434".into());
            new("ollama".into(), "openai", Some(format!("{}/v1", base.trim_end_matches("/v1"))))
        }
        "hosted_vllm" | "vllm" => {
            let base = api_base.ok_or_else(|| format!("`{prefix}/…` without `api_base`"))?;
            new("vllm".into(), "openai", Some(base))
        }
        "openai_like" | "lm_studio" | "llamafile" => {
            let base = api_base.ok_or_else(|| format!("`{prefix}/…` without `api_base`"))?;
            new(host_name(&base), "openai", Some(base))
        }
        _ => match KNOWN_PREFIXES.iter().find(|(p, _)| *p == prefix) {
            // A custom `api_base` names the provider by its host.
            Some((_, _)) if api_base.is_some() && prefix.contains("openai") => {
                let base = api_base.unwrap_or_default();
                new(host_name(&base), "openai", Some(base))
            }
            Some((_, name)) => new((*name).into(), "openai", api_base),
            None => return Err(format!("the `{prefix}` provider has no Spillway kind here; add it by hand")),
        },
    };
    Ok((provider, id.to_string()))
}

/// Reads a LiteLLM proxy config.
pub fn read(text_in: &str) -> Result<Plan, String> {
    let root: Value = serde_yaml_ng::from_str(text_in).map_err(|e| format!("not valid YAML: {e}"))?;
    let mut plan = Plan::default();
    let list = get(&root, "model_list").and_then(Value::as_sequence).ok_or("no `model_list`")?;
    for (i, entry) in list.iter().enumerate() {
        deployment(&mut plan, i, entry);
    }
    let router = get(&root, "router_settings").cloned().unwrap_or(Value::Mapping(Mapping::new()));
    let settings = get(&root, "litellm_settings").cloned().unwrap_or(Value::Mapping(Mapping::new()));
    let either = |k: &str| get(&router, k).or_else(|| get(&settings, k));
    for key in ["fallbacks", "context_window_fallbacks"] {
        for rule in either(key).and_then(Value::as_sequence).into_iter().flatten() {
            for (group, targets) in rule.as_mapping().into_iter().flatten() {
                let (Some(group), Some(targets)) = (text(Some(group)), targets.as_sequence()) else { continue };
                let targets: Vec<String> = targets.iter().filter_map(|t| text(Some(t))).collect();
                fall_back(&mut plan, key, &group, &targets);
            }
        }
    }
    if let Some(defaults) = either("default_fallbacks").and_then(Value::as_sequence) {
        let targets: Vec<String> = defaults.iter().filter_map(|t| text(Some(t))).collect();
        let groups: Vec<String> = plan.cascades.iter().filter(|c| !c.embedding).map(|c| c.name.clone()).collect();
        for g in groups {
            fall_back(&mut plan, "default_fallbacks", &g, &targets);
        }
    }
    settings_of(&mut plan, &router, &settings, get(&root, "general_settings"));
    Ok(plan)
}

/// One `model_list` entry.
fn deployment(plan: &mut Plan, i: usize, entry: &Value) {
    let group = text(get(entry, "model_name")).unwrap_or_default();
    let params = get(entry, "litellm_params").cloned().unwrap_or(Value::Null);
    let at = format!("model_list[{i}] (`{group}`)");
    for key in ["rpm", "tpm", "max_parallel_requests"] {
        if get(&params, key).is_some() {
            plan.left_out
                .push(format!("{at}: `{key}` (per-deployment limits; Spillway marks a model dead on its 429s)"));
        }
    }
    let (provider, id) = match provider_of(&params) {
        Ok(p) => p,
        Err(why) => return plan.left_out.push(format!("{at}: {why}")),
    };
    let info = get(entry, "model_info").cloned().unwrap_or(Value::Null);
    let cost = |k: &str| number(get(&params, k).or_else(|| get(&info, k)));
    let price = match (cost("input_cost_per_token"), cost("output_cost_per_token")) {
        (None, None) => None,
        (i, o) => Some((i.unwrap_or(0.0) * 1e6, o.unwrap_or(0.0) * 1e6)),
    };
    let context = number(get(&info, "max_input_tokens").or_else(|| get(&info, "max_tokens"))).map(|n| n as u64);
    let embedding = text(get(&info, "mode")).is_some_and(|m| m == "embedding") || id.contains("embed");
    // The same endpoint and key is one provider.
    let found = plan.providers.iter().position(|p| {
        p.kind == provider.kind
            && p.base_url == provider.base_url
            && p.api_key == provider.api_key
            && p.name.starts_with(&provider.name)
    });
    let index = found.unwrap_or_else(|| {
        let mut p = provider;
        let taken = |n: &str| plan.providers.iter().any(|q| q.name == n);
        if taken(&p.name) {
            let base = p.name.clone();
            p.name = (2..).map(|k| format!("{base}-{k}")).find(|n| !taken(n)).unwrap_or(base);
        }
        plan.providers.push(p);
        plan.providers.len() - 1
    });
    let p = &mut plan.providers[index];
    if group == "*" || id == "*" {
        p.allow_any_model = true;
        plan.left_out.push(format!(
            "{at}: the wildcard route: clients name `{}/<model>` directly (`allow_any_model: true`)",
            p.name
        ));
        return;
    }
    if !p.models.iter().any(|(m, _, _)| *m == id) {
        p.models.push((id.clone(), context, price));
    }
    let model_ref = format!("{}/{id}", p.name);
    let name = group.replace('/', "-");
    if name != group {
        plan.left_out.push(format!("{at}: renamed to the cascade `{name}` (a cascade name holds no `/`)"));
    }
    match plan.cascades.iter_mut().find(|c| c.name == name) {
        Some(c) if !c.models.contains(&model_ref) => c.models.push(model_ref),
        Some(_) => {}
        None => plan.cascades.push(Cascade { name, embedding, models: vec![model_ref] }),
    }
}

/// `group` falls back to the models of the `targets` groups, after its own.
fn fall_back(plan: &mut Plan, key: &str, group: &str, targets: &[String]) {
    let group = group.replace('/', "-");
    let mut extra = Vec::new();
    for t in targets {
        match plan.cascades.iter().find(|c| c.name == t.replace('/', "-")) {
            Some(c) => extra.extend(c.models.clone()),
            None => plan.left_out.push(format!("{key}: `{group}` → `{t}`: no such model group")),
        }
    }
    match plan.cascades.iter_mut().find(|c| c.name == group) {
        Some(c) => {
            for m in extra {
                if !c.models.contains(&m) {
                    c.models.push(m);
                }
            }
        }
        None => plan.left_out.push(format!("{key}: `{group}`: no such model group")),
    }
}

/// `router_settings`, `litellm_settings` and `general_settings`.
fn settings_of(plan: &mut Plan, router: &Value, settings: &Value, general: Option<&Value>) {
    let either = |k: &str| get(router, k).or_else(|| get(settings, k));
    plan.retries = number(either("num_retries")).map(|n| (n as u64).min(3));
    plan.total_timeout_s = number(either("timeout")).or_else(|| number(get(settings, "request_timeout")));
    plan.breaker = (number(either("allowed_fails")).map(|n| (n as u64).max(1)), number(either("cooldown_time")));
    if let Some(host) = text(either("redis_host")) {
        let port = text(either("redis_port")).unwrap_or_else(|| "6379".into());
        let auth = text(either("redis_password")).map(|p| format!(":{}@", secret(&p))).unwrap_or_default();
        plan.redis_url = Some(format!("redis://{auth}{}:{}", secret(&host), secret(&port)));
    }
    let known = [
        (
            "routing_strategy",
            "Spillway tries a group's deployments in order (first, then the next), it does not shuffle",
        ),
        ("stream_timeout", "the first token's deadline is `health.timeouts.first_token`"),
        ("content_policy_fallbacks", "a content filter's 400 goes back to the client"),
        ("enable_pre_call_checks", "Spillway skips models whose known context is too small by itself"),
        ("cache", "Spillway keeps no response cache"),
        ("callbacks", "Spillway exports Prometheus metrics and logs; no callbacks"),
        ("success_callback", "Spillway exports Prometheus metrics and logs; no callbacks"),
        ("failure_callback", "Spillway exports Prometheus metrics and logs; no callbacks"),
        ("model_group_alias", "name the cascade as clients call it"),
    ];
    for (key, why) in known {
        if either(key).is_some() {
            plan.left_out.push(format!("{key}: {why}"));
        }
    }
    for (key, why) in [
        (
            "default_key_generate_params",
            "a new key's limits are what `POST /admin/keys` (or `spillway keys create`) is given",
        ),
        (
            "upperbound_key_generate_params",
            "keys are made by the operator only (`server.admin_token`), so no bound is needed",
        ),
        ("max_end_user_budget", "per end user limits are a key's `per_user: { rpm, tpm, budget }`"),
        ("default_team_settings", "a team is a key (`keys:`) with its own limits and budget"),
    ] {
        if get(settings, key).is_some() {
            plan.left_out.push(format!("litellm_settings.{key}: {why}"));
        }
    }
    if either("drop_params").is_some() {
        plan.left_out.push("drop_params: not needed (each provider kind translates the request)".into());
    }
    let Some(general) = general else { return };
    if let Some(k) = text(get(general, "master_key")) {
        plan.api_keys.push(secret(&k));
    }
    plan.max_concurrent_requests = number(get(general, "max_parallel_requests")).map(|n| n as u64);
    for (key, why) in [
        (
            "database_url",
            "LiteLLM's virtual keys live in its database: make each a `keys:` entry or `spillway keys create` \
             (rpm_limit → rpm, tpm_limit → tpm, max_parallel_requests → max_parallel, max_budget + \
             budget_duration → budget, models → cascades; docs/from-litellm.md); spend is in /admin/keys and /metrics",
        ),
        ("alerting", "alerts go to `alerts.telegram` or `alerts.webhook`"),
        ("background_health_checks", "Spillway's health comes from real traffic and breaker probes"),
    ] {
        if get(general, key).is_some() {
            plan.left_out.push(format!("general_settings.{key}: {why}"));
        }
    }
}
