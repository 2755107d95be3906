//! The imported config as Spillway YAML, with what was not carried over as
//! comments at its top. Strings are written JSON-quoted (a valid YAML
//! double-quoted scalar), so model ids with `:` or `#` stay strings.

use super::convert::Plan;
use std::fmt::Write as _;

fn q(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A number as YAML writes it (no `.0` on whole numbers).
fn num(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// The Spillway config of `plan`, read from `source`.
pub fn yaml(plan: &Plan, source: &str) -> String {
    let mut y = String::new();
    let _ = writeln!(y, "# Imported from {source} by `spillway import-litellm`; check it with `spillway check`.");
    if !plan.left_out.is_empty() {
        let _ = writeln!(y, "#\n# Not carried over:");
        for line in &plan.left_out {
            let _ = writeln!(y, "#   - {line}");
        }
    }
    let _ = writeln!(y, "\nserver:");
    let _ =
        writeln!(y, "  # LiteLLM listens on 0.0.0.0:4000; another host's clients need `0.0.0.0:4000` (with api_keys).");
    let _ = writeln!(y, "  listen: 127.0.0.1:4000");
    if !plan.api_keys.is_empty() {
        let keys: Vec<String> = plan.api_keys.iter().map(|k| q(k)).collect();
        let _ = writeln!(y, "  api_keys: [{}]", keys.join(", "));
    }
    if let Some(n) = plan.max_concurrent_requests {
        let _ = writeln!(y, "  max_concurrent_requests: {n}");
    }
    if let Some(url) = &plan.redis_url {
        let _ = writeln!(y, "\nstate:\n  backend: redis\n  redis_url: {}", q(url));
    }
    let _ = writeln!(y, "\nproviders:");
    for p in &plan.providers {
        let _ = writeln!(y, "  {}:", q(&p.name));
        let _ = writeln!(y, "    kind: {}", p.kind);
        if let Some(u) = &p.base_url {
            let _ = writeln!(y, "    base_url: {}", q(u));
        }
        if let Some(k) = &p.api_key {
            let _ = writeln!(y, "    api_key: {}", q(k));
        }
        if p.allow_any_model {
            let _ = writeln!(y, "    allow_any_model: true");
        }
        if !p.models.is_empty() {
            let _ = writeln!(y, "    models:");
        }
        for (id, context, price) in &p.models {
            let mut line = format!("      - {{ id: {}", q(id));
            if let Some(c) = context {
                let _ = write!(line, ", context: {c}");
            }
            if let Some((i, o)) = price {
                let _ = write!(line, ", price_per_1m: {{ input: {}, output: {} }}", num(*i), num(*o));
            }
            let _ = writeln!(y, "{line} }}");
        }
    }
    let (retries, total, (fails, cooldown)) = (plan.retries, plan.total_timeout_s, plan.breaker);
    if retries.is_some() || total.is_some() || fails.is_some() || cooldown.is_some() {
        let _ = writeln!(y, "\nhealth:");
        if let Some(n) = retries {
            let _ = writeln!(y, "  retries: {{ max: {n} }}");
        }
        if let Some(t) = total {
            let _ = writeln!(y, "  timeouts: {{ total: {}s }}", num(t.clamp(1.0, 3600.0).round()));
        }
        let mut breaker = Vec::new();
        if let Some(n) = fails {
            breaker.push(format!("consecutive_failures: {n}"));
        }
        if let Some(c) = cooldown {
            breaker.push(format!("open_min: {}s", num(c.max(1.0).round())));
        }
        if !breaker.is_empty() {
            let _ = writeln!(y, "  breaker: {{ {} }}", breaker.join(", "));
        }
    }
    let _ = writeln!(y, "\ncascades:");
    for c in &plan.cascades {
        let _ = writeln!(y, "  {}:", q(&c.name));
        if c.embedding {
            let _ = writeln!(y, "    kind: embedding");
        }
        let models: Vec<String> = c.models.iter().map(|m| q(m)).collect();
        let _ = writeln!(y, "    models: [{}]", models.join(", "));
    }
    y
}
