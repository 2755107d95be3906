//! `spillway canary [--json]`: run every canary of the config once, on
//! each of its models, and print each result (passed, failed and why,
//! error, skipped) with its latency. Exit 1 when the config is invalid,
//! has no canaries, or any canary failed or got no answer — so a user's
//! CI can run its own config's canaries.

use crate::gateway::canary::{run_all, Outcome};
use crate::gateway::{Gateway, Shared};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

/// Runs the command.
pub fn run(path: &Path, as_json: bool) -> ExitCode {
    let config = match super::load(path) {
        Ok(c) => c,
        Err(errors) => {
            eprint!("{}", super::errors_text(path, &errors));
            return ExitCode::from(1);
        }
    };
    if config.canaries.is_empty() {
        eprintln!("The config has no `canaries:`: nothing to run.");
        return ExitCode::from(1);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let results = runtime.block_on(async {
        let shared = Shared::default();
        match Gateway::build(config, &shared) {
            Ok(gw) => Ok(run_all(&gw).await),
            Err(e) => Err(e.to_string()),
        }
    });
    let results = match results {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot build the gateway: {e}");
            return ExitCode::from(1);
        }
    };
    let bad = results.iter().filter(|r| matches!(r.outcome, Outcome::Failed(_) | Outcome::Error(_))).count();
    if as_json {
        let rows: Vec<_> = results
            .iter()
            .map(|r| {
                json!({"canary": r.canary, "model": r.model, "result": r.outcome.label(),
                       "detail": r.outcome.detail(), "latency_ms": r.latency_ms})
            })
            .collect();
        println!("{}", json!({"results": rows, "failed": bad}));
    } else {
        let width = results.iter().map(|r| r.canary.len() + r.model.len() + 3).max().unwrap_or(0);
        for r in &results {
            let name = format!("{} @ {}", r.canary, r.model);
            let detail = r.outcome.detail();
            let sep = if detail.is_empty() { "" } else { ": " };
            println!("{name:<width$}  {:<7}  {:>6} ms{sep}{detail}", r.outcome.label(), r.latency_ms);
        }
        println!("{} canary result(s), {bad} failed.", results.len());
    }
    if bad > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
