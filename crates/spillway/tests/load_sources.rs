//! Measured load sources against real endpoints: vLLM `/metrics` in both
//! metric generations and with several models, a source that starts
//! failing (stale → first profile), in-flight counting, token velocity,
//! and NVML on a machine that may have no driver.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

#[allow(unused)]
mod common;

use common::*;
use serde_json::Value;
use std::time::Duration;

const PROFILES: &str = "
      profiles:
        - { name: normal, below: 0.75 }
        - { name: tired, below: 0.90, system_prompt: Answer briefly., max_tokens_factor: 0.7 }
        - { name: lazy, system_prompt: One line., max_tokens_factor: 0.3 }
";

fn config(up: &FakeUpstream, source: &str) -> String {
    format!(
        "server:\n  admin_token: t\nproviders:\n{}    load:\n{source}      interval: 20ms\n{PROFILES}{FAST_HEALTH}cascades:\n  chat:\n    models: [local/m]\n",
        openai_provider("local", up),
    )
}

fn fixture(name: &str) -> String {
    let path = format!("{}/testdata/load/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn metrics_reply(text: &str) -> Reply {
    Reply::raw(200, "text/plain; version=0.0.4", text.to_owned())
}

async fn snapshot(gw: &TestGateway) -> Value {
    let resp = client().get(format!("{}/admin/load", gw.url)).bearer_auth("t").send().await.unwrap();
    let v: Value = resp.json().await.unwrap();
    v["providers"][0].clone()
}

/// Polls the provider's snapshot until `cond` holds (5 s at most).
async fn until(gw: &TestGateway, what: &str, cond: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..500 {
        let s = snapshot(gw).await;
        if cond(&s) {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: last snapshot {}", snapshot(gw).await);
}

fn load_is(s: &Value, want: f64) -> bool {
    s["load"].as_f64().is_some_and(|l| (l - want).abs() < 1e-9)
}

#[tokio::test]
async fn vllm_metrics_fixtures_both_generations_and_several_models() {
    let up = FakeUpstream::start().await;
    up.route("/metrics", metrics_reply(&fixture("vllm_idle_nan.prom")));
    let source = format!("      source: vllm_metrics\n      url: {}/metrics\n", up.origin());
    let gw = start(&config(&up, &source)).await;
    let cases = [
        ("vllm_v1_two_engines.prom", 0.61, "normal"),
        ("vllm_v0_gpu_cache.prom", 0.75, "tired"),
        ("vllm_multi_model.prom", 0.9, "lazy"),
        ("vllm_both_generations.prom", 0.33, "normal"),
        ("vllm_idle_nan.prom", 0.0, "normal"),
    ];
    for (file, load, profile) in cases {
        up.route("/metrics", metrics_reply(&fixture(file)));
        let s = until(&gw, file, |s| load_is(s, load)).await;
        assert_eq!(s["profile"], profile, "{file}");
        assert_eq!(s["stale"], false);
    }
}

#[tokio::test]
async fn a_failing_source_goes_stale_and_requests_get_the_first_profile() {
    let up = FakeUpstream::start().await;
    up.route("/metrics", metrics_reply(&fixture("vllm_multi_model.prom")));
    let source = format!("      source: vllm_metrics\n      url: {}/metrics\n", up.origin());
    let gw = start(&config(&up, &source)).await;
    until(&gw, "lazy", |s| s["profile"] == "lazy").await;
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-load-profile"), "lazy");

    up.route("/metrics", Reply::error(500, "boom", "metrics broke"));
    let s = until(&gw, "stale", |s| s["stale"] == true).await;
    assert_eq!((s["profile"].as_str(), s["load"].is_null()), (Some("normal"), true));
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-load-profile"), "normal");
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains(r#"spillway_load_stale{provider="local"} 1"#), "{metrics}");

    // A good scrape recovers.
    up.route("/metrics", metrics_reply(&fixture("vllm_v0_gpu_cache.prom")));
    let s = until(&gw, "recovered", |s| s["stale"] == false && load_is(s, 0.75)).await;
    assert_eq!(s["profile"], "tired");
}

#[tokio::test]
async fn inflight_is_the_gateways_own_attempts_over_capacity() {
    let up = FakeUpstream::start().await;
    up.set_default(Reply::text("slow").delay(Duration::from_millis(600)));
    let gw = start(&config(&up, "      source: inflight\n      capacity: 2\n")).await;
    until(&gw, "idle", |s| load_is(s, 0.0)).await;
    let body = chat("chat", false);
    let (a, b, c) = tokio::join!(gw.post(&body), gw.post(&body), async {
        let s = until(&gw, "two in flight", |s| load_is(s, 1.0)).await;
        assert_eq!(s["profile"], "lazy");
        let resp = gw.post(&body).await;
        header(&resp, "x-spillway-load-profile").to_owned()
    });
    assert_eq!((a.status().as_u16(), b.status().as_u16()), (200, 200));
    assert_eq!(c, "lazy");
    until(&gw, "drained", |s| load_is(s, 0.0)).await;
}

#[tokio::test]
async fn token_velocity_measures_what_the_provider_generates() {
    let up = FakeUpstream::start().await;
    let mut answer = test_upstreams::reply::completion("many tokens");
    answer["usage"] = serde_json::json!({"prompt_tokens": 5, "completion_tokens": 10000, "total_tokens": 10005});
    up.set_default(Reply::json(answer));
    let gw = start(&config(&up, "      source: token_velocity\n      capacity: 100\n")).await;
    until(&gw, "idle", |s| load_is(s, 0.0)).await;
    assert_eq!(gw.post(&chat("chat", false)).await.status(), 200);
    let s = until(&gw, "saturated", |s| load_is(s, 1.0)).await;
    assert_eq!(s["profile"], "lazy");
    assert_eq!(s["source"], "token_velocity");
}

#[tokio::test]
async fn nvml_without_a_driver_still_starts_with_the_load_unknown() {
    let up = FakeUpstream::start().await;
    let gw = start(&config(&up, "      source: nvml\n      devices: [0]\n")).await;
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(resp.status(), 200);
    // Without a driver: unknown, then stale after three intervals. With
    // one (a GPU runner): a real reading in 0..=1.
    let s = until(&gw, "settled", |s| s["stale"] == true || s["load"].is_number()).await;
    if s["stale"] == true {
        assert_eq!((s["profile"].as_str(), s["load"].is_null()), (Some("normal"), true));
    } else {
        assert!((0.0..=1.0).contains(&s["load"].as_f64().unwrap()));
    }
}
