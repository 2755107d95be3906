//! The command line says what is true (issue 19 §3, "CLI honesty"): a
//! named config that is missing is an error, a missing admin token is
//! named as such, connection errors keep their cause, `check` reports one
//! error per mistake with values as written, and `discover` says when no
//! cascade uses discovery.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;

use common::*;
use std::path::PathBuf;
use std::process::Command;

/// Runs the binary in `dir` with `SPILLWAY_*` variables cleared (plus `env`).
fn spillway_in(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spillway"));
    cmd.args(args).current_dir(dir).env_remove("SPILLWAY_CONFIG").env_remove("SPILLWAY_ADMIN_TOKEN");
    cmd.env("NO_PROXY", "127.0.0.1").env("no_proxy", "127.0.0.1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

fn tempdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spillway-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A port nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

const MOCK: &str = "providers:\n  m:\n    kind: mock\n    models: [{ id: a }]\ncascades:\n  c:\n    models: [m/a]\n";

#[test]
fn status_and_handoff_with_a_missing_named_config_are_errors() {
    let dir = tempdir("missing");
    for args in [
        &["status", "--config", "nope.yaml"][..],
        &["handoff", "list", "--config", "nope.yaml"],
        &["handoff", "answer", "ho_x", "hi", "--config", "nope.yaml"],
    ] {
        let (code, out) = spillway_in(&dir, args, &[("SPILLWAY_ADMIN_TOKEN", "t")]);
        assert_eq!(code, 1, "{args:?}: {out}");
        assert!(out.contains("nope.yaml: no such config file"), "{args:?}: {out}");
        assert!(!out.contains("127.0.0.1:8080"), "no guessed address: {out}");
    }
    // The same through SPILLWAY_CONFIG.
    let (code, out) =
        spillway_in(&dir, &["status"], &[("SPILLWAY_CONFIG", "gone.yaml"), ("SPILLWAY_ADMIN_TOKEN", "t")]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("gone.yaml: no such config file"), "{out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn no_admin_token_configured_is_said_as_such() {
    let dir = tempdir("notoken");
    std::fs::write(dir.join("g.yaml"), MOCK).unwrap();
    let url = format!("http://127.0.0.1:{}", closed_port());
    for args in [&["status", "--config", "g.yaml"][..], &["handoff", "list", "--config", "g.yaml", "--url", &url]] {
        let (code, out) = spillway_in(&dir, args, &[]);
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("no admin token configured"), "{args:?}: {out}");
        assert!(!out.contains("rejected"), "{out}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn connection_errors_keep_their_cause_and_url_needs_no_demo() {
    let dir = tempdir("refused");
    let url = format!("http://127.0.0.1:{}", closed_port());
    for args in [&["status", "--url", &url][..], &["handoff", "list", "--url", &url]] {
        let (code, out) = spillway_in(&dir, args, &[("SPILLWAY_ADMIN_TOKEN", "t")]);
        assert_eq!(code, 1, "{out}");
        assert!(out.contains(&format!("cannot reach the gateway at {url}")), "{out}");
        assert!(out.to_lowercase().contains("connection refused"), "{args:?}: {out}");
        assert!(!out.contains("demo"), "`--url` reads no config, so no demo notice: {out}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_wrong_token_is_called_rejected_and_a_right_one_works() {
    let gw = start(&format!("server:\n  admin_token: right\n{MOCK}")).await;
    let dir = tempdir("token");
    let url = gw.url.clone();
    let d = dir.clone();
    let (wrong, right) = tokio::task::spawn_blocking(move || {
        (
            spillway_in(&d, &["status", "--url", &url], &[("SPILLWAY_ADMIN_TOKEN", "wrong")]),
            spillway_in(&d, &["status", "--url", &url], &[("SPILLWAY_ADMIN_TOKEN", "right")]),
        )
    })
    .await
    .unwrap();
    assert_eq!(wrong.0, 1);
    assert!(wrong.1.contains("admin token was rejected"), "{}", wrong.1);
    assert_eq!(right.0, 0, "{}", right.1);
    assert!(right.1.contains("Cascade c"), "{}", right.1);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn check_reports_a_bad_provider_kind_once() {
    let dir = tempdir("kind");
    let yaml = "providers:\n  p:\n    kind: opnai\n    base_url: https://api.example.com/v1\ncascades:\n  c:\n    models: [p/a, p/b]\n  d:\n    providers: [p]\n";
    std::fs::write(dir.join("bad.yaml"), yaml).unwrap();
    let (code, out) = spillway_in(&dir, &["check", "--config", "bad.yaml"], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("bad.yaml: 1 error(s)"), "{out}");
    assert!(out.contains("providers.p.kind") && out.contains("unknown kind `opnai`"), "{out}");
    assert!(!out.contains("at least one provider") && !out.contains("unknown provider"), "no follow-on errors: {out}");
    // An undeclared provider is still an error of its own.
    std::fs::write(dir.join("typo.yaml"), MOCK.replace("models: [m/a]", "models: [m/a, n/a]")).unwrap();
    let (code, out) = spillway_in(&dir, &["check", "--config", "typo.yaml"], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("unknown provider `n`"), "{out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn check_prints_values_as_written_in_yaml() {
    let dir = tempdir("values");
    let yaml = "providers:\n  p:\n    kind: openai\n    base_url: https://api.example.com/v1\n    discovery: { format: openai }\ncascades:\n  c:\n    strategy: cheapest_first\n    providers: [p]\n";
    std::fs::write(dir.join("d.yaml"), yaml).unwrap();
    let (code, out) = spillway_in(&dir, &["check", "--config", "d.yaml"], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("strategy=cheapest_first"), "{out}");
    assert!(!out.contains("CheapestFirst"), "{out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn discover_without_discovery_says_no_cascade_uses_it() {
    let dir = tempdir("nodisc");
    std::fs::write(dir.join("g.yaml"), MOCK).unwrap();
    for args in [&["discover", "--config", "g.yaml"][..], &["discover", "--json", "--config", "g.yaml"]] {
        let (code, out) = spillway_in(&dir, args, &[]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("No cascade uses discovery"), "{args:?}: {out}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn discover_names_the_listing_it_waits_for_and_keeps_the_cause_of_a_failure() {
    let slow = FakeUpstream::start().await;
    let listing = serde_json::json!({"object": "list", "data": [
        {"id": "llama-3.3-70b", "object": "model", "active": true, "context_window": 131072}]});
    slow.route("/v1/models", Reply::json(listing).delay(std::time::Duration::from_millis(4500)));
    let dir = tempdir("discover-wait");
    let yaml = format!(
        "state:\n  data_dir: {}\nproviders:\n  slowpoke:\n    kind: openai\n    base_url: {}\n    discovery: {{ enabled: true, format: groq }}\n    price_per_1m: {{ input: 0, output: 0 }}\n  gone:\n    kind: openai\n    base_url: http://127.0.0.1:{}/v1\n    discovery: {{ enabled: true }}\ncascades:\n  chat:\n    providers: [slowpoke, gone]\n",
        dir.join("data").display(),
        slow.base_url(),
        closed_port()
    );
    std::fs::write(dir.join("g.yaml"), yaml).unwrap();
    let d = dir.clone();
    let (code, out) =
        tokio::task::spawn_blocking(move || spillway_in(&d, &["discover", "--config", "g.yaml"], &[])).await.unwrap();
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("waiting for slowpoke (2 s)"), "the slow listing is named while it is awaited:\n{out}");
    assert!(
        !out.contains("waiting for gone") && !out.contains("slowpoke, gone"),
        "a failed one is not waited on:\n{out}"
    );
    assert!(out.to_lowercase().contains("refused"), "the refused listing keeps its cause:\n{out}");
    assert!(out.contains("llama-3.3-70b"), "{out}");
    let _ = std::fs::remove_dir_all(dir);
}
