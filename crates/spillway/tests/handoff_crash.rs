//! A handoff item survives `kill -9`: the real `spillway serve` process
//! queues a request, is killed without warning right after the client got
//! its id, and a new process on the same `data_dir` still has the item —
//! and `spillway handoff list|answer` work against it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn spawn(config: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(["serve", "--config"])
        .arg(config)
        .env("SPILLWAY_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

async fn wait_ready(url: &str) {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    for _ in 0..200 {
        if client.get(format!("{url}/healthz")).send().await.is_ok_and(|r| r.status() == 200) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the gateway did not start");
}

fn cli(config: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .arg("--config")
        .arg(config)
        .arg("handoff")
        .args(args)
        .env_remove("SPILLWAY_ADMIN_TOKEN")
        .output()
        .unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[tokio::test]
async fn an_item_survives_kill_9() {
    let dir = std::env::temp_dir().join(format!("spillway-crash-{}", spillway::handoff::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let config = dir.join("spillway.yaml");
    std::fs::write(
        &config,
        format!(
            "server:\n  listen: 127.0.0.1:{port}\n  admin_token: adm\nstate:\n  data_dir: {}\nproviders:\n  down:\n    kind: mock\n    models:\n      - {{ id: m, behavior: {{ error_rate: 1.0, error_status: 503 }} }}\ncascades:\n  support:\n    models: [down/m]\n    handoff: true\n",
            dir.join("data").display()
        ),
    )
    .unwrap();

    let mut first = spawn(&config);
    wait_ready(&url).await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let body = json!({"model": "support", "messages": [{"role": "user", "content": "Where is my refund?"}]});
    let resp = client.post(format!("{url}/v1/chat/completions")).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let id = resp.headers()["x-spillway-handoff-id"].to_str().unwrap().to_string();
    // SIGKILL at once: no shutdown path runs.
    first.kill().unwrap();
    first.wait().unwrap();

    let mut second = spawn(&config);
    wait_ready(&url).await;
    let item: Value = client.get(format!("{url}/v1/handoff/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(item["status"], "open", "{item}");

    let (ok, out) = cli(&config, &["list"]);
    assert!(ok && out.contains(&id) && out.contains("Where is my refund?"), "{out}");
    let (ok, out) = cli(&config, &["answer", &id, "Refunded today."]);
    assert!(ok, "{out}");
    let item: Value = client.get(format!("{url}/v1/handoff/{id}")).send().await.unwrap().json().await.unwrap();
    assert_eq!(item["answer"], "Refunded today.");
    let (ok, out) = cli(&config, &["answer", &id, "Again"]);
    assert!(!ok && out.contains("already answered"), "{out}");

    second.kill().unwrap();
    second.wait().unwrap();
    let _ = std::fs::remove_dir_all(dir);
}
