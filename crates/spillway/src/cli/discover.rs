//! `spillway discover [--json]`: fetch every provider's model listing now,
//! build each discovered cascade, print it as a table (rank, model ref,
//! context, price in/out per 1M, free, why) with the diff against the cached
//! cascades of `state.data_dir`. `--json` prints the same as one JSON
//! document.
//!
//! Read-only: the cache belongs to the running gateway, so this command
//! never writes it (a failed listing falls back to the cached one, as the
//! gateway would). Progress goes to stderr, and only on a terminal. Exit 1
//! when the config is invalid or every listing failed.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use serde_json::{json, Value};

use crate::config::Config;
use crate::discovery::fetch::{fetch_all, provider_count, Fetched};
use crate::discovery::round::{build_cascades, ProviderListing, Round};
use crate::discovery::{cache, diff, BuiltCascade, CascadeDiff};
use crate::health::clock::now_ms;

/// Runs the command.
pub fn run(path: &Path, as_json: bool) -> ExitCode {
    let config = match super::load(path) {
        Ok(c) => c,
        Err(errors) => {
            eprint!("{}", super::errors_text(path, &errors));
            return ExitCode::from(1);
        }
    };
    if !config.cascades.values().any(|c| matches!(c.source, crate::config::CascadeSource::Discovered(_))) {
        let message = "No cascade uses discovery: every cascade lists its `models`, so there is nothing to discover. \
(A cascade with `providers` or `preferred` instead of `models` is built from the listings.)";
        if as_json {
            println!("{}", json!({"cascades": [], "message": message}));
        } else {
            println!("{message}");
        }
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let progress = !as_json && std::io::stderr().is_terminal();
    let total = provider_count(&config);
    if progress {
        eprintln!("Fetching {total} model listing(s)…");
    }
    // Who is still being waited on, for the line a slow listing gets.
    let pending = std::sync::Mutex::new(discovered_providers(&config));
    let on_done = |f: &Fetched| {
        pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|p| *p != f.provider);
        if progress {
            match &f.result {
                Ok(l) => eprintln!("  {:<16} {} models", f.provider, l.models.len()),
                Err(e) => eprintln!("  {:<16} failed: {e}", f.provider),
            }
        }
    };
    let fetched = runtime.block_on(async {
        let work = fetch_all(&config, &on_done);
        tokio::pin!(work);
        let started = tokio::time::Instant::now();
        let mut tick = tokio::time::interval_at(started + WAIT_NOTE_EVERY, WAIT_NOTE_EVERY);
        loop {
            tokio::select! {
                fetched = &mut work => break fetched,
                _ = tick.tick() => {
                    // On stderr even off a terminal: a hanging listing must
                    // not look like a hanging command.
                    let names = pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).join(", ");
                    eprintln!("  waiting for {names} ({} s)", started.elapsed().as_secs());
                }
            }
        }
    });
    let cache_path = cache::file_path(&config.state.data_dir);
    let cached = cache::read_file(&cache_path).unwrap_or_else(|e| {
        eprintln!("ignoring the discovery cache: {e}");
        None
    });
    let result = assemble(&config, fetched, cached.as_ref());
    if as_json {
        println!("{}", serde_json::to_string_pretty(&result.to_json(cached.as_ref())).unwrap_or_default());
    } else {
        print!("{}", result.render(cached.as_ref()));
    }
    if total > 0 && result.failed == total {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// How often a listing still not in is named on stderr.
const WAIT_NOTE_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// The providers whose listings are fetched (or read), by name.
fn discovered_providers(config: &Config) -> Vec<String> {
    config.providers.values().filter(|p| p.discovery_format.is_some()).map(|p| p.name.clone()).collect()
}

/// What the command found.
struct Discovered {
    /// Per provider: name, models, error, warnings.
    providers: Vec<(String, usize, Option<String>, Vec<String>)>,
    failed: usize,
    round: Round,
    diffs: Vec<Option<CascadeDiff>>,
}

fn assemble(config: &Config, fetched: Vec<Fetched>, cached: Option<&Round>) -> Discovered {
    let now = now_ms();
    let mut listings = cached.map(|c| c.listings.clone()).unwrap_or_default();
    let mut providers = Vec::new();
    let mut failed = 0;
    for f in fetched {
        match f.result {
            Ok(l) => {
                providers.push((f.provider.clone(), l.models.len(), None, l.warnings));
                listings.insert(f.provider, ProviderListing { models: l.models, fetched_at_ms: now, last_error: None });
            }
            Err(e) => {
                failed += 1;
                let kept = listings.get(&f.provider).map_or(0, |l| l.models.len());
                providers.push((f.provider, kept, Some(e.to_string()), Vec::new()));
            }
        }
    }
    listings.retain(|name, _| config.providers.get(name).is_some_and(|p| p.discovery_format.is_some()));
    let (cascades, _) = build_cascades(config, &listings, &|_| None);
    let diffs = cascades
        .iter()
        .map(|(name, built)| {
            let old = cached?.cascades.get(name)?;
            Some(diff(name, &old.model_refs(), &built.model_refs()))
        })
        .collect();
    Discovered { providers, failed, round: Round { at_ms: now, listings, cascades }, diffs }
}

fn price(p: Option<f64>) -> String {
    p.map_or_else(|| "?".to_owned(), |v| format!("{v}"))
}

fn rows(built: &BuiltCascade) -> Vec<[String; 6]> {
    let mut rows = vec![["#", "model", "context", "$ in/out per 1M", "free", "why"].map(str::to_owned)];
    for (i, e) in built.entries.iter().enumerate() {
        rows.push([
            (i + 1).to_string(),
            e.model_ref.clone(),
            e.meta.context.map_or_else(|| "?".to_owned(), |c| c.to_string()),
            format!("{}/{}", price(e.meta.price_in_per_1m), price(e.meta.price_out_per_1m)),
            if e.meta.free { "yes" } else { "no" }.to_owned(),
            e.reason.to_string(),
        ]);
    }
    rows
}

fn table<const N: usize>(out: &mut String, rows: &[[String; N]]) {
    let widths: Vec<usize> = (0..N).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    for row in rows {
        let line: Vec<String> = row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        let _ = writeln!(out, "  {}", line.join("  ").trim_end());
    }
}

impl Discovered {
    fn render(&self, cached: Option<&Round>) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Listings:");
        for (name, models, error, warnings) in &self.providers {
            match error {
                None => {
                    let _ = writeln!(out, "  {name}: {models} models ({} skipped with a warning)", warnings.len());
                }
                Some(e) => {
                    let _ = writeln!(out, "  {name}: FAILED ({e}); using {models} cached models");
                }
            }
        }
        for ((name, built), d) in self.round.cascades.iter().zip(&self.diffs) {
            let _ = writeln!(out, "\n{name} ({} models)", built.entries.len());
            if built.entries.is_empty() {
                let _ = writeln!(out, "  (empty: the gateway would run its static models)");
            } else {
                table(&mut out, &rows(built));
            }
            for note in &built.notes {
                let _ = writeln!(out, "  note: {note}");
            }
            // Preferred ones are in the notes already.
            for l in built.left_out.iter().filter(|l| l.is_unknown() && !l.preferred) {
                let _ = writeln!(out, "  warn: {l}");
            }
            match (d, cached) {
                (Some(d), _) => {
                    let _ = writeln!(out, "  vs cache: {d}");
                }
                (None, Some(_)) => {
                    let _ = writeln!(out, "  vs cache: new cascade");
                }
                (None, None) => {
                    let _ = writeln!(out, "  vs cache: no cache yet");
                }
            }
        }
        out
    }

    fn to_json(&self, cached: Option<&Round>) -> Value {
        let providers: Vec<Value> = self
            .providers
            .iter()
            .map(|(name, models, error, warnings)| {
                json!({"provider": name, "models": models, "error": error, "warnings": warnings})
            })
            .collect();
        let cascades: Vec<Value> = self
            .round
            .cascades
            .iter()
            .zip(&self.diffs)
            .map(|((name, built), d)| {
                let entries: Vec<Value> = built
                    .entries
                    .iter()
                    .enumerate()
                    .map(|(i, e)| {
                        json!({
                            "rank": i + 1,
                            "model": e.model_ref,
                            "context": e.meta.context,
                            "price_in_per_1m": e.meta.price_in_per_1m,
                            "price_out_per_1m": e.meta.price_out_per_1m,
                            "free": e.meta.free,
                            "why": e.reason.to_string(),
                            "reason": e.reason,
                        })
                    })
                    .collect();
                json!({
                    "name": name,
                    "models": entries,
                    "notes": built.notes,
                    "left_out": built.left_out.iter().map(|l| json!({
                        "model": l.model_ref, "preferred": l.preferred, "unknown": l.is_unknown(),
                        "why": l.why, "text": l.to_string(),
                    })).collect::<Vec<_>>(),
                    "diff": d,
                    "diff_text": d.as_ref().map(ToString::to_string),
                })
            })
            .collect();
        json!({
            "fetched_at_unix_ms": self.round.at_ms,
            "providers": providers,
            "cascades": cascades,
            "cache_at_unix_ms": cached.map(|c| c.at_ms),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::fetch::FetchError;
    use crate::discovery::{Listing, ModelMeta};

    fn config() -> Config {
        let yaml = "
providers:
  groq: { kind: openai, base_url: 'http://127.0.0.1:9/v1', discovery: { format: groq } }
cascades:
  chat: { strategy: quality_first, providers: [groq], size: 3 }
";
        crate::config::load_str(yaml, None, &|_| None).unwrap_or_else(|e| panic!("{e}"))
    }

    fn listing(ids: &[&str]) -> Listing {
        Listing { models: ids.iter().map(|id| ModelMeta::new("groq", id)).collect(), ..Default::default() }
    }

    #[test]
    fn renders_tables_and_the_diff_against_the_cache() {
        let first = assemble(
            &config(),
            vec![Fetched { provider: "groq".into(), result: Ok(listing(&["a-70b", "b-8b"])) }],
            None,
        );
        assert!(first.render(None).contains("no cache yet"));
        let second = assemble(
            &config(),
            vec![Fetched { provider: "groq".into(), result: Ok(listing(&["a-70b", "c-235b"])) }],
            Some(&first.round),
        );
        let text = second.render(Some(&first.round));
        assert!(text.contains("groq/c-235b"), "{text}");
        assert!(text.contains("vs cache: chat: +groq/c-235b, -groq/b-8b (removed)"), "{text}");
        let v = second.to_json(Some(&first.round));
        assert_eq!(v["cascades"][0]["models"][0]["model"], "groq/c-235b");
        assert_eq!(v["cascades"][0]["models"][0]["rank"], 1);
    }

    #[test]
    fn unpriced_models_of_a_free_cascade_are_warned_about_with_the_fix() {
        let yaml = "
providers:
  groq: { kind: openai, base_url: 'http://127.0.0.1:9/v1', discovery: { format: groq } }
cascades:
  free: { strategy: quality_first, providers: [groq], preferred: [groq/a-70b], filters: { free_only: true } }
";
        let config = crate::config::load_str(yaml, None, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        let found =
            assemble(&config, vec![Fetched { provider: "groq".into(), result: Ok(listing(&["a-70b", "b-8b"])) }], None);
        let text = found.render(None);
        assert!(text.contains("(empty: the gateway would run its static models)"), "{text}");
        assert!(
            text.contains("note: preferred groq/a-70b is left out: price unknown — set providers.groq.price_per_1m or a models: hint"),
            "{text}"
        );
        assert!(
            text.contains(
                "warn: groq/b-8b is left out: price unknown — set providers.groq.price_per_1m or a models: hint"
            ),
            "{text}"
        );
        let priced = yaml.replace(
            "discovery: { format: groq } }",
            "discovery: { format: groq }, price_per_1m: { input: 0, output: 0 } }",
        );
        let config = crate::config::load_str(&priced, None, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        let found =
            assemble(&config, vec![Fetched { provider: "groq".into(), result: Ok(listing(&["a-70b", "b-8b"])) }], None);
        assert_eq!(found.round.refs("free"), ["groq/a-70b", "groq/b-8b"]);
        assert!(!found.render(None).contains("left out"));
    }

    #[test]
    fn a_failed_listing_falls_back_to_the_cache() {
        let first =
            assemble(&config(), vec![Fetched { provider: "groq".into(), result: Ok(listing(&["a-70b"])) }], None);
        let failed = Fetched { provider: "groq".into(), result: Err(FetchError::Status(503)) };
        let second = assemble(&config(), vec![failed], Some(&first.round));
        assert_eq!(second.failed, 1);
        assert_eq!(second.round.refs("chat"), ["groq/a-70b"]);
        assert!(second.render(Some(&first.round)).contains("FAILED (HTTP 503); using 1 cached models"));
    }
}
