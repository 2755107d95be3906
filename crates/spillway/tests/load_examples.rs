//! Every load profile of every config shipped in `examples/`, checked on
//! the wire: for each provider with `load:`, the profiles are copied
//! verbatim into a gateway whose provider is a fake upstream with an
//! `emulated` source; the load is set into each profile's range through the
//! admin API, and the body the upstream receives must carry the profile's
//! system prompt and `max_tokens = ceil(factor × (client max_tokens or
//! default_max_tokens))`. Adding a profile (or an example) adds a case.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

#[allow(unused)]
mod common;

use common::*;
use serde_json::{json, Value};
use serde_yaml_ng::{Mapping, Value as Yaml};
use spillway::config::{LoadProfile, ProviderConfig};
use std::path::PathBuf;

/// `ceil(factor × n)`, at least 1. A product within float noise of an
/// integer counts as that integer (0.3 × 10 is 3, not 4): the SPEC means
/// the arithmetic, not binary rounding.
fn scaled(n: u64, factor: f64) -> u64 {
    let x = n as f64 * factor;
    let r = x.round();
    let v = if (x - r).abs() <= 1e-9 * r.max(1.0) { r } else { x.ceil() };
    (v as u64).max(1)
}

/// A load inside `profiles[i]`'s range.
fn load_inside(profiles: &[LoadProfile], i: usize) -> f64 {
    let lo = if i == 0 { 0.0 } else { profiles[i - 1].below.unwrap() };
    let hi = profiles[i].below.unwrap_or(1.0);
    (lo + hi) / 2.0
}

fn examples() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .collect();
    files.sort();
    files
}

/// A gateway config with only `name`, pointing at `up`, its profiles taken
/// from the example's raw YAML.
fn harness(raw: &Yaml, name: &str, p: &ProviderConfig, up: &FakeUpstream) -> String {
    let raw_load = &raw["providers"][name]["load"];
    let mut load = Mapping::new();
    load.insert("source".into(), "emulated".into());
    load.insert("profiles".into(), raw_load["profiles"].clone());
    if let Some(h) = raw_load.get("hysteresis") {
        load.insert("hysteresis".into(), h.clone());
    }
    let mut provider = Mapping::new();
    provider.insert("kind".into(), "openai".into());
    provider.insert("base_url".into(), up.base_url().into());
    provider.insert("api_key".into(), "test-key".into());
    if let Some(d) = p.default_max_tokens {
        provider.insert("default_max_tokens".into(), u64::from(d).into());
    }
    provider.insert("load".into(), Yaml::Mapping(load));
    let mut providers = Mapping::new();
    providers.insert(name.into(), Yaml::Mapping(provider));
    let mut root = Mapping::new();
    root.insert("server".into(), serde_yaml_ng::from_str("{admin_token: t}").unwrap());
    root.insert("providers".into(), Yaml::Mapping(providers));
    root.insert("cascades".into(), serde_yaml_ng::from_str(&format!("{{c: {{models: [{name}/m]}}}}")).unwrap());
    format!("{}{FAST_HEALTH}", serde_yaml_ng::to_string(&Yaml::Mapping(root)).unwrap())
}

async fn set_load(gw: &TestGateway, provider: &str, load: Value) {
    let resp = client()
        .put(format!("{}/admin/load/{provider}", gw.url))
        .bearer_auth("t")
        .json(&json!({ "load": load }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
}

/// Sends `body` and returns the profile header and what the upstream got.
async fn send(gw: &TestGateway, up: &FakeUpstream, body: Value) -> (String, Value) {
    let resp = gw.post(&body).await;
    assert_eq!(resp.status(), 200);
    let profile = header(&resp, "x-spillway-load-profile").to_owned();
    let _ = resp.text().await;
    (profile, up.requests().pop().unwrap())
}

fn user() -> Value {
    json!({"role": "user", "content": "Hello?"})
}

fn system(text: &str) -> Value {
    json!({"role": "system", "content": text})
}

#[tokio::test]
async fn every_profile_of_every_example_rewrites_what_the_upstream_receives() {
    let mut cases = Vec::new();
    for path in examples() {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        // Secrets get a placeholder; addresses (`*_URL`) their `:-default`.
        let lookup = |name: &str| (!name.ends_with("_URL")).then(|| "placeholder".to_string());
        let config = spillway::config::load_str(&text, Some(&path), &lookup).unwrap_or_else(|e| panic!("{file}:\n{e}"));
        let raw: Yaml = serde_yaml_ng::from_str(&text).unwrap();
        for (name, p) in &config.providers {
            let Some(load) = &p.load else { continue };
            let up = FakeUpstream::start().await;
            let gw = start(&harness(&raw, name, p, &up)).await;
            let model = format!("{name}/m");
            for (i, profile) in load.profiles.iter().enumerate() {
                let case = format!("{file}: {name}/{}", profile.name);
                set_load(&gw, name, Value::Null).await;
                set_load(&gw, name, json!(load_inside(&load.profiles, i))).await;
                let prompt = profile.system_prompt.as_deref().filter(|s| !s.is_empty());
                let factor = profile.max_tokens_factor;

                // 1. Client max_tokens, no system message.
                let (got, sent) =
                    send(&gw, &up, json!({"model": model, "max_tokens": 1000, "messages": [user()]})).await;
                assert_eq!(got, profile.name, "{case}: header");
                let want: Vec<Value> = prompt.map(system).into_iter().chain([user()]).collect();
                assert_eq!(sent["messages"], json!(want), "{case}: system prompt");
                assert_eq!(sent["max_tokens"], json!(factor.map_or(1000, |f| scaled(1000, f))), "{case}: max_tokens");

                // 2. No max_tokens: the provider's default, scaled.
                let (_, sent) = send(&gw, &up, json!({"model": model, "messages": [user()]})).await;
                let want = match (factor, p.default_max_tokens) {
                    (Some(f), Some(d)) => json!(scaled(u64::from(d), f)),
                    _ => Value::Null,
                };
                assert_eq!(sent.get("max_tokens").cloned().unwrap_or(Value::Null), want, "{case}: default_max_tokens");

                // 3. max_completion_tokens and a client system message: the
                // profile's prompt follows it (openai kind takes several).
                let body = json!({"model": model, "max_completion_tokens": 500,
                                  "messages": [system("You are Bob."), user()]});
                let (_, sent) = send(&gw, &up, body).await;
                let want: Vec<Value> =
                    [system("You are Bob.")].into_iter().chain(prompt.map(system)).chain([user()]).collect();
                assert_eq!(sent["messages"], json!(want), "{case}: merged prompt");
                assert_eq!(
                    sent["max_completion_tokens"],
                    json!(factor.map_or(500, |f| scaled(500, f))),
                    "{case}: max_completion_tokens"
                );
                assert!(sent.get("max_tokens").is_none(), "{case}: no max_tokens added");
                cases.push(case);
            }
        }
    }
    eprintln!("checked {} profile(s): {cases:#?}", cases.len());
    assert!(cases.iter().any(|c| c.contains("lazy")), "the examples ship load profiles: {cases:?}");
}
