//! Discovery against fake listings: refresh, diffs, bad listings, the
//! never-empty rule, and the cache surviving a restart without network.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;
mod file_gateway;
mod redis_support;

use common::{chat, header, FakeUpstream, Reply};
use file_gateway::{closed_base_url, FileGateway, TempDir, ADMIN};
use serde_json::{json, Value};
use spillway::discovery::DiscoveryEvent;

/// A Groq-shaped listing of these ids, all with a 131k context.
fn groq_listing(ids: &[&str]) -> Reply {
    let data: Vec<Value> =
        ids.iter().map(|id| json!({"id": id, "object": "model", "active": true, "context_window": 131072})).collect();
    Reply::json(json!({"object": "list", "data": data}))
}

fn config(base_url: &str, data_dir: &std::path::Path) -> String {
    format!(
        "
server:
  admin_token: {ADMIN}
state:
  data_dir: {}
providers:
  groq:
    kind: openai
    base_url: {base_url}
    api_key: test-key
    discovery: {{ enabled: true, format: groq }}
    models: [ {{ id: static-fallback-8b, context: 8192 }} ]
discovery:
  interval: 12h
  cache_ttl: 24h
cascades:
  chat:
    strategy: quality_first
    providers: [groq]
    filters: {{ min_context: 8000, exclude_patterns: [guard] }}
    size: 5
{}",
        data_dir.display(),
        common::FAST_HEALTH
    )
}

fn events(rx: &mut tokio::sync::broadcast::Receiver<DiscoveryEvent>) -> Vec<DiscoveryEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

#[tokio::test]
async fn refresh_builds_the_cascade_and_a_removed_model_yields_the_diff() {
    let up = FakeUpstream::start().await;
    up.route("/v1/models", groq_listing(&["qwen3-235b", "llama-3.3-70b", "llama-guard-4-12b", "small-8b"]));
    let dir = TempDir::new("discovery-diff");
    let gw = FileGateway::start(dir.path(), &config(&up.base_url(), dir.path())).await;
    let mut rx = gw.state.gateway.load().shared.discovery.subscribe();

    // The job runs a first round at once (no cache yet).
    let plan = gw.wait_plan("chat", |p| p.len() == 3).await;
    assert_eq!(plan, ["groq/qwen3-235b", "groq/llama-3.3-70b", "groq/small-8b"], "guard excluded, larger first");
    {
        let g = gw.state.gateway.load();
        let t = &g.cascades["chat"].targets[0];
        assert_eq!(t.tier.as_str(), "discovered");
        assert_eq!(t.context, Some(131_072), "the context comes from the listing");
    }

    // Requests run on the discovered plan.
    let resp = common::client()
        .post(format!("{}/v1/chat/completions", gw.url))
        .json(&chat("chat", false))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-model"), "groq/qwen3-235b");
    assert_eq!(header(&resp, "x-spillway-tier"), "discovered");
    assert_eq!(up.requests().last().unwrap()["model"], "qwen3-235b");
    let state: Value = common::client()
        .get(format!("{}/admin/state", gw.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(state["cascades"][0]["models"][0]["reason"], "rank by quality 235b", "{state}");

    // The provider removes a model; an admin refresh drops it and says so.
    up.route("/v1/models", groq_listing(&["qwen3-235b", "llama-3.3-70b", "llama-guard-4-12b"]));
    let _ = events(&mut rx);
    let (status, body) = gw.admin_post("/admin/discovery/refresh").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["changes"], json!(["chat: -groq/small-8b (removed)"]));
    assert_eq!(gw.plan("chat"), ["groq/qwen3-235b", "groq/llama-3.3-70b"]);
    let changed: Vec<String> = events(&mut rx)
        .into_iter()
        .filter_map(|e| match e {
            DiscoveryEvent::CascadeChanged { text, .. } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(changed, ["chat: -groq/small-8b (removed)"]);
    gw.stop().await;
}

#[tokio::test]
async fn a_bad_listing_keeps_the_last_good_cascade() {
    let up = FakeUpstream::start().await;
    up.route("/v1/models", groq_listing(&["qwen3-235b", "llama-3.3-70b"]));
    let dir = TempDir::new("discovery-bad");
    let gw = FileGateway::start(dir.path(), &config(&up.base_url(), dir.path())).await;
    let good = gw.wait_plan("chat", |p| p.len() == 2 && p[0] == "groq/qwen3-235b").await;
    let mut rx = gw.state.gateway.load().shared.discovery.subscribe();

    for bad in [
        Reply::raw(200, "text/html", "<html>maintenance</html>"),
        Reply::json(json!({"object": "list"})),
        Reply::json(json!({"data": [{"id": 7}, {"object": "model"}]})),
        Reply::error(500, "server_error", "boom"),
    ] {
        up.route("/v1/models", bad);
        let (status, body) = gw.admin_post("/admin/discovery/refresh").await;
        assert_eq!(status, 200, "{body}");
        assert!(body["providers"][0]["error"].is_string(), "{body}");
        assert_eq!(body["providers"][0]["models"], 2, "the last good listing is kept: {body}");
        assert_eq!(gw.plan("chat"), good);
    }
    let failed = events(&mut rx).iter().filter(|e| matches!(e, DiscoveryEvent::ListingFailed { .. })).count();
    assert_eq!(failed, 4);
    gw.stop().await;
}

#[tokio::test]
async fn fewer_than_two_models_fall_back_to_static_ones_with_an_alert() {
    let up = FakeUpstream::start().await;
    up.route("/v1/models", groq_listing(&["qwen3-235b", "llama-3.3-70b"]));
    let dir = TempDir::new("discovery-thin");
    let gw = FileGateway::start(dir.path(), &config(&up.base_url(), dir.path())).await;
    gw.wait_plan("chat", |p| p.len() == 2 && p[0] == "groq/qwen3-235b").await;
    let mut rx = gw.state.gateway.load().shared.discovery.subscribe();

    up.route("/v1/models", groq_listing(&["qwen3-235b", "llama-guard-4-12b"]));
    let (status, _) = gw.admin_post("/admin/discovery/refresh").await;
    assert_eq!(status, 200);
    assert_eq!(gw.plan("chat"), ["groq/qwen3-235b", "groq/static-fallback-8b"]);
    let thin: Vec<_> = events(&mut rx)
        .into_iter()
        .filter_map(|e| match e {
            DiscoveryEvent::TooFewModels { cascade, alive, .. } => Some((cascade, alive)),
            _ => None,
        })
        .collect();
    assert_eq!(thin, [("chat".to_string(), 1)]);
    gw.stop().await;
}

#[tokio::test]
async fn a_restart_without_network_serves_the_cached_cascades() {
    let up = FakeUpstream::start().await;
    up.route("/v1/models", groq_listing(&["qwen3-235b", "llama-3.3-70b", "small-8b"]));
    let dir = TempDir::new("discovery-restart");
    let first = FileGateway::start(dir.path(), &config(&up.base_url(), dir.path())).await;
    let before = first.wait_plan("chat", |p| p.len() == 3).await;
    // The job's first round and an explicit one: the cache file is written by then.
    let (status, _) = first.admin_post("/admin/discovery/refresh").await;
    assert_eq!(status, 200);
    first.stop().await;
    assert!(dir.path().join("discovery-cache.json").is_file());

    // Same data_dir, a fresh process state, and the provider unreachable.
    let second = FileGateway::start(dir.path(), &config(&closed_base_url().await, dir.path())).await;
    let after = second.wait_plan("chat", |p| p.len() == 3).await;
    assert_eq!(after, before);
    // A refresh now fails and still keeps the cached cascade.
    let (status, body) = second.admin_post("/admin/discovery/refresh").await;
    assert_eq!(status, 200);
    assert!(body["providers"][0]["error"].as_str().unwrap().contains("request failed"), "{body}");
    assert_eq!(second.plan("chat"), before);
    second.stop().await;
}

/// With a shared state store (`backend: redis`), the cached round is shared:
/// an instance with an empty `data_dir` and no network starts from the
/// cascades another instance discovered.
#[tokio::test]
async fn instances_share_the_cached_round_through_the_state_store() {
    let Some((redis, _server)) = redis_support::any_redis("instances_share_the_cached_round").await else { return };
    let prefix = redis_support::unique_prefix("discovery-shared");
    let with_redis = |yaml: String| {
        yaml.replacen(
            "state:\n",
            &format!("state:\n  backend: redis\n  redis_url: {redis}\n  key_prefix: \"{prefix}\"\n"),
            1,
        )
    };
    let up = FakeUpstream::start().await;
    up.route("/v1/models", groq_listing(&["qwen3-235b", "llama-3.3-70b", "small-8b"]));
    let (dir_a, dir_b) = (TempDir::new("discovery-shared-a"), TempDir::new("discovery-shared-b"));
    let a = FileGateway::start(dir_a.path(), &with_redis(config(&up.base_url(), dir_a.path()))).await;
    let found = a.wait_plan("chat", |p| p.len() == 3).await;
    // An explicit round: the first one has been cached by the time it answers.
    assert_eq!(a.admin_post("/admin/discovery/refresh").await.0, 200);

    let b = FileGateway::start(dir_b.path(), &with_redis(config(&closed_base_url().await, dir_b.path()))).await;
    // b's data_dir is empty and its provider unreachable: only the store
    // can have given it more than its one static model.
    assert_eq!(b.wait_plan("chat", |p| p.len() == 3).await, found);
    a.stop().await;
    b.stop().await;
}

/// GigaChat's `GET /models` is read with a bearer token from its OAuth
/// endpoint (never the auth key); a token that died early is replaced once.
#[tokio::test]
async fn gigachat_listings_are_read_with_an_oauth_token() {
    use test_upstreams::gigachat;
    let oauth = FakeUpstream::start_at(gigachat::OAUTH_PATH).await;
    oauth.push(gigachat::token("tok-1", gigachat::expiry_in(1800)));
    oauth.set_default(gigachat::token("tok-2", gigachat::expiry_in(1800)));
    let api = FakeUpstream::start_at("/api/v1/models").await;
    api.push(gigachat::error(401, "Unauthorized"));
    let listing =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/discovery/gigachat-models.json"));
    api.set_default(Reply::raw(200, "application/json", listing.unwrap()));
    let yaml = format!(
        "providers:
  gigachat:
    kind: gigachat
    base_url: {}/api/v1
    auth_url: {}{}
    auth_key: dGVzdDp0ZXN0
    discovery: {{ enabled: true, format: gigachat }}
    models: [ {{ id: GigaChat }} ]
cascades:
  chat:
    models: [gigachat/GigaChat]
",
        api.origin(),
        oauth.origin(),
        gigachat::OAUTH_PATH
    );
    let config = spillway::config::load_str(&yaml, None, &|_| None).unwrap_or_else(|e| panic!("config:\n{e}"));
    let fetched = spillway::discovery::fetch::fetch_all(&config, &|_| {}).await;
    let listing = fetched[0].result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<&str> = listing.models.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["GigaChat", "GigaChat-2", "GigaChat-2-Max", "GigaChat-2-Pro", "GigaChat-Pro"]);
    let auth: Vec<String> =
        api.request_headers().iter().map(|h| h["authorization"].to_str().unwrap().to_string()).collect();
    assert_eq!(auth, ["Bearer tok-1", "Bearer tok-2"], "the 401 dropped tok-1");
    assert_eq!(oauth.calls(), 2);
    assert_eq!(oauth.request_headers()[0]["authorization"], "Basic dGVzdDp0ZXN0");
}

#[tokio::test]
async fn admin_discovery_needs_the_token() {
    let up = FakeUpstream::start().await;
    let dir = TempDir::new("discovery-auth");
    let gw = FileGateway::start(dir.path(), &config(&up.base_url(), dir.path())).await;
    let resp = common::client().post(format!("{}/admin/discovery/refresh", gw.url)).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    gw.stop().await;
}

/// Groq's free plan as its users write it: a listing without prices, a
/// `free_only` cascade that prefers `llama-3.3-70b-versatile`, a local
/// free model beside it, and (paid, guarded) static models that must never
/// get in by a fallback. `price` is the provider-wide `price_per_1m` line.
fn free_groq_config(base_url: &str, data_dir: &std::path::Path, price: &str, hook: &str) -> String {
    format!(
        "
server:
  admin_token: {ADMIN}
state:
  data_dir: {}
providers:
  groq:
    kind: openai
    base_url: {base_url}
    api_key: test-key
    discovery: {{ enabled: true, format: groq }}
{price}
  local:
    kind: openai
    base_url: {base_url}
    models:
      - {{ id: t-lite, price_per_1m: {{ input: 0, output: 0 }} }}
      - {{ id: paid-big, price_per_1m: {{ input: 1, output: 1 }} }}
      - {{ id: guard-free, price_per_1m: {{ input: 0, output: 0 }} }}
cascades:
  free:
    strategy: quality_first
    providers: [groq, local]
    preferred: [groq/llama-3.3-70b-versatile]
    filters: {{ free_only: true, exclude_patterns: [guard] }}
    size: 6
alerts:
  webhook: {{ url: \"{hook}\" }}
  repeat_after: 1h
{}",
        data_dir.display(),
        common::FAST_HEALTH
    )
}

const GROQ_IDS: [&str; 4] = ["llama-3.1-8b-instant", "llama-3.3-70b-versatile", "qwen3-32b", "llama-guard-4-12b"];

#[tokio::test]
async fn groq_models_without_listed_prices_join_a_free_cascade_with_a_provider_price() {
    let up = FakeUpstream::start().await;
    up.route("/v1/models", groq_listing(&GROQ_IDS));
    let hook = FakeUpstream::start_at("/alerts").await;
    let dir = TempDir::new("discovery-groq-free");
    let price = "    price_per_1m: { input: 0, output: 0 }";
    let yaml = free_groq_config(&up.base_url(), dir.path(), price, &format!("{}/alerts", hook.origin()));
    let gw = FileGateway::start(dir.path(), &yaml).await;
    let plan = gw.wait_plan("free", |p| p.len() == 4).await;
    assert_eq!(
        plan,
        ["groq/llama-3.3-70b-versatile", "groq/qwen3-32b", "groq/llama-3.1-8b-instant", "local/t-lite"],
        "preferred first, then the free ones by size; guard and paid left out"
    );
    let state: Value = common::client()
        .get(format!("{}/admin/state", gw.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(state["cascades"][0]["models"][0]["reason"], "preferred #1", "{state}");
    assert_eq!(state["cascades"][0]["left_out"], json!([]), "nothing left out for an unknown price: {state}");
    // Costs are the provider's price: zero.
    let resp = common::client().post(format!("{}/v1/chat/completions", gw.url)).json(&chat("free", false)).send();
    let resp = resp.await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-model"), "groq/llama-3.3-70b-versatile");
    assert_eq!(header(&resp, "x-spillway-rank"), "1");
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert!(!hook.requests().iter().any(|r| r["kind"] == "model_left_out"), "{:?}", hook.requests());
    gw.stop().await;
}

#[tokio::test]
async fn without_a_price_the_groq_models_are_a_warning_and_an_alert_and_the_fallback_respects_filters() {
    let up = FakeUpstream::start().await;
    up.route("/v1/models", groq_listing(&GROQ_IDS));
    let hook = FakeUpstream::start_at("/alerts").await;
    let dir = TempDir::new("discovery-groq-unpriced");
    let yaml = free_groq_config(&up.base_url(), dir.path(), "", &format!("{}/alerts", hook.origin()));
    let gw = FileGateway::start(dir.path(), &yaml).await;
    // The preferred model is raised once as an alert, with what fixes it.
    let left_out =
        |h: &FakeUpstream| h.requests().into_iter().filter(|r| r["kind"] == "model_left_out").collect::<Vec<_>>();
    assert!(
        hook.wait_for(std::time::Duration::from_secs(5), |h| !left_out(h).is_empty()).await,
        "{:?}",
        hook.requests()
    );
    let text = left_out(&hook)[0]["text"].as_str().unwrap().to_string();
    assert!(
        text.contains("preferred groq/llama-3.3-70b-versatile is left out: price unknown — set providers.groq.price_per_1m or a models: hint"),
        "{text}"
    );
    // Only the local free model is built; the static fallback (fewer than 2
    // built) adds neither the unpriced preferred model nor the paid or
    // excluded static ones: a filtered cascade never gains what it rejects.
    assert_eq!(gw.plan("free"), ["local/t-lite"]);
    let state: Value = common::client()
        .get(format!("{}/admin/state", gw.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed: Vec<&str> =
        state["cascades"][0]["left_out"].as_array().unwrap().iter().map(|l| l["model"].as_str().unwrap()).collect();
    assert_eq!(
        listed,
        ["groq/llama-3.3-70b-versatile", "groq/llama-3.1-8b-instant", "groq/qwen3-32b"],
        "the WARN list, shown in /admin/state: {state}"
    );
    assert!(state["cascades"][0]["left_out"][1]["text"].as_str().unwrap().contains("set providers.groq.price_per_1m"));
    // A second refresh does not raise it again.
    let (status, _) = gw.admin_post("/admin/discovery/refresh").await;
    assert_eq!(status, 200);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(left_out(&hook).len(), 1);
    gw.stop().await;
}

/// One refresh that changes two cascades sends one message listing both
/// diffs; an id change within a model family reads as an upgrade.
#[tokio::test]
async fn one_refresh_is_one_message_and_a_new_version_reads_as_an_upgrade() {
    let up = FakeUpstream::start().await;
    up.route("/v1/models", groq_listing(&["llama-3.1-70b-versatile", "qwen3-32b"]));
    let hook = FakeUpstream::start_at("/alerts").await;
    let dir = TempDir::new("discovery-one-message");
    let yaml = format!(
        "
server:
  admin_token: {ADMIN}
state:
  data_dir: {}
providers:
  groq:
    kind: openai
    base_url: {}
    api_key: test-key
    discovery: {{ enabled: true, format: groq }}
cascades:
  chat:
    strategy: quality_first
    providers: [groq]
  extraction:
    strategy: quality_first
    providers: [groq]
    size: 1
alerts:
  webhook: {{ url: \"{}/alerts\" }}
  repeat_after: 1h
{}",
        dir.path().display(),
        up.base_url(),
        hook.origin(),
        common::FAST_HEALTH
    );
    let gw = FileGateway::start(dir.path(), &yaml).await;
    gw.wait_plan("chat", |p| p.len() == 2).await;
    up.route("/v1/models", groq_listing(&["llama-3.3-70b-versatile", "qwen3-32b"]));
    let (status, body) = gw.admin_post("/admin/discovery/refresh").await;
    assert_eq!(status, 200, "{body}");
    let changed =
        |h: &FakeUpstream| h.requests().into_iter().filter(|r| r["kind"] == "cascade_changed").collect::<Vec<_>>();
    assert!(hook.wait_for(std::time::Duration::from_secs(5), |h| !changed(h).is_empty()).await);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let messages = changed(&hook);
    assert_eq!(messages.len(), 1, "{messages:?}");
    let text = messages[0]["text"].as_str().unwrap();
    assert!(text.starts_with("Discovery changed 2 cascades"), "{text}");
    let upgrade = "groq/llama-3.1-70b-versatile → groq/llama-3.3-70b-versatile (upgraded)";
    assert!(text.contains(&format!("\nchat: {upgrade}")), "{text}");
    assert!(text.contains(&format!("\nextraction: {upgrade}")), "{text}");
    gw.stop().await;
}

/// `/admin/state` counts a model's answers since start whatever rank it
/// stands at: a refresh that moves it down the cascade keeps its `served`
/// and `share`, and the shares per rank are figures of their own.
#[tokio::test]
async fn a_re_ranked_model_keeps_its_answers_and_shares_in_the_state() {
    let up = FakeUpstream::start().await;
    up.route("/v1/models", groq_listing(&["qwen3-235b", "llama-3.3-70b"]));
    let dir = TempDir::new("discovery-rerank");
    let gw = FileGateway::start(dir.path(), &config(&up.base_url(), dir.path())).await;
    gw.wait_plan("chat", |p| p.len() == 2).await;
    let ask = || async {
        let resp = common::client()
            .post(format!("{}/v1/chat/completions", gw.url))
            .json(&chat("chat", false))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        header(&resp, "x-spillway-model").to_string()
    };
    let state = || async {
        common::client()
            .get(format!("{}/admin/state", gw.url))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    };
    for _ in 0..2 {
        assert_eq!(ask().await, "groq/qwen3-235b");
    }
    // A larger model is listed: qwen3-235b moves to rank 2.
    up.route("/v1/models", groq_listing(&["qwen3-480b", "qwen3-235b", "llama-3.3-70b"]));
    assert_eq!(gw.admin_post("/admin/discovery/refresh").await.0, 200);
    assert_eq!(gw.plan("chat")[..2], ["groq/qwen3-480b", "groq/qwen3-235b"]);
    let s = state().await;
    let c = &s["cascades"][0];
    assert_eq!(
        (c["models"][1]["model"].as_str(), c["models"][1]["served"].as_u64()),
        (Some("groq/qwen3-235b"), Some(2)),
        "{s}"
    );
    assert_eq!(c["models"][1]["share"], 1.0, "{s}");
    assert_eq!((c["served"].as_u64(), &c["rank_shares"]["1"]), (Some(2), &json!(1.0)), "{s}");
    assert_eq!(c["tier_shares"]["discovered"], 1.0, "{s}");
    assert_eq!(ask().await, "groq/qwen3-480b");
    let s = state().await;
    let c = &s["cascades"][0];
    assert_eq!((c["models"][0]["served"].as_u64(), c["models"][1]["served"].as_u64()), (Some(1), Some(2)), "{s}");
    assert_eq!((&c["models"][1]["share"], &c["rank_shares"]["1"]), (&json!(0.667), &json!(1.0)), "{s}");
    gw.stop().await;
}
