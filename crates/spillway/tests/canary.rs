//! Canaries through the composition root, on a paused clock: with no
//! client traffic at all, canaries alone demote a model that answers in the
//! wrong script and, once it recovers, restore it (they are its probes);
//! their cost is recorded under `cascade="canary"`; a dead model is
//! skipped, not called; a hard failure counts toward the breaker. And
//! `spillway canary` runs them once, exit 1 on a failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;

use spillway::gateway::canary::{run_all, Outcome};
use spillway::server::AppState;
use std::sync::Arc;
use std::time::Duration;

/// `bad/m` answers in English for its first 3 minutes, then in Russian;
/// a canary asks every model of `pair` in Russian every 30 s.
const YAML: &str = "
providers:
  bad:
    kind: mock
    models: [ { id: m, price_per_1m: { input: 1, output: 1 }, behavior: { reply: 'Привет! У меня всё хорошо, спасибо.', wrong_script_rate: 1.0, bad_windows: [ { start: 0s, duration: 3m } ] } } ]
  good:
    kind: mock
    models: [ { id: m, price_per_1m: { input: 1, output: 1 }, behavior: { reply: 'Привет! Всё отлично.' } } ]
  broken:
    kind: mock
    models: [ { id: m, behavior: { error_rate: 1.0, error_status: 503 } } ]
health:
  breaker: { consecutive_failures: 1, open_for: 10m, open_min: 10m }
cascades:
  pair:
    models: [bad/m, good/m]
    quality: { window: 10, min_answers: 2, demote_for: 1m, probe_answers: 2 }
canaries:
  - { name: ru, cascade: pair, prompt: 'Привет! Как дела? Ответь по-русски.', check: { script: cyrillic, not_contains: ['Sure'] }, interval: 30s }
  - { name: up, model: broken/m, prompt: 'ping', check: { contains: ['pong'] }, interval: 1h }
";

fn start(yaml: &str) -> Arc<AppState> {
    common::app_state(yaml)
}

fn demoted(state: &Arc<AppState>) -> bool {
    state.gateway.load().health.model("bad/m").quality.demoted_until().is_some()
}

#[tokio::test(start_paused = true)]
async fn canaries_alone_demote_and_restore_a_model() {
    let state = start(YAML);
    // Runs at 0 s and 30 s: two wrong-script answers demote it.
    tokio::time::sleep(Duration::from_secs(31)).await;
    assert!(demoted(&state), "two failed canaries demote bad/m");
    // Its period ends at ~1.5 min but it is still bad until 3 min: the
    // canaries (its probes) fail and it stays demoted.
    tokio::time::sleep(Duration::from_secs(150)).await;
    assert!(demoted(&state), "still bad at 3 min: still demoted");
    // Recovered; within minutes the canaries restore it.
    let mut restored_after = None;
    for s in 0..600 {
        if !demoted(&state) {
            restored_after = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let after = restored_after.expect("restored within 10 minutes of recovering");
    assert!(after <= 300, "restored {after} s after 3 min");
    // Their cost is the canaries' own.
    let text = state.metrics.render();
    let cost = text
        .lines()
        .find(|l| l.starts_with("spillway_cost_usd_total{cascade=\"canary\",provider=\"good\",model=\"m\"}"))
        .unwrap_or_else(|| panic!("no canary cost:\n{text}"));
    assert!(!cost.ends_with(" 0.0"), "{cost}");
    // The hard failure opened broken/m's breaker.
    let broken = state.gateway.load().health.model("broken/m");
    assert!(matches!(broken.breaker_state(), spillway::health::breaker::State::Open { .. }));
}

#[tokio::test(start_paused = true)]
async fn dead_or_open_models_are_skipped_and_results_say_why() {
    let state = start(YAML);
    let gw = state.gateway.load_full();
    let far = spillway::health::clock::now_ms() + 3_600_000;
    gw.health.model("good/m").mark_dead(far, spillway::health::DeadReason::RateLimited);
    let results = run_all(&gw).await;
    let of = |model: &str| results.iter().find(|r| r.model == model).unwrap().outcome.clone();
    assert_eq!(of("good/m"), Outcome::Skipped("dead"));
    assert!(matches!(of("bad/m"), Outcome::Failed(ref why) if why.contains("Sure")), "{results:?}");
    assert!(matches!(of("broken/m"), Outcome::Error(_)), "{results:?}");
    // The breaker opened on that failure: the next run skips it.
    let again = run_all(&gw).await;
    let broken = again.iter().find(|r| r.model == "broken/m").unwrap();
    assert_eq!(broken.outcome, Outcome::Skipped("breaker open"));
}

#[test]
fn the_canary_command_prints_each_result_and_fails_on_a_failure() {
    let dir = std::env::temp_dir().join(format!("spillway-canary-{}-{}", std::process::id(), fastrand::u32(..)));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("spillway.yaml");
    std::fs::write(&cfg, format!("state:\n  data_dir: {}\n{YAML}", dir.join("data").display())).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(["--config", cfg.to_str().unwrap(), "canary"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("ru @ good/m") && text.contains("passed"), "{text}");
    assert!(text.contains("ru @ bad/m") && text.contains("failed"), "{text}");
    assert!(text.contains("up @ broken/m") && text.contains("error"), "{text}");
    let good = std::fs::read_to_string(&cfg).unwrap().replace(
        "  - { name: up, model: broken/m, prompt: 'ping', check: { contains: ['pong'] }, interval: 1h }\n",
        "",
    );
    let good = good.replace("wrong_script_rate: 1.0", "wrong_script_rate: 0.0");
    std::fs::write(&cfg, good).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(["--config", cfg.to_str().unwrap(), "canary"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}
