//! Unit tests of scenario compilation and its errors.

use super::*;

const GATEWAY: &str = r#"
gateway:
  providers:
    free: { kind: mock, models: [ { id: a }, { id: b } ] }
    paid: { kind: mock, models: [ { id: c } ] }
  cascades:
    chat: { models: [free/a, paid/c] }
"#;

fn load(rest: &str) -> Result<Scenario, ConfigErrors> {
    let text = format!("{GATEWAY}{rest}");
    load_str(&text, None, &|_| None)
}

fn paths(e: ConfigErrors) -> Vec<String> {
    e.0.into_iter().map(|e| format!("{}: {}", e.path, e.message)).collect()
}

#[test]
fn a_full_scenario_compiles_and_faults_become_outages() {
    let s = load(
        r#"
duration: 10m
step: 1m
seed: 9
traffic:
  - { cascade: chat, rps: 2, stream: true }
  - { cascade: free/b, rps: 0.5, json: true, from: 1m, until: 9m }
faults:
  - { at: 2m, for: 3m, model: free/a, status: 429 }
  - { at: 6m, for: 1m, provider: free, hang: true }
expect:
  chat: { min_success_rate: 0.99, max_p99: 5s }
"#,
    )
    .unwrap();
    assert_eq!((s.duration, s.step, s.seed), (Duration::from_secs(600), Duration::from_secs(60), 9));
    assert_eq!(s.traffic[1].output, Output::Json);
    assert_eq!((s.traffic[1].from, s.traffic[1].until), (Duration::from_secs(60), Duration::from_secs(540)));
    assert_eq!(s.faults[1].models, vec!["free/a", "free/b"]);
    assert_eq!(s.faults[1].label, "free/* hangs");
    let a = &s.config.providers["free"].models[0];
    let outages = &a.behavior.as_ref().unwrap().outages;
    assert_eq!(outages.len(), 2);
    assert_eq!((outages[0].start, outages[0].status), (Duration::from_secs(120), 429));
    assert_eq!((outages[1].start, outages[1].status), (Duration::from_secs(360), 0));
    let untouched = s.config.providers["paid"].models[0].behavior.as_ref().map_or(0, |b| b.outages.len());
    assert_eq!(untouched, 0, "no fault on paid/c");
    assert_eq!(s.expect["chat"].max_p99, Some(Duration::from_secs(5)));
    assert_eq!(s.step, Duration::from_secs(60));
}

#[test]
fn every_error_is_reported_with_its_path() {
    let errors = paths(
        load(
            r#"
duration: 10 minutes
step: 1ms
traffic:
  - { cascade: nope, rps: 0 }
  - { cascade: chat, rps: 1, from: 5m, until: 2m, schema: { type: 12 } }
faults:
  - { at: 1m, for: 0s, model: free/zzz }
  - { at: 1m, for: 1m, provider: free, status: 200 }
  - { at: 1m, for: 1m, model: free/a, provider: free }
expect:
  other: { min_success_rate: 2 }
colour: blue
"#,
        )
        .unwrap_err(),
    );
    for expected in [
        "colour: unknown field",
        "duration: ",
        "traffic[0].rps: expected requests per second above 0",
        "traffic[0].cascade: `nope` is neither",
        "traffic[1]: `from` must come before `until`",
        "traffic[1].schema: not a valid JSON Schema",
        "faults[0].for: must be longer than 0",
        "faults[0].model: `free/zzz` is not a model",
        "faults[1].status: expected an error status",
        "faults[2]: name either a `model` or a `provider`",
        "expect.other: no traffic goes to this cascade",
        "expect.other.min_success_rate: expected a share between 0 and 1",
    ] {
        assert!(errors.iter().any(|e| e.starts_with(expected)), "missing `{expected}` in {errors:#?}");
    }
}

#[test]
fn a_step_too_short_for_the_report_is_refused() {
    let errors = paths(load("duration: 10m\nstep: 1s\ntraffic: [ { cascade: chat, rps: 1 } ]\n").unwrap_err());
    assert!(errors.iter().any(|e| e.starts_with("step: too short")), "{errors:?}");
}

#[test]
fn real_providers_are_refused() {
    let text = r#"
gateway:
  providers:
    groq: { kind: openai, base_url: "https://api.groq.com/openai/v1", api_key: secret-key }
  cascades:
    chat: { models: [groq/llama] }
duration: 1m
traffic: [ { cascade: chat, rps: 1 } ]
"#;
    let errors = paths(load_str(text, None, &|_| None).unwrap_err());
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("gateway: provider `groq` is kind openai"), "{errors:?}");
    assert!(!errors[0].contains("secret-key"));
}

#[test]
fn inline_config_errors_carry_the_gateway_prefix() {
    let text = r#"
gateway:
  providers: { free: { kind: mock, models: [ { id: a } ] } }
  cascades: { chat: { models: [free/missing] } }
duration: 1m
traffic: [ { cascade: chat, rps: 1 } ]
"#;
    let errors = paths(load_str(text, None, &|_| None).unwrap_err());
    assert!(errors.iter().any(|e| e.starts_with("gateway.cascades.chat.models[0]")), "{errors:?}");
}

#[test]
fn config_and_gateway_are_exclusive_and_one_is_needed() {
    let errors = paths(load_str("duration: 1m\ntraffic: []\n", None, &|_| None).unwrap_err());
    assert!(errors.iter().any(|e| e.starts_with(": give the gateway config either")), "{errors:?}");
    assert!(errors.iter().any(|e| e.starts_with("traffic: needs at least one")), "{errors:?}");
}

#[test]
fn caller_classes_compile_and_their_mistakes_carry_paths() {
    let s = load(
            "duration: 1m\ntraffic:\n  - { cascade: chat, rps: 1, users: 40, class: light }\n  - { cascade: chat, rps: 4, users: 4, class: heavy }\nexpect:\n  chat: { min_class_length_ratio: 1.3 }\n",
        )
        .unwrap();
    assert_eq!((s.traffic[0].users, s.traffic[0].class.as_deref()), (40, Some("light")));
    assert_eq!(s.expect["chat"].min_class_length_ratio, Some(1.3));
    assert_eq!(super::super::classes::user_of(&s.traffic[1], 9).as_deref(), Some("heavy-1"));
    let errors = paths(
            load(
                "duration: 1m\ntraffic:\n  - { cascade: chat, rps: 1, users: 0 }\n  - { cascade: chat, rps: 1, class: light }\nexpect:\n  chat: { min_class_length_ratio: -1 }\n",
            )
            .unwrap_err(),
        );
    for expected in [
        "traffic[0].users: expected 1 to",
        "traffic[1].class: a caller class needs `users`",
        "expect.chat.min_class_length_ratio: expected a number of at least 0",
        "expect.chat.min_class_length_ratio: needs two caller classes",
    ] {
        assert!(errors.iter().any(|e| e.starts_with(expected)), "missing `{expected}` in {errors:#?}");
    }
}

#[test]
fn too_many_requests_are_refused() {
    let errors = paths(load("duration: 7d\ntraffic: [ { cascade: chat, rps: 1000 } ]\n").unwrap_err());
    assert!(errors.iter().any(|e| e.starts_with("traffic: would send about")), "{errors:?}");
}
