//! `spillway check`: compile the config and print every error with its
//! YAML path (exit 1), or the resolved providers and cascades (exit 0).
//! Secrets are never printed; set ones show as `***`, and so do the
//! credentials and query strings of URLs.

use crate::config::{CascadeSource, Config};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

/// Runs the command.
pub fn run(path: &Path) -> ExitCode {
    match super::load(path) {
        Ok(config) => {
            print!("{}", render(&config));
            ExitCode::SUCCESS
        }
        Err(errors) => {
            print!("{}", super::errors_text(path, &errors));
            ExitCode::from(1)
        }
    }
}

/// Listing formats that carry prices; the others list none, so their
/// models are priced only by `price_per_1m` or a `models:` hint.
const PRICED_LISTINGS: [&str; 1] = ["openrouter"];

/// What `check` can know without fetching a listing: a filtered cascade
/// whose providers list no prices and set no `price_per_1m` (their models
/// will be left out), and a paid preferred model placed ahead of the rest.
fn warnings(c: &Config, cascade: &crate::config::CascadeConfig) -> Vec<String> {
    let CascadeSource::Discovered(spec) = &cascade.source else { return Vec::new() };
    let mut out = Vec::new();
    let filter = if spec.filters.free_only {
        Some("free_only")
    } else if spec.filters.max_cost_per_1m.is_some() {
        Some("max_cost_per_1m")
    } else {
        None
    };
    let static_price = |provider: &str, id: &str| {
        let p = c.providers.get(provider)?;
        p.models.iter().find(|m| m.id == id).and_then(|m| m.price).or(p.price)
    };
    if let Some(filter) = filter {
        let mut providers: Vec<&str> = spec.providers.iter().map(String::as_str).collect();
        providers.extend(
            spec.preferred.iter().map(|r| r.provider.as_str()).filter(|p| !spec.providers.iter().any(|x| x == p)),
        );
        for name in providers {
            let Some(p) = c.providers.get(name) else { continue };
            let unpriced_listing = p.discovery_format.as_deref().is_some_and(|f| !PRICED_LISTINGS.contains(&f));
            if unpriced_listing && p.price.is_none() {
                out.push(format!(
                    "providers.{name} lists no prices and sets no price_per_1m: with {filter} its models are left out \
                     (price unknown) — set providers.{name}.price_per_1m or a models: hint"
                ));
            }
        }
    }
    for r in &spec.preferred {
        if let Some(price) = static_price(&r.provider, &r.model).filter(|p| p.input > 0.0 || p.output > 0.0) {
            out.push(format!(
                "preferred {r} is paid (${}/${} per 1M) and placed ahead of any free models: most traffic will be paid",
                price.input, price.output
            ));
        }
    }
    out
}

fn secret(set: bool) -> &'static str {
    if set {
        "***"
    } else {
        "(not set)"
    }
}

/// The human report of a valid config.
pub fn render(c: &Config) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Config OK: {} provider(s), {} cascade(s); listening on {}",
        c.providers.len(),
        c.cascades.len(),
        c.server.listen
    );
    let _ = writeln!(out, "\nProviders:");
    for p in c.providers.values() {
        let _ = write!(out, "  {:<14} kind={:<9}", p.name, p.kind.as_str());
        if let Some(u) = &p.base_url {
            let _ = write!(out, " base_url={}", crate::redact::display_url(u));
        }
        if p.api_key.is_some() || p.auth_key.is_some() || p.iam_token.is_some() {
            let _ = write!(out, " key={}", secret(true));
        }
        if let Some(f) = &p.discovery_format {
            let _ = write!(out, " discovery={f}");
        }
        if !p.models.is_empty() {
            let _ = write!(out, " models={}", p.models.len());
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "\nCascades:");
    for (i, cascade) in c.cascades.values().enumerate() {
        let auto = if i == 0 { " (auto)" } else { "" };
        let _ = writeln!(out, "  {}{auto}", cascade.name);
        match &cascade.source {
            CascadeSource::Fixed(models) => {
                for (n, m) in models.iter().enumerate() {
                    let _ = writeln!(out, "    {:>2}. {m}", n + 1);
                }
            }
            CascadeSource::Discovered(spec) => {
                let _ = writeln!(
                    out,
                    "    discovered: strategy={} providers=[{}] size={} min_other_providers={}",
                    spec.strategy.as_str(),
                    spec.providers.join(", "),
                    spec.size,
                    spec.min_other_providers
                );
                for (n, m) in spec.preferred.iter().enumerate() {
                    let _ = writeln!(out, "    {:>2}. {m} (preferred)", n + 1);
                }
            }
        }
        if let Some(l) = &cascade.last_resort {
            let _ = writeln!(out, "     last resort: {l}");
        }
        for w in warnings(c, cascade) {
            let _ = writeln!(out, "     warn: {w}");
        }
        if cascade.handoff {
            let _ = writeln!(out, "     then: handoff to a person");
        }
    }
    let backend = match c.state.backend {
        crate::config::StateBackend::Memory => "memory",
        crate::config::StateBackend::Redis => "redis",
    };
    let _ = write!(out, "\nState: backend={backend}");
    if let Some(url) = &c.state.redis_url {
        // A Sentinel set or a Cluster is a host list no URL parser reads: its hosts, never its password.
        let shown = match crate::config::RedisTopology::parse(url.expose()) {
            Ok(t @ (crate::config::RedisTopology::Sentinel { .. } | crate::config::RedisTopology::Cluster { .. })) => {
                t.hosts()
            }
            _ => crate::redact::display_url(url.expose()),
        };
        let _ = write!(out, " redis_url={shown}");
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Server: api_keys={} admin_token={}",
        if c.server.api_keys.is_empty() { "(none)".to_string() } else { format!("{} x ***", c.server.api_keys.len()) },
        secret(c.server.admin_token.is_some())
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_warns_about_unpriced_listings_and_paid_preferred_models() {
        let yaml = "
providers:
  groq: { kind: openai, base_url: 'http://127.0.0.1:9/v1', discovery: { format: groq } }
  or:
    kind: openai
    base_url: 'http://127.0.0.1:9/v1'
    discovery: { format: openrouter }
    models: [ { id: google/gemma-3-27b-it, price_per_1m: { input: 0.1, output: 0.2 } } ]
cascades:
  free: { providers: [groq, or], preferred: [or/google/gemma-3-27b-it], filters: { free_only: true } }
";
        let config = crate::config::load_str(yaml, None, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        let text = render(&config);
        assert!(
            text.contains("warn: providers.groq lists no prices and sets no price_per_1m: with free_only its models are left out (price unknown) — set providers.groq.price_per_1m or a models: hint"),
            "{text}"
        );
        assert!(!text.contains("providers.or lists no prices"), "OpenRouter lists prices: {text}");
        assert!(text.contains("warn: preferred or/google/gemma-3-27b-it is paid ($0.1/$0.2 per 1M)"), "{text}");
        let priced = yaml.replace(
            "discovery: { format: groq } }",
            "discovery: { format: groq }, price_per_1m: { input: 0, output: 0 } }",
        );
        let config = crate::config::load_str(&priced, None, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        assert!(!render(&config).contains("providers.groq lists no prices"));
    }
}
