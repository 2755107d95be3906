//! Fair shares of a free quota, a drill on paused time through the
//! composition root: 50 end users on two free models at per-minute limits
//! (then a paid model), one user sending ten times what each other sends.
//! With fair shares the other 49 keep ≥ 95 % of their answers on the free
//! models; without, the heavy user pushes them onto the paid one. Both
//! figures are printed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

use http_body_util::Full;
use spillway::app::App;
use std::time::Duration;

fn config(fair: bool) -> String {
    format!(
        "providers:
  groq:
    kind: mock
    models: [{{ id: a, price_per_1m: {{ input: 0, output: 0 }}, behavior: {{ rate_limit_per_min: 30, reply: free }} }}]
  openrouter:
    kind: mock
    models: [{{ id: b, price_per_1m: {{ input: 0, output: 0 }}, behavior: {{ rate_limit_per_min: 20, reply: free }} }}]
  paid:
    kind: mock
    models: [{{ id: p, price_per_1m: {{ input: 1, output: 2 }}, behavior: {{ reply: paid }} }}]
health:
  retries: {{ max: 0, backoff: 1ms, jitter: 0 }}
cascades:
  chat:
    models: [groq/a, openrouter/b, paid/p]
fairness: {{ enabled: {fair} }}
"
    )
}

/// Runs 10 virtual minutes of traffic; (light users' share of answers on
/// free models, the heavy user's share, diversions).
async fn drill(fair: bool) -> (f64, f64, u64) {
    let config = spillway::config::load_str(&config(fair), None, &|_| None).unwrap();
    let app = App::start(config).unwrap();
    let state = app.state.clone();
    // 49 light users at one request a minute each, one heavy user at ten:
    // 59 a minute against 50 a minute of free quota.
    let mut schedule: Vec<(Duration, String)> = Vec::new();
    for minute in 0..10u64 {
        for u in 0..49u64 {
            schedule.push((Duration::from_millis(minute * 60_000 + u * 60_000 / 49 + 7), format!("light-{u}")));
        }
        for k in 0..10u64 {
            schedule.push((Duration::from_millis(minute * 60_000 + k * 6_000), "heavy".to_string()));
        }
    }
    schedule.sort();
    let start = tokio::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (at, user) in schedule {
        tokio::time::sleep_until(start + at).await;
        let state = state.clone();
        tasks.spawn(async move {
            let body =
                serde_json::json!({"model": "chat", "user": user, "messages": [{"role": "user", "content": "hi"}]});
            let request = http::Request::builder()
                .method(http::Method::POST)
                .uri("/v1/chat/completions")
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Full::new(bytes::Bytes::from(body.to_string())))
                .unwrap();
            let resp = spillway::server::chat::chat(state, request).await;
            let model = resp.headers().get("x-spillway-model").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            (user, resp.status().as_u16(), model)
        });
    }
    let (mut light, mut light_free, mut heavy, mut heavy_free) = (0u32, 0u32, 0u32, 0u32);
    while let Some(done) = tasks.join_next().await {
        let (user, status, model) = done.unwrap();
        assert_eq!(status, 200, "{user}: every request is answered");
        let free = !model.starts_with("paid/");
        if user == "heavy" {
            heavy += 1;
            heavy_free += u32::from(free);
        } else {
            light += 1;
            light_free += u32::from(free);
        }
    }
    let text = state.metrics.render();
    let diverted = text
        .lines()
        .find(|l| l.starts_with("spillway_fair_share_diversions_total{cascade=\"chat\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0) as u64;
    app.stop().await;
    (f64::from(light_free) / f64::from(light), f64::from(heavy_free) / f64::from(heavy), diverted)
}

#[tokio::test(start_paused = true)]
async fn the_light_users_keep_the_free_models_when_one_user_sends_ten_times_more() {
    let (light_off, heavy_off, _) = drill(false).await;
    let (light_on, heavy_on, diverted) = drill(true).await;
    eprintln!(
        "fair shares off: 49 light users {:.1}% of answers on free models, heavy user {:.1}%",
        light_off * 100.0,
        heavy_off * 100.0
    );
    eprintln!(
        "fair shares on:  49 light users {:.1}% of answers on free models, heavy user {:.1}% ({diverted} requests diverted)",
        light_on * 100.0,
        heavy_on * 100.0
    );
    assert!(light_on >= 0.95, "with fair shares the light users keep >= 95% free: {light_on}");
    assert!(light_on > light_off, "fair shares must help the light users: {light_on} vs {light_off}");
    assert!(diverted > 0);
}
