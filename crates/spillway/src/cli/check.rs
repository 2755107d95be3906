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
        let _ = write!(out, " redis_url={}", crate::redact::display_url(url.expose()));
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
