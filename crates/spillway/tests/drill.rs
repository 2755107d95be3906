//! `spillway drill`: scenarios run on the real engine in virtual time, and
//! the report tells who served what, when, how fast and at what cost.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: fail loudly

use spillway::drill::{self, report::Report, Scenario};
use std::process::Command;

fn scenario(text: &str) -> Scenario {
    drill::load_str(text, None, &|_| None).unwrap_or_else(|e| panic!("invalid scenario: {e}"))
}

fn report(s: &Scenario) -> Report {
    drill::report::build(s, &drill::run(s).expect("the drill runs"))
}

const TWO_TIERS: &str = r#"
gateway:
  providers:
    main:
      kind: mock
      models: [ { id: fast, price_per_1m: { input: 1, output: 2 }, behavior: { latency: 100ms } } ]
    spare:
      kind: mock
      models: [ { id: slow, price_per_1m: { input: 10, output: 20 }, behavior: { latency: 300ms } } ]
  health:
    breaker: { consecutive_failures: 3, open_for: 20s, min_requests: 1000 }
  cascades:
    chat: { models: [main/fast, spare/slow] }
duration: 4m
step: 30s
traffic:
  - { cascade: chat, rps: 2 }
faults:
  - { at: 1m, for: 1m, model: main/fast, status: 503 }
"#;

#[test]
fn a_fault_moves_traffic_to_the_reserve_and_back_when_it_heals() {
    let r = report(&scenario(TWO_TIERS));
    let chat = &r.cascades[0];
    assert_eq!(chat.requests, 480, "2 requests a second for 4 minutes");
    assert_eq!(chat.success_rate, 1.0, "the reserve covers the whole outage");
    let share = |step: usize, model: &str| chat.steps[step].served[model];
    // Before the fault: the first model, at its own latency (virtual time).
    assert_eq!(share(0, "main/fast"), 1.0);
    assert!((chat.steps[0].p50_s - 0.1).abs() < 0.005, "p50 {}", chat.steps[0].p50_s);
    // Inside it (1:30–2:00, after the breaker opened): all on the reserve, at its latency.
    assert_eq!(share(3, "spare/slow"), 1.0);
    assert!((chat.steps[3].p50_s - 0.3).abs() < 0.005, "p50 {}", chat.steps[3].p50_s);
    // Healed: the breaker's probe found the first model again.
    assert_eq!(share(7, "main/fast"), 1.0);
    assert_eq!(r.faults[0].label, "main/fast 503");
    // Cost: usage times each model's price, and the reserve is dearer.
    assert!(chat.cost_usd > 0.0);
    assert!(r.alerts.iter().any(|a| a.kind == "breaker_opened" && a.at_s >= 60.0 && a.at_s < 70.0), "{:?}", r.alerts);
    assert!(r.alerts.iter().any(|a| a.kind == "breaker_closed" && a.at_s >= 120.0), "{:?}", r.alerts);
}

#[test]
fn the_same_seed_gives_the_same_report() {
    let text = r#"
gateway:
  providers:
    m:
      kind: mock
      models:
        - { id: coin, behavior: { latency: 50ms, error_rate: 0.5 } }
        - { id: sure, behavior: { latency: 200ms } }
  health: { breaker: { consecutive_failures: 1000, failure_rate: 1.0 } }
  cascades:
    chat: { models: [m/coin, m/sure] }
duration: 2m
seed: 42
traffic:
  - { cascade: chat, rps: 5 }
  - { cascade: chat, rps: 1, stream: true }
"#;
    let s = scenario(text);
    let as_json = |mut r: Report| {
        r.wall_s = 0.0;
        serde_json::to_value(r).unwrap()
    };
    let (a, b) = (as_json(report(&s)), as_json(report(&s)));
    assert_eq!(a, b);
    // The dice did roll: both models served.
    let served = &a["cascades"][0]["served"];
    assert!(served["m/coin"].as_f64().unwrap() > 0.1 && served["m/sure"].as_f64().unwrap() > 0.1, "{served}");
}

#[test]
fn handoffs_and_failures_are_told_apart() {
    let text = r#"
gateway:
  providers:
    m: { kind: mock, models: [ { id: a, behavior: { outages: [ { start: 0s, duration: 1h, status: 500 } ] } } ] }
  cascades:
    helpdesk: { models: [m/a], handoff: true }
    bare: { models: [m/a] }
duration: 30s
traffic:
  - { cascade: helpdesk, rps: 1 }
  - { cascade: bare, rps: 1 }
expect:
  bare: { min_success_rate: 0.5 }
"#;
    let r = report(&scenario(text));
    let (helpdesk, bare) = (&r.cascades[0], &r.cascades[1]);
    assert_eq!((helpdesk.handoff_rate, helpdesk.success_rate), (1.0, 0.0));
    assert_eq!(helpdesk.served["handoff"], 1.0);
    assert_eq!(helpdesk.steps[0].tiers["handoff"], 1.0, "tiers step by step too");
    assert_eq!(bare.failed.get("all_models_failed"), Some(&30), "{:?}", bare.failed);
    assert_eq!(bare.valid_rate, None, "no answers, no validity");
    assert!(!r.passed());
    assert!(r.text("t").contains("FAIL  bare: success rate ≥ 50.0% (got 0.0%)"), "{}", r.text("t"));
}

#[test]
fn json_answers_are_repaired_and_counted_valid_and_streams_report_their_first_byte() {
    let text = r#"
gateway:
  providers:
    m:
      kind: mock
      models:
        - { id: fenced, behavior: { latency: 10ms, json: fenced } }
        - { id: talker, behavior: { latency: 10ms, first_token: 100ms, tokens_per_s: 20 } }
  cascades:
    extract: { models: [m/fenced] }
    chat: { models: [m/talker] }
duration: 20s
traffic:
  - { cascade: extract, rps: 1, json: true }
  - { cascade: chat, rps: 1, stream: true }
"#;
    let s = scenario(text);
    let run = drill::run(&s).unwrap();
    let r = drill::report::build(&s, &run);
    assert_eq!((r.cascades[0].success_rate, r.cascades[0].valid_rate), (1.0, Some(1.0)));
    assert_eq!(r.cascades[1].success_rate, 1.0);
    let streamed: Vec<_> = run.samples.iter().filter(|x| x.traffic == 1).collect();
    assert!(streamed.iter().all(|x| x.first_byte < x.latency), "tokens arrive after the first byte");
}

#[test]
fn every_example_scenario_compiles() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/drills");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if let Err(e) = drill::load_file(&path) {
            panic!("{}: {e}", path.display());
        }
        seen += 1;
    }
    assert!(seen >= 1);
}

#[test]
fn the_command_prints_the_report_writes_the_chart_and_fails_on_a_missed_mark() {
    let dir = std::env::temp_dir().join(format!("spillway-drill-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("chart.svg");
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/drills/outage.yaml");
    let out = Command::new(env!("CARGO_BIN_EXE_spillway")).args(["drill", demo, "--svg"]).arg(&svg).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("Drill outage.yaml: 10:00 of traffic"), "{stdout}");
    assert!(stdout.contains("fault 2:00–5:00  paid/reserve-pro 503"), "{stdout}");
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg") && chart.trim_end().ends_with("</svg>"));
    assert!(chart.contains("paid/reserve-pro") && chart.contains("fault window"));

    // A missed pass mark: exit 1. An invalid scenario: exit 1 with the path of each error.
    let strict = dir.join("strict.yaml");
    std::fs::write(
        &strict,
        format!(
            "config: {}\nduration: 1m\ntraffic: [ {{ cascade: chat, rps: 1 }} ]\nexpect: {{ chat: {{ max_p99: 1ms }} }}\n",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.yaml")
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(["drill", "--json", "--svg"])
        .arg(dir.join("strict.svg"))
        .arg(&strict)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["checks"][0]["passed"], false);
    let broken = dir.join("broken.yaml");
    std::fs::write(&broken, "config: nowhere.yaml\nduration: soon\ntraffic: []\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_spillway")).arg("drill").arg(&broken).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout.contains("config: ") && stdout.contains("nowhere.yaml"), "{stdout}");
    assert!(stdout.contains("duration: "), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn requests_no_model_was_tried_for_are_failures_without_an_attempt() {
    // The only model fails; its breaker opens; then requests find nothing
    // to try and fail at once, with no upstream call.
    let text = r#"
gateway:
  providers:
    m: { kind: mock, models: [ { id: a, behavior: { outages: [ { start: 0s, duration: 1h, status: 500 } ] } } ] }
  health: { breaker: { consecutive_failures: 2, open_min: 1m, open_for: 1m } }
  cascades:
    chat: { models: [m/a] }
duration: 30s
traffic:
  - { cascade: chat, rps: 1 }
"#;
    let s = scenario(text);
    let run = drill::run(&s).unwrap();
    let r = drill::report::build(&s, &run);
    let c = &r.cascades[0];
    let skipped = c.failed_without_attempt;
    assert!(skipped >= 25, "{skipped}");
    assert_eq!(c.failed.get("all_models_failed"), Some(&30), "{:?}", c.failed);
    let (unattempted, tried): (Vec<_>, Vec<_>) = run.samples.iter().partition(|x| x.unattempted);
    assert!(unattempted.iter().all(|x| x.attempts == 0), "{unattempted:?}");
    assert!(tried.len() == 30 - skipped && tried.iter().all(|x| x.attempts >= 1), "{tried:?}");
    assert!(c.attempts_mean < 0.2, "skips are no calls: {}", c.attempts_mean);
    assert_eq!(c.success_rate, 0.0);
    assert!(r.text("t").contains(&format!("failed without an attempt: {skipped}")), "{}", r.text("t"));
}

#[test]
fn the_report_has_means_ranks_and_the_chart_shows_volume_faults_and_latency() {
    let more = "  - { cascade: chat, rps: 2 }\n  - { cascade: chat, rps: 2, from: 3m }\n";
    let s = scenario(&TWO_TIERS.replace("  - { cascade: chat, rps: 2 }\n", more));
    let r = report(&s);
    let chat = &r.cascades[0];
    // Mean beside the percentiles; the reserve's answers are rank 2.
    assert!(chat.latency_s.mean > 0.1 && chat.latency_s.mean < 0.3, "{:?}", chat.latency_s);
    assert!(chat.ranks["2"] > 0.1 && (chat.ranks["1"] + chat.ranks["2"] - 1.0).abs() < 1e-9, "{:?}", chat.ranks);
    assert!(chat.served_in_faults["spare/slow"] > 0.8, "{:?}", chat.served_in_faults);
    assert_eq!(chat.paid_share, 1.0);
    let month = chat.cost_usd * 30.0 * 24.0 * 60.0 / 4.0;
    assert!((chat.cost_per_month_usd - month).abs() < 1e-6 * month, "{} vs {month}", chat.cost_per_month_usd);
    assert!((chat.latency_in_faults_s.unwrap() - 0.3).abs() < 0.05);
    let svg = drill::svg::render(&r, "t");
    // Volume: the last minute has twice the requests, so its bars reach the
    // top and the first minute's only half way.
    assert_eq!(chat.steps[7].requests, 2 * chat.steps[0].requests);
    assert!(svg.contains("main/fast: 60 requests") && svg.contains("main/fast: 120 requests"), "{svg}");
    assert!(svg.contains(r##"height="60.0" fill="#2f6fb0"><title>0:00 main/fast"##), "{svg}");
    // The fault is labelled in the image, and latency is a line.
    assert!(svg.contains(">main/fast 503</text>"), "{svg}");
    assert!(svg.contains("<polyline") && svg.contains("mean latency"), "{svg}");
}

/// Issue 24 §11: a self-hosted model without a price is `unpriced` (its
/// answers cost $0), not paid; no share prints as `-0.0%`; and a
/// discovered cascade's report shows how discovery built it and what it
/// left out, and why.
#[test]
fn the_report_tells_unpriced_from_paid_and_shows_the_built_cascade() {
    let text = r#"
gateway:
  providers:
    local:
      kind: mock
      models: [ { id: t-lite, behavior: { latency: 100ms } } ]
    groq:
      kind: mock
      listing:
        - { id: llama-3.3-70b-versatile, context: 131072, price_per_1m: { input: 0, output: 0 } }
        - { id: qwen3-32b, context: 131072 }
    openrouter:
      kind: mock
      listing:
        - { id: "google/gemma-4-27b-it", context: 131072, price_per_1m: { input: 0.1, output: 0.14 } }
        - { id: "meta-llama/llama-3.3-70b-instruct:free", context: 131072, free: true }
  cascades:
    self_hosted: { models: [local/t-lite] }
    free:
      providers: [groq, openrouter]
      preferred: [groq/llama-3.3-70b-versatile, openrouter/google/gemma-4-27b-it]
      filters: { max_cost_per_1m: 0.5 }
duration: 1m
step: 10s
traffic:
  - { cascade: self_hosted, rps: 1 }
  - { cascade: free, rps: 0.5 }
"#;
    let s = scenario(text);
    let r = report(&s);
    let local = &r.cascades[0];
    assert_eq!((local.free_share, local.paid_share, local.unpriced_share), (0.0, 0.0, 1.0));
    assert_eq!((local.failed_rate, local.cost_usd), (0.0, 0.0));
    assert!(local.discovered.is_none(), "a fixed chain");
    let out = r.text("t");
    assert!(out.contains("free 0.0%   paid 0.0%   unpriced 100.0%   last resort 0.0%"), "{out}");
    assert!(out.contains("failed 0.0%") && !out.contains("-0.0%"), "{out}");

    let free = &r.cascades[1];
    let built = free.discovered.as_ref().unwrap();
    let models: Vec<(&str, &str)> = built.models.iter().map(|m| (m.model.as_str(), m.price.as_str())).collect();
    assert_eq!(
        models,
        [
            ("groq/llama-3.3-70b-versatile", "free"),
            ("openrouter/meta-llama/llama-3.3-70b-instruct:free", "free"),
            ("openrouter/google/gemma-4-27b-it", "$0.14/M")
        ]
    );
    assert_eq!(built.models[2].reason, "preferred #2");
    assert_eq!(
        built.left_out,
        ["groq/qwen3-32b is left out: price unknown — set providers.groq.price_per_1m or a models: hint"]
    );
    assert!(out.contains("built by discovery:"), "{out}");
    assert!(out.contains("left out: groq/qwen3-32b is left out: price unknown"), "{out}");
}
