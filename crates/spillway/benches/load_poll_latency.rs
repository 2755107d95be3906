//! Polling never blocks a request (SPEC §9): request latency through the
//! gateway while a load monitor polls a slow vLLM `/metrics`, against the
//! same run without load monitoring.
//!
//! `cargo bench --bench load_poll_latency`. In-process gateway and fake
//! upstreams on 127.0.0.1; 16 concurrent clients send non-streamed chat
//! requests; p50/p99/max over all of them. Scenarios: no `load:` at all; a
//! `/metrics` that answers after 40 ms with a 50 ms interval (a monitor
//! busy most of the time); one that never answers in time (every poll runs
//! to its timeout).

#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: it spawns freely, reads wall time, and a broken setup must fail loudly"
)]

use serde_json::json;
use spillway::app::{App, Listener};
use std::time::Duration;
use test_upstreams::{FakeUpstream, Reply};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const CLIENTS: usize = 16;
const PER_CLIENT: usize = 300;
const WARMUP: usize = 200;

const METRICS: &str = "vllm:num_requests_running{engine=\"0\",model_name=\"t-lite\"} 8.0\nvllm:num_requests_waiting{engine=\"0\",model_name=\"t-lite\"} 3.0\nvllm:kv_cache_usage_perc{engine=\"0\",model_name=\"t-lite\"} 0.8\n";

async fn run(name: &str, load: Option<Duration>) {
    let up = FakeUpstream::start().await;
    let load_block = match load {
        None => String::new(),
        Some(delay) => {
            up.route("/metrics", Reply::raw(200, "text/plain", METRICS).delay(delay));
            format!(
                "    load:\n      source: vllm_metrics\n      url: {}/metrics\n      interval: 50ms\n      profiles:\n        - {{ name: normal, below: 0.75 }}\n        - {{ name: tired, below: 0.9, system_prompt: Answer briefly., max_tokens_factor: 0.7 }}\n        - {{ name: lazy, max_tokens_factor: 0.3 }}\n",
                up.origin()
            )
        }
    };
    let yaml = format!(
        "providers:\n  local:\n    kind: openai\n    base_url: {}\n    default_max_tokens: 512\n{load_block}cascades:\n  chat:\n    models: [local/t-lite]\n",
        up.base_url()
    );
    let config = spillway::config::load_str(&yaml, None, &|_| None).unwrap();
    let app = App::start(config).unwrap();
    let shutdown = CancellationToken::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    let served = tokio::spawn(app.serve(Listener::Here(listener), shutdown.clone()));
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let body = json!({"model": "chat", "messages": [{"role": "user", "content": "Hello?"}]});
    for _ in 0..WARMUP {
        client.post(&url).json(&body).send().await.unwrap().bytes().await.unwrap();
    }
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let (client, url, body) = (client.clone(), url.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::with_capacity(PER_CLIENT);
            for _ in 0..PER_CLIENT {
                let t = Instant::now();
                let resp = client.post(&url).json(&body).send().await.unwrap();
                assert_eq!(resp.status(), 200);
                resp.bytes().await.unwrap();
                times.push(t.elapsed().as_secs_f64() * 1e6);
            }
            times
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_by(f64::total_cmp);
    let q = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    println!("  {name:<40} n={} p50 {:>6.0} µs  p99 {:>6.0} µs  max {:>6.0} µs", all.len(), q(0.50), q(0.99), q(1.0));
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), served).await;
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap();
    rt.block_on(async {
        println!("{CLIENTS} clients × {PER_CLIENT} non-streamed requests each, 4 runtime workers");
        for _ in 0..2 {
            run("no load monitoring", None).await;
            run("vllm_metrics, /metrics answers in 40 ms", Some(Duration::from_millis(40))).await;
            run("vllm_metrics, /metrics never in time", Some(Duration::from_secs(30))).await;
        }
    });
}
