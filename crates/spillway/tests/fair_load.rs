//! A saturated GPU degrades the heaviest callers first, through the
//! composition root over HTTP: under the same load state, a caller above
//! its fair share of the self-hosted provider's recent traffic gets the
//! profile the load calls for, a light caller the one before it — end
//! users without keys, virtual keys, streamed and whole — and with
//! `fairness.load_profiles: false` everyone gets the same one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

#[allow(unused)]
mod common;

use common::*;
use serde_json::{json, Value};

/// `local`: a mock whose full answer is 100 tokens, emulated load, the
/// seed's three profiles (tired ×0.7, lazy ×0.3 of `default_max_tokens`).
fn config(extra: &str) -> String {
    format!(
        "server:\n  admin_token: t\nproviders:\n  local:\n    kind: mock\n    default_max_tokens: 100\n    models: [{{ id: t-lite, behavior: {{ reply_tokens: 100 }} }}]\n    load:\n      source: emulated\n      profiles:\n        - {{ name: normal, below: 0.75 }}\n        - {{ name: tired, below: 0.90, system_prompt: Answer briefly., max_tokens_factor: 0.7 }}\n        - {{ name: lazy, system_prompt: One line., max_tokens_factor: 0.3 }}\n{FAST_HEALTH}cascades:\n  chat:\n    models: [local/t-lite]\n{extra}"
    )
}

async fn set_load(gw: &TestGateway, load: f64) {
    let resp = client()
        .put(format!("{}/admin/load/local", gw.url))
        .bearer_auth("t")
        .header("content-type", "application/json")
        .body(json!({ "load": load }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

/// Who sends: an end user (body `user`) or a virtual key's secret.
#[derive(Clone, Copy)]
enum From<'a> {
    User(&'a str),
    Key(&'a str),
}

/// One request; (the profile it was served under, its completion tokens).
async fn ask(gw: &TestGateway, from: From<'_>, stream: bool) -> (String, u64) {
    let mut body = chat("chat", stream);
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    let mut req = client().post(format!("{}/v1/chat/completions", gw.url));
    match from {
        From::User(u) => body["user"] = json!(u),
        From::Key(k) => req = req.bearer_auth(k),
    }
    let resp = req.json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let profile = header(&resp, "x-spillway-load-profile").to_string();
    let tokens = if stream {
        let events = sse_events(resp).await;
        assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
        events
            .iter()
            .filter_map(|e| serde_json::from_str::<Value>(e).ok())
            .find_map(|v| v["usage"]["completion_tokens"].as_u64())
            .unwrap()
    } else {
        let v: Value = resp.json().await.unwrap();
        v["usage"]["completion_tokens"].as_u64().unwrap()
    };
    (profile, tokens)
}

/// Traffic before the load rises: `heavy` sends twelve requests, each
/// light caller one.
async fn history(gw: &TestGateway, heavy: From<'_>, light: &[From<'_>]) {
    for _ in 0..12 {
        ask(gw, heavy, false).await;
    }
    for l in light {
        ask(gw, *l, false).await;
    }
}

/// Under loads 0.5, 0.8 and 0.95, streamed and whole: what `heavy` and
/// `light` get.
async fn under_rising_load(gw: &TestGateway, heavy: From<'_>, light: From<'_>) -> Vec<[(String, u64); 2]> {
    let mut seen = Vec::new();
    for load in [0.5, 0.8, 0.95] {
        set_load(gw, load).await;
        for stream in [false, true] {
            seen.push([ask(gw, heavy, stream).await, ask(gw, light, stream).await]);
        }
    }
    seen
}

fn served(profile: &str, tokens: u64) -> (String, u64) {
    (profile.to_string(), tokens)
}

/// What fair degradation gives: the heavy caller the load's profile, the
/// light one the profile before it (twice each: whole, then streamed).
fn fair() -> Vec<[(String, u64); 2]> {
    let rows = [
        [served("normal", 100), served("normal", 100)],
        [served("tired", 70), served("normal", 100)],
        [served("lazy", 30), served("tired", 70)],
    ];
    rows.iter().flat_map(|r| [r.clone(), r.clone()]).collect()
}

#[tokio::test]
async fn a_heavy_end_user_gets_the_lazier_profile_and_a_light_one_keeps_the_fuller() {
    let gw = start(&config("")).await;
    let light = ["light-0", "light-1", "light-2", "light-3"].map(From::User);
    history(&gw, From::User("heavy"), &light).await;
    let seen = under_rising_load(&gw, From::User("heavy"), From::User("light-0")).await;
    assert_eq!(seen, fair());
    // Relieved under tired and lazy (under normal there is nothing to relieve).
    assert_eq!(gw.metric(r#"spillway_fair_load_relief_total{provider="local"}"#).await, 4.0);
    // A request naming no caller is neither counted nor relieved.
    let mut anonymous = chat("chat", false);
    anonymous["max_tokens"] = json!(100);
    let resp = gw.post(&anonymous).await;
    assert_eq!(header(&resp, "x-spillway-load-profile"), "lazy");
}

#[tokio::test]
async fn a_heavy_virtual_key_gets_the_lazier_profile_and_light_keys_keep_the_fuller() {
    let keys = "keys:\n  - { id: big, key: sk-big-secret-1 }\n  - { id: s1, key: sk-s1-secret-11 }\n  - { id: s2, key: sk-s2-secret-22 }\n  - { id: s3, key: sk-s3-secret-33 }\n";
    let gw = start(&config(keys)).await;
    let light = ["sk-s1-secret-11", "sk-s2-secret-22", "sk-s3-secret-33"].map(From::Key);
    history(&gw, From::Key("sk-big-secret-1"), &light).await;
    let seen = under_rising_load(&gw, From::Key("sk-big-secret-1"), From::Key("sk-s1-secret-11")).await;
    assert_eq!(seen, fair());
}

#[tokio::test]
async fn without_fair_degradation_everyone_gets_the_same_profile() {
    let gw = start(&config("fairness: { load_profiles: false }\n")).await;
    let light = ["light-0", "light-1", "light-2", "light-3"].map(From::User);
    history(&gw, From::User("heavy"), &light).await;
    let seen = under_rising_load(&gw, From::User("heavy"), From::User("light-0")).await;
    let alike = [served("normal", 100), served("tired", 70), served("lazy", 30)];
    let want: Vec<[(String, u64); 2]> =
        alike.iter().flat_map(|s| [[s.clone(), s.clone()], [s.clone(), s.clone()]]).collect();
    assert_eq!(seen, want);
    assert_eq!(gw.metric(r#"spillway_fair_load_relief_total{provider="local"}"#).await, 0.0);
}

#[tokio::test]
async fn callers_sending_alike_are_degraded_alike() {
    let gw = start(&config("")).await;
    let users = ["a", "b", "c", "d"].map(From::User);
    for _ in 0..4 {
        for u in users {
            ask(&gw, u, false).await;
        }
    }
    set_load(&gw, 0.8).await;
    for u in users {
        assert_eq!(ask(&gw, u, true).await, served("tired", 70));
    }
}
