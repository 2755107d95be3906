//! The config file's contract: every shipped example compiles, errors come
//! with YAML paths, secrets never print, and the editor schema is current.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

use std::path::Path;
use std::process::Command;

fn spillway(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_spillway")).args(args).env_remove("SPILLWAY_CONFIG").output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

fn repo(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_example_passes_check() {
    let dir = repo("examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let (code, out) = spillway(&["check", "--config", path.to_str().unwrap()]);
            assert_eq!(code, 0, "{}:\n{out}", path.display());
            assert!(out.contains("Config OK"), "{out}");
            seen += 1;
        }
    }
    assert!(seen >= 1);
}

#[test]
fn check_prints_every_error_with_its_path_and_exits_1() {
    let dir = tempdir();
    let file = dir.join("bad.yaml");
    std::fs::write(
        &file,
        "server:\n  listen: nope\n  bogus: 1\n  workers: 0\nproviders:\n  vllm-box:\n    kind: openai\n    api_key: ${SPILLWAY_TEST_SURELY_UNSET_VAR}\ncascades:\n  extraction:\n    models: [vllm-box/a, nope/b]\n    filters: { max_cost_per_1m: cheap }\n",
    )
    .unwrap();
    let (code, out) = spillway(&["check", "--config", file.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    for needle in [
        "server.bogus: unknown field `bogus`",
        "server.listen: expected host:port",
        "server.workers: must be greater than 0",
        "providers.vllm-box.api_key: environment variable SPILLWAY_TEST_SURELY_UNSET_VAR is not set",
        "providers.vllm-box.base_url: required for kind `openai`",
        "cascades.extraction.models[1]: unknown provider `nope`",
        "cascades.extraction.filters.max_cost_per_1m: invalid type: string \"cheap\", expected f64",
        "cascades.extraction.filters: a cascade has either `models`",
    ] {
        assert!(out.contains(needle), "missing `{needle}` in:\n{out}");
    }
}

#[test]
fn the_fault_rules_are_checked_with_their_paths() {
    let dir = tempdir();
    let file = dir.join("faults.yaml");
    std::fs::write(
        &file,
        "providers:\n  m:\n    kind: mock\n    models: [{ id: a }]\nhealth:\n  retries: { on_status: [503, 404], wait_retry_after_up_to: soon }\ncascades:\n  c:\n    models: [m/a]\n",
    )
    .unwrap();
    let (code, out) = spillway(&["check", "--config", file.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    for needle in [
        "health.retries.on_status[1]: 404 is not a 5xx status",
        "health.retries.wait_retry_after_up_to: invalid duration `soon`",
    ] {
        assert!(out.contains(needle), "missing `{needle}` in:\n{out}");
    }
    let good = dir.join("good.yaml");
    std::fs::write(
        &good,
        "providers:\n  m:\n    kind: mock\n    models: [{ id: a }]\nhealth:\n  retries: { on_status: [500, 502, 503], wait_retry_after_up_to: 2s }\n  streams: { max_skipped_events: 0 }\ncascades:\n  c:\n    models: [m/a]\n",
    )
    .unwrap();
    let (code, out) = spillway(&["check", "--config", good.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn check_never_prints_secrets() {
    let dir = tempdir();
    let file = dir.join("secret.yaml");
    std::fs::write(
        &file,
        "server:\n  api_keys: [client-secret-123]\n  admin_token: admin-secret-456\nstate:\n  backend: redis\n  redis_url: redis://default:redis-secret-111@127.0.0.1:6379/0\nproviders:\n  groq:\n    kind: openai\n    base_url: https://api.groq.com/openai/v1\n    api_key: gsk-secret-789\n    headers: { X-Key: header-secret-000 }\n  proxied:\n    kind: openai\n    base_url: https://user:url-secret-222@proxy.example/v1?key=query-secret-333\ncascades:\n  c:\n    models: [groq/m, proxied/m]\n",
    )
    .unwrap();
    let (code, out) = spillway(&["check", "--config", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("***"));
    assert!(out.contains("base_url=https://***@proxy.example/v1?***"), "{out}");
    assert!(out.contains("redis_url=redis://***@127.0.0.1:6379/0"), "{out}");
    for secret in [
        "client-secret-123",
        "admin-secret-456",
        "gsk-secret-789",
        "header-secret-000",
        "redis-secret-111",
        "url-secret-222",
        "query-secret-333",
    ] {
        assert!(!out.contains(secret), "{secret} leaked:\n{out}");
    }
}

#[test]
fn usage_errors_exit_2() {
    let (code, _) = spillway(&["no-such-command"]);
    assert_eq!(code, 2);
}

#[test]
fn editor_schema_is_current() {
    let path = repo("docs/spillway.schema.json");
    let fresh = spillway::config::json_schema();
    if std::env::var_os("SPILLWAY_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == fresh,
        "docs/spillway.schema.json is stale: run `SPILLWAY_UPDATE_SCHEMA=1 cargo test -p spillway --test config`"
    );
    // It describes the sections of SPEC §4.
    let v: serde_json::Value = serde_json::from_str(&fresh).unwrap();
    for section in [
        "server",
        "state",
        "providers",
        "health",
        "discovery",
        "cascades",
        "prompts",
        "escalation",
        "alerts",
        "handoff",
    ] {
        assert!(v["properties"].get(section).is_some(), "{section} missing from the schema");
    }
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("spillway-test-{}-{}", std::process::id(), fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    assert!(Path::new(&dir).exists());
    dir
}
