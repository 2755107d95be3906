//! `spillway check`: compile the config and print every error with its
//! YAML path (exit 1), or the resolved providers and cascades (exit 0).
//! Secrets are never printed; set ones show as `***`, and so do the
//! credentials and query strings of URLs.

use crate::config::{CascadeSource, Config};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

/// Runs the command: exit 1 on a config error, and on a finding of
/// level error (the config would run, but not as its author meant).
pub fn run(path: &Path) -> ExitCode {
    match super::load(path) {
        Ok(config) => {
            print!("{}", render(&config));
            let errors = config.cascades.values().flat_map(|c| findings(&config, c)).filter(|f| f.error).count();
            if errors == 0 {
                return ExitCode::SUCCESS;
            }
            println!("\n{errors} finding(s) of level error above: the config runs, but not as written.");
            ExitCode::from(1)
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

/// One thing `check` found in a config that compiles.
struct Finding {
    /// An error: what the config does is not what it says (exit 1).
    error: bool,
    text: String,
}

/// Whether `provider`'s listing gives no price for some model that its
/// `price_per_1m` and static `models:` hints leave unpriced too.
fn lists_unpriced(p: &crate::config::ProviderConfig) -> bool {
    if p.price.is_some() {
        return false;
    }
    let hinted = |id: &str| p.models.iter().any(|m| m.id == id && m.price.is_some());
    match &p.listing {
        // A mock's listing is known: unpriced when one of its models is.
        Some(listing) => listing.iter().any(|m| m.price.is_none() && !m.free && !hinted(&m.id)),
        None => p.discovery_format.as_deref().is_some_and(|f| !PRICED_LISTINGS.contains(&f)),
    }
}

/// What `check` can know without fetching a listing: a filtered cascade
/// whose providers list no prices and set no `price_per_1m` (their models
/// will be left out), and, with `preferred_order: strict`, a paid preferred
/// model placed ahead of the rest.
///
/// Leaving out the models of the cascade's primary provider, or of one of
/// its preferred models, is an error: that is where a cascade's free models
/// come from (Groq's, in incident 000: 0.7 % of the traffic stayed free),
/// and at run time it shows only as a WARN and an alert.
fn findings(c: &Config, cascade: &crate::config::CascadeConfig) -> Vec<Finding> {
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
        for (i, name) in providers.into_iter().enumerate() {
            if !c.providers.get(name).is_some_and(lists_unpriced) {
                continue;
            }
            let carries = i == 0 || spec.preferred.iter().any(|r| r.provider == name);
            let text = format!(
                "providers.{name} lists no prices and sets no price_per_1m: with {filter} its models are left out \
                 (price unknown) — set providers.{name}.price_per_1m or a models: hint"
            );
            let text = if carries {
                let role = if i == 0 { "the primary provider" } else { "a preferred model's provider" };
                format!(
                    "{text}; it is {role} of cascade {}, which is left nearly without free models \
                     (Groq's free plan: price_per_1m: {{ input: 0, output: 0 }})",
                    cascade.name
                )
            } else {
                text
            };
            out.push(Finding { error: carries, text });
        }
    }
    if spec.preferred_order == crate::config::PreferredOrder::Strict {
        for r in &spec.preferred {
            if let Some(price) = static_price(&r.provider, &r.model).filter(|p| p.input > 0.0 || p.output > 0.0) {
                out.push(Finding {
                    error: false,
                    text: format!(
                        "preferred {r} is paid (${}/${} per 1M) and placed ahead of any free models \
                         (preferred_order: strict): most traffic will be paid",
                        price.input, price.output
                    ),
                });
            }
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
                    "    discovered: strategy={} providers=[{}] size={} min_other_providers={} preferred_order={}",
                    spec.strategy.as_str(),
                    spec.providers.join(", "),
                    spec.size,
                    spec.min_other_providers,
                    spec.preferred_order.as_str()
                );
                for (n, m) in spec.preferred.iter().enumerate() {
                    let _ = writeln!(out, "    {:>2}. {m} (preferred)", n + 1);
                }
            }
        }
        if let Some(l) = &cascade.last_resort {
            let _ = writeln!(out, "     last resort: {l}");
        }
        for f in findings(c, cascade) {
            let _ = writeln!(out, "     {}: {}", if f.error { "error" } else { "warn" }, f.text);
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
    if !c.keys.is_empty() {
        // Ids and limits only: the secrets are not even in the compiled config.
        let ids: Vec<&str> = c.keys.iter().map(|k| k.id.as_str()).collect();
        let _ = writeln!(out, "Keys: {} ({})", c.keys.len(), ids.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(yaml: &str) -> Config {
        crate::config::load_str(yaml, None, &|_| None).unwrap_or_else(|e| panic!("{e}"))
    }

    fn errors(c: &Config) -> usize {
        c.cascades.values().flat_map(|cascade| findings(c, cascade)).filter(|f| f.error).count()
    }

    const YAML: &str = "
providers:
  groq: { kind: openai, base_url: 'http://127.0.0.1:9/v1', discovery: { format: groq } }
  ollama: { kind: openai, base_url: 'http://127.0.0.1:9/v1', discovery: { format: ollama } }
  or:
    kind: openai
    base_url: 'http://127.0.0.1:9/v1'
    discovery: { format: openrouter }
    models: [ { id: google/gemma-3-27b-it, price_per_1m: { input: 0.1, output: 0.2 } } ]
cascades:
  free:
    providers: [groq, or, ollama]
    preferred: [or/google/gemma-3-27b-it]
    preferred_order: strict
    filters: { free_only: true }
";

    /// Incident 000: Groq as the seed wrote it, without a price, under
    /// `max_cost_per_1m`, is an error of `check` (exit 1), with the fix.
    #[test]
    fn an_unpriced_primary_provider_of_a_filtered_cascade_is_an_error() {
        let config = load(YAML);
        let text = render(&config);
        assert!(
            text.contains(
                "error: providers.groq lists no prices and sets no price_per_1m: with free_only its models are left \
                 out (price unknown) — set providers.groq.price_per_1m or a models: hint; it is the primary provider \
                 of cascade free, which is left nearly without free models (Groq's free plan: price_per_1m: { input: \
                 0, output: 0 })"
            ),
            "{text}"
        );
        // A provider further down the list is a warning.
        assert!(text.contains("warn: providers.ollama lists no prices"), "{text}");
        assert!(!text.contains("providers.or lists no prices"), "OpenRouter lists prices: {text}");
        assert!(text.contains("warn: preferred or/google/gemma-3-27b-it is paid ($0.1/$0.2 per 1M)"), "{text}");
        assert_eq!(errors(&config), 1);

        // Priced as the docs say: no error; the default order says nothing
        // of a paid preferred model (it goes after the free ones).
        let priced = YAML
            .replace(
                "discovery: { format: groq } }",
                "discovery: { format: groq }, price_per_1m: { input: 0, output: 0 } }",
            )
            .replace("    preferred_order: strict\n", "");
        let config = load(&priced);
        let text = render(&config);
        assert!(!text.contains("providers.groq lists no prices") && !text.contains("is paid"), "{text}");
        assert_eq!(errors(&config), 0);
        // No filter on price: nothing is left out for it.
        assert_eq!(errors(&load(&YAML.replace("filters: { free_only: true }", "size: 5"))), 0);
    }

    /// A mock's listing is read as it is: unpriced models make the finding,
    /// a fully priced listing does not.
    #[test]
    fn a_mock_listing_is_judged_by_its_prices() {
        let yaml = "
providers:
  groq:
    kind: mock
    listing: [ { id: llama-3.3-70b-versatile, context: 131072 } ]
cascades:
  chat: { providers: [groq], filters: { max_cost_per_1m: 0.5 } }
";
        assert_eq!(errors(&load(yaml)), 1);
        let priced = yaml.replace("context: 131072 }", "context: 131072, price_per_1m: { input: 0, output: 0 } }");
        assert_eq!(errors(&load(&priced)), 0);
    }
}
