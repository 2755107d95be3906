//! `spillway import-litellm` on a realistic LiteLLM proxy config, round
//! trip: the imported config passes `check` and serves — a group's
//! deployments and its `fallbacks` as one cascade, the master key as a
//! client key, the routes without `/v1` and `/health` LiteLLM clients call
//! — and what has no equivalent is listed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;

use common::*;
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::Duration;

fn litellm_config(primary: &FakeUpstream, local: &FakeUpstream, vectors: &FakeUpstream) -> String {
    format!(
        r#"model_list:
  - model_name: gpt-4o
    litellm_params:
      model: openai/gpt-4o
      api_base: {primary}
      api_key: os.environ/OPENAI_API_KEY
    model_info: {{ input_cost_per_token: 0.0000025, output_cost_per_token: 0.00001, max_input_tokens: 128000 }}
  - model_name: gpt-4o
    litellm_params:
      model: azure/gpt-4o-eu
      api_base: https://my-eu.openai.azure.com/
      api_key: os.environ/AZURE_API_KEY_EU
      rpm: 6
  - model_name: local
    litellm_params: {{ model: hosted_vllm/qwen2.5-7b, api_base: "{local}", api_key: none }}
  - model_name: claude
    litellm_params: {{ model: anthropic/claude-sonnet-4-5, api_key: os.environ/ANTHROPIC_API_KEY }}
  - model_name: fast
    litellm_params: {{ model: groq/llama-3.1-8b-instant, api_key: os.environ/GROQ_API_KEY, tpm: 6000 }}
  - model_name: text-embedding-3-small
    litellm_params: {{ model: openai/text-embedding-3-small, api_base: {vectors}, api_key: os.environ/OPENAI_API_KEY }}
    model_info: {{ mode: embedding }}
router_settings:
  routing_strategy: simple-shuffle
  num_retries: 2
  timeout: 30
  fallbacks: [{{"gpt-4o": ["local"]}}, {{"claude": ["gpt-4o"]}}]
  context_window_fallbacks: [{{"local": ["claude"]}}]
  allowed_fails: 3
  cooldown_time: 30
litellm_settings:
  drop_params: true
  success_callback: ["langfuse"]
general_settings:
  master_key: os.environ/LITELLM_MASTER_KEY
  database_url: os.environ/DATABASE_URL
"#,
        primary = primary.base_url(),
        local = local.base_url(),
        vectors = vectors.base_url(),
    )
}

const ENV: [(&str, &str); 5] = [
    ("OPENAI_API_KEY", "sk-openai"),
    ("AZURE_API_KEY_EU", "az"),
    ("ANTHROPIC_API_KEY", "sk-ant"),
    ("GROQ_API_KEY", "gsk"),
    ("LITELLM_MASTER_KEY", "sk-master"),
];

fn spillway(dir: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spillway"));
    cmd.current_dir(dir).env_remove("SPILLWAY_CONFIG").env("NO_PROXY", "127.0.0.1").env("no_proxy", "127.0.0.1");
    for (k, v) in ENV {
        cmd.env(k, v);
    }
    cmd
}

#[tokio::test]
async fn a_realistic_litellm_config_imports_checks_and_serves() {
    let (primary, local, vectors) =
        (FakeUpstream::start().await, FakeUpstream::start().await, FakeUpstream::start_at("/embeddings").await);
    primary.set_default(Reply::error(503, "overloaded", "down"));
    local.set_default(Reply::text("from the local model"));
    vectors.set_default(Reply::json(json!({"object": "list", "model": "e", "data": [
        {"object": "embedding", "index": 0, "embedding": [0.6, 0.8]}], "usage": {"prompt_tokens": 1, "total_tokens": 1}})));
    let dir = std::env::temp_dir().join(format!("spillway-litellm-{}-{}", std::process::id(), fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("litellm.yaml"), litellm_config(&primary, &local, &vectors)).unwrap();

    let out = spillway(&dir).args(["import-litellm", "litellm.yaml", "--out", "spillway.yaml"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{said}");
    for needle in ["azure", "`rpm`", "`tpm`", "routing_strategy", "database_url", "success_callback"] {
        assert!(said.contains(needle), "`{needle}` is not listed as left out:\n{said}");
    }
    let yaml = std::fs::read_to_string(dir.join("spillway.yaml")).unwrap();
    assert!(yaml.contains("${OPENAI_API_KEY}") && !yaml.contains("os.environ"), "{yaml}");
    assert!(yaml.contains("# Not carried over:"), "{yaml}");

    let check = spillway(&dir).args(["check", "--config", "spillway.yaml"]).output().unwrap();
    let text = String::from_utf8_lossy(&check.stdout).to_string() + &String::from_utf8_lossy(&check.stderr);
    assert!(check.status.success(), "{text}\n{yaml}");

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = spillway(&dir)
        .args(["serve", "--config", "spillway.yaml", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let mut up = false;
    // Up to 60 s: a loaded CI machine starts a debug build slowly.
    for _ in 0..6000 {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the imported config did not serve: the gateway exited ({status})");
        }
        if client().get(format!("{url}/health")).send().await.is_ok_and(|r| r.status() == 200) {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(up, "the imported config did not serve");
    let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]});
    // The master key is the client key; without it, 401.
    let resp = client().post(format!("{url}/chat/completions")).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    // `gpt-4o` falls back to `local` as LiteLLM's `fallbacks` said, on the route without /v1.
    let resp =
        client().post(format!("{url}/chat/completions")).bearer_auth("sk-master").json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-model"), "vllm/qwen2.5-7b");
    let answer: Value = resp.json().await.unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "from the local model");
    assert_eq!(primary.requests()[0]["model"], "gpt-4o");
    assert_eq!(primary.request_headers()[0]["authorization"], "Bearer sk-openai");
    let resp = client()
        .post(format!("{url}/v1/embeddings"))
        .bearer_auth("sk-master")
        .json(&json!({"model": "text-embedding-3-small", "input": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(dir);
}
