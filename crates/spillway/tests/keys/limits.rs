//! Each limit on the memory backend, whole and streamed.

use super::*;
use std::time::Duration;

fn headers_of(resp: &reqwest::Response) -> Vec<(String, String)> {
    resp.headers()
        .iter()
        .filter(|(k, _)| k.as_str().starts_with("x-ratelimit-") || k.as_str() == "retry-after")
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
        .collect()
}

#[tokio::test]
async fn rpm_admits_exactly_its_count_with_openai_headers() {
    let paid = FakeUpstream::start().await;
    let gw = start(&yaml(&paid, "  - { id: a, key: sk-a-secret-1, rpm: 3, tpm: 100000 }\n", "")).await;
    let mut remaining = Vec::new();
    for i in 0..3 {
        let resp = ask(&gw, "sk-a-secret-1", "chat", i % 2 == 1).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, "x-ratelimit-limit-requests"), "3");
        assert_eq!(header(&resp, "x-ratelimit-limit-tokens"), "100000");
        assert!(!header(&resp, "x-ratelimit-reset-requests").is_empty(), "{:?}", headers_of(&resp));
        assert!(!header(&resp, "x-ratelimit-remaining-tokens").is_empty());
        remaining.push(header(&resp, "x-ratelimit-remaining-requests").to_string());
        let _ = resp.bytes().await;
    }
    assert_eq!(remaining, ["2", "1", "0"]);
    for stream in [false, true] {
        let resp = ask(&gw, "sk-a-secret-1", "chat", stream).await;
        assert_eq!(resp.status(), 429);
        assert_eq!(header(&resp, "x-ratelimit-remaining-requests"), "0");
        let retry: u64 = header(&resp, "retry-after").parse().unwrap();
        assert!((1..=60).contains(&retry), "{retry}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "rate_limit_exceeded");
        assert_eq!(body["error"]["type"], "requests");
    }
    let resp = message(&gw, "sk-a-secret-1", "chat", None).await;
    assert_eq!(resp.status(), 429);
    assert!(!header(&resp, "retry-after").is_empty());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");
    // Other keys and plain keys are not counted against it.
    assert_eq!(ask(&gw, "plain-key-1", "chat", false).await.status(), 200);
}

#[tokio::test]
async fn tokens_are_reserved_while_in_flight_and_settled_after() {
    let paid = FakeUpstream::start().await;
    let gw = start(&yaml(&paid, "  - { id: a, key: sk-a-secret-1, tpm: 1000 }\n", "")).await;
    let body = json!({"model": "slow", "max_tokens": 400, "messages": [{"role": "user", "content": "Hello?"}]});
    // Two reservations of ~400 fit in 1000; a third does not while they run.
    let (a, b) = tokio::join!(
        call(&gw, "/v1/chat/completions", "sk-a-secret-1", &body, &[]),
        call(&gw, "/v1/chat/completions", "sk-a-secret-1", &body, &[])
    );
    assert_eq!((a.status().as_u16(), b.status().as_u16()), (200, 200));
    // Settled with the real usage (tens of tokens): room again, one after another.
    for stream in [false, true, false] {
        let mut b = body.clone();
        b["stream"] = json!(stream);
        let resp = call(&gw, "/v1/chat/completions", "sk-a-secret-1", &b, &[]).await;
        assert_eq!(resp.status(), 200, "stream {stream}");
        let _ = resp.bytes().await;
    }
    let slow = async {
        let mut b = body.clone();
        b["stream"] = json!(true);
        let r = call(&gw, "/v1/chat/completions", "sk-a-secret-1", &b, &[]).await;
        (r.status(), r.bytes().await.unwrap())
    };
    let refused = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let big = json!({"model": "slow", "max_tokens": 700, "messages": [{"role": "user", "content": "Hello?"}]});
        call(&gw, "/v1/chat/completions", "sk-a-secret-1", &big, &[]).await
    };
    let ((status, _), refused) = tokio::join!(slow, refused);
    assert_eq!(status, 200);
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "tokens");
}

#[tokio::test]
async fn max_parallel_frees_its_slot_when_a_client_cancels_a_stream() {
    let paid = FakeUpstream::start().await;
    let gw = start(&yaml(&paid, "  - { id: a, key: sk-a-secret-1, max_parallel: 1 }\n", "")).await;
    let resp = ask(&gw, "sk-a-secret-1", "slow", true).await;
    assert_eq!(resp.status(), 200);
    let second = ask(&gw, "sk-a-secret-1", "chat", false).await;
    assert_eq!(second.status(), 429, "one in flight already");
    let body: Value = second.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    // The client goes away mid-stream: the slot is free again.
    drop(resp);
    let mut ok = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if ask(&gw, "sk-a-secret-1", "chat", false).await.status() == 200 {
            ok = true;
            break;
        }
    }
    assert!(ok, "the cancelled stream's slot was never freed");
}

#[tokio::test]
async fn a_spent_budget_answers_insufficient_quota_after_one_alert_at_80_percent() {
    let paid = FakeUpstream::start().await;
    let hook = FakeUpstream::start_at("/alerts").await;
    let alerts = format!("alerts:\n  webhook: {{ url: \"{}/alerts\" }}\n", hook.origin());
    let keys = "  - { id: a, key: sk-a-secret-1, budget: { usd: 1.0, per: day } }\n  - { id: s, key: sk-s-secret-1, budget: { usd: 0.5, per: month } }\n";
    let gw = start(&yaml(&paid, keys, &alerts)).await;
    // $0.70 an answer: 0.00 and 0.70 are under $1; 1.40 is not.
    assert_eq!(ask(&gw, "sk-a-secret-1", "paid", false).await.status(), 200);
    assert_eq!(ask(&gw, "sk-a-secret-1", "paid", false).await.status(), 200);
    // A streamed answer is settled where its stream ends: a few dollars of
    // `free/pricey` spend key s's $0.50 at once.
    let streamed = ask(&gw, "sk-s-secret-1", "pricey", true).await;
    assert_eq!(streamed.status(), 200);
    let _ = streamed.bytes().await;
    let mut spent = false;
    for _ in 0..50 {
        if ask(&gw, "sk-s-secret-1", "pricey", true).await.status() == 429 {
            spent = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(spent, "the streamed answer's spend was never settled");
    let mut refused = None;
    for _ in 0..50 {
        let resp = ask(&gw, "sk-a-secret-1", "paid", false).await;
        if resp.status() == 429 {
            refused = Some(resp);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let resp = refused.expect("the budget was never exhausted");
    assert_eq!(paid.calls(), 2, "no third paid answer");
    let retry: u64 = header(&resp, "retry-after").parse().unwrap();
    assert!(retry <= 86_400, "until the next UTC day: {retry}");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "insufficient_quota");
    assert_eq!(body["error"]["type"], "insufficient_quota");
    let resp = message(&gw, "sk-a-secret-1", "paid", None).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["type"], "rate_limit_error");
    assert!(hook.wait_for(Duration::from_secs(5), |h| h.calls() >= 1).await);
    let alerts: Vec<Value> = hook
        .requests()
        .into_iter()
        .filter(|b| b["kind"] == "key_budget" && b["text"].as_str().unwrap().contains("Key a "))
        .collect();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert!(
        alerts[0]["text"].as_str().unwrap().contains("Key a spent $1.40 of its $1.00 budget per day"),
        "{}",
        alerts[0]
    );
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains("spillway_key_requests_total{key=\"a\",result=\"budget\"}"), "{metrics}");
    assert!(metrics.contains("spillway_key_cost_usd_total{key=\"a\"} 1.4"), "{metrics}");
}

/// The memory backend keeps each key's spend in `data_dir`: a restart
/// does not give a spent budget back, whole or streamed.
#[tokio::test]
async fn a_spent_budget_stays_spent_after_a_restart() {
    let paid = FakeUpstream::start().await;
    let dir = std::env::temp_dir().join(format!("spillway-keys-kept-{}", fastrand::u64(..)));
    let state = format!("state: {{ data_dir: '{}' }}\n", dir.display());
    let keys = "  - { id: a, key: sk-a-secret-1, budget: { usd: 1.0, per: day } }\n  - { id: s, key: sk-s-secret-1, budget: { usd: 0.5, per: total }, per_user: { budget: { usd: 100 } } }\n";
    let config = yaml(&paid, keys, &state).replace(
        "server:\n  api_keys: [plain-key-1]\n",
        "server:\n  api_keys: [plain-key-1]\n  admin_token: admin-token-1\n",
    );
    let gw = start(&config).await;
    // $0.70 an answer: two answers spend $1.40 of a's $1.00.
    assert_eq!(ask(&gw, "sk-a-secret-1", "paid", false).await.status(), 200);
    assert_eq!(ask(&gw, "sk-a-secret-1", "paid", false).await.status(), 200);
    let mut body = chat("pricey", true);
    body["user"] = json!("u1");
    let streamed = call(&gw, "/v1/chat/completions", "sk-s-secret-1", &body, &[]).await;
    assert_eq!(streamed.status(), 200);
    let _ = streamed.bytes().await;
    let spent = |gw: &TestGateway, id: &'static str| {
        let url = format!("{}/admin/keys/{id}", gw.url);
        async move {
            let v: Value = client().get(url).bearer_auth("admin-token-1").send().await.unwrap().json().await.unwrap();
            v["usage"]["cost_usd"].as_f64().unwrap_or(0.0)
        }
    };
    let mut gw = gw;
    gw.shutdown.cancel();
    gw.stopped(Duration::from_secs(5)).await.unwrap();
    drop(gw);
    // The job's last write happens on the way out; give it a moment.
    let mut restored = None;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let gw = start(&config).await;
        let a = spent(&gw, "a").await;
        let s = spent(&gw, "s").await;
        if a >= 1.4 && s > 0.5 {
            restored = Some((gw, a, s));
            break;
        }
    }
    let (gw, a, s) = restored.expect("the spend did not survive the restart");
    assert!((a - 1.4).abs() < 1e-6, "{a}");
    eprintln!("after a restart: key a spent ${a:.2} of $1.00 a day, key s ${s:.2} of $0.50 in total");
    let resp = ask(&gw, "sk-a-secret-1", "paid", false).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "insufficient_quota");
    assert_eq!(call(&gw, "/v1/chat/completions", "sk-s-secret-1", &body, &[]).await.status(), 429);
    assert_eq!(paid.calls(), 2, "no third paid answer");
    drop(gw);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn per_user_limits_count_each_end_user() {
    let paid = FakeUpstream::start().await;
    let gw = start(&yaml(&paid, "  - { id: a, key: sk-a-secret-1, rpm: 100, per_user: { rpm: 1 } }\n", "")).await;
    let as_user = |user: &'static str| {
        let gw = &gw;
        async move {
            call(gw, "/v1/chat/completions", "sk-a-secret-1", &chat("chat", false), &[("x-spillway-user", user)]).await
        }
    };
    assert_eq!(as_user("ann").await.status(), 200);
    let resp = as_user("ann").await;
    assert_eq!(resp.status(), 429);
    assert_eq!(header(&resp, "x-ratelimit-limit-requests"), "1", "the user's tighter limit");
    assert_eq!(as_user("bob").await.status(), 200);
    // The body's `user` field, and Anthropic's metadata.user_id.
    let mut body = chat("chat", false);
    body["user"] = json!("cat");
    assert_eq!(call(&gw, "/v1/chat/completions", "sk-a-secret-1", &body, &[]).await.status(), 200);
    assert_eq!(call(&gw, "/v1/chat/completions", "sk-a-secret-1", &body, &[]).await.status(), 429);
    assert_eq!(message(&gw, "sk-a-secret-1", "chat", Some("dan")).await.status(), 200);
    assert_eq!(message(&gw, "sk-a-secret-1", "chat", Some("dan")).await.status(), 429);
    // Without a user, only the key's own limit applies.
    assert_eq!(ask(&gw, "sk-a-secret-1", "chat", false).await.status(), 200);
    assert_eq!(ask(&gw, "sk-a-secret-1", "chat", false).await.status(), 200);
}
