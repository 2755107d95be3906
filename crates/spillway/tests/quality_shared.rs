//! Quality demotion shared through Redis: two gateways on one store; the
//! answers one of them judged demote the model on the other too, which
//! then sends its traffic to the healthy model without judging a single
//! bad answer itself — and the restoration travels the same way.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;
mod redis_support;

use common::*;
use redis_support::{any_redis, eventually, unique_prefix};
use serde_json::json;
use std::time::Duration;

fn yaml(url: &str, prefix: &str, name: &str) -> String {
    let dir =
        std::env::temp_dir().join(format!("spillway-quality-{name}-{}-{}", std::process::id(), fastrand::u32(..)));
    format!(
        "server:\n  admin_token: adm\nstate:\n  backend: redis\n  redis_url: {url}\n  key_prefix: \"{prefix}\"\n  data_dir: {}\n\
providers:\n  bad:\n    kind: mock\n    models: [ {{ id: m, behavior: {{ wrong_script_rate: 1.0 }} }} ]\n  good:\n    kind: mock\n    models: [ {{ id: m, behavior: {{ reply: 'Хороший ответ на русском языке, по существу.' }} }} ]\n\
cascades:\n  pair:\n    models: [bad/m, good/m]\n    quality: {{ min_answers: 3, window: 10, demote_for: 10m }}\n",
        dir.display()
    )
}

async fn ask(gw: &TestGateway) -> String {
    let body = json!({"model": "pair", "messages": [{"role": "user", "content": "Как работает кэширование?"}]});
    let resp = gw.post(&body).await;
    assert_eq!(resp.status(), 200);
    header(&resp, "x-spillway-model").to_string()
}

fn demoted(gw: &TestGateway) -> bool {
    gw.state.gateway.load().health.model("bad/m").quality.demoted_until().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demotion_made_by_one_instance_moves_the_other_too() {
    let Some((url, _server)) = any_redis("a_demotion_made_by_one_instance_moves_the_other_too").await else { return };
    let prefix = unique_prefix("quality");
    let a = start(&yaml(&url, &prefix, "a")).await;
    let b = start(&yaml(&url, &prefix, "b")).await;
    for _ in 0..3 {
        assert_eq!(ask(&a).await, "bad/m");
    }
    assert!(demoted(&a), "A judged three wrong-script answers");
    assert!(eventually(Duration::from_secs(2), || demoted(&b)).await, "B heard of A's demotion");
    assert_eq!(ask(&b).await, "good/m", "B puts the demoted model behind the healthy one");
    // An operator's revive on B ends the demotion on A as well.
    let resp = client().post(format!("{}/admin/models/bad/m/revive", b.url)).bearer_auth("adm").send().await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    assert!(eventually(Duration::from_secs(2), || !demoted(&a)).await, "A heard of the revive");
}

/// Whether `/readyz` says the state store is degraded.
async fn degraded(gw: &TestGateway) -> bool {
    let v: serde_json::Value = client().get(format!("{}/readyz", gw.url)).send().await.unwrap().json().await.unwrap();
    v["state"]["degraded"] == true
}

/// A demotion made while Redis is unreachable is kept and shared once it
/// is back, like a dead mark: the other instance, which judged none of
/// those answers, moves the model too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demotion_made_during_a_redis_outage_is_shared_when_it_returns() {
    let Some(mut server) = redis_support::own_redis("a_demotion_made_during_a_redis_outage").await else { return };
    let prefix = unique_prefix("quality-outage");
    let a = start(&yaml(&server.url(), &prefix, "outage-a")).await;
    let b = start(&yaml(&server.url(), &prefix, "outage-b")).await;
    server.stop();
    for gw in [&a, &b] {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !degraded(gw).await {
            assert!(tokio::time::Instant::now() < deadline, "the outage is noticed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    for _ in 0..3 {
        assert_eq!(ask(&a).await, "bad/m");
    }
    assert!(demoted(&a), "A demotes the model from its own answers");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!demoted(&b), "B cannot hear of it while Redis is down");
    assert!(server.restart().await);
    assert!(eventually(Duration::from_secs(10), || demoted(&b)).await, "B hears of A's demotion once Redis is back");
    assert_eq!(ask(&b).await, "good/m", "B puts the demoted model behind the healthy one");
}
