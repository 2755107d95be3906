//! `GET /ui`, the operator console: off without an admin token, a static
//! page with a strict content policy when on, and every admin call its
//! script makes answers in the shape the script reads.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: fail loudly

mod common;

use common::*;

const ADMIN: &str = "console-token";

fn config(admin: bool) -> String {
    let server = if admin { format!("server:\n  admin_token: {ADMIN}\n") } else { String::new() };
    // The handoff queue's embedded store goes to a scratch directory.
    let dir = std::env::temp_dir().join(format!("spillway-ui-test-{}", spillway::handoff::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    format!(
        "{server}state:\n  data_dir: {}\nproviders:\n  m:\n    kind: mock\n    models:\n      - {{ id: down, behavior: {{ error_rate: 1.0, error_status: 500 }} }}\n\
         cascades:\n  helpdesk:\n    models: [m/down]\n    handoff: true\n{FAST_HEALTH}",
        dir.display()
    )
}

#[tokio::test]
async fn the_console_is_off_without_an_admin_token() {
    let gw = start(&config(false)).await;
    let r = gw.get("/ui").await;
    assert_eq!(r.status(), 404);
    assert_valid("ErrorResponse", &r.json().await.unwrap());
}

#[tokio::test]
async fn the_console_is_a_static_page_whose_calls_work_with_the_token() {
    let gw = start(&config(true)).await;
    let r = gw.get("/ui").await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "content-type"), "text/html; charset=utf-8");
    let csp = header(&r, "content-security-policy").to_string();
    assert!(csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(header(&r, "cache-control"), "no-store");
    let page = r.text().await.unwrap();
    assert!(!page.contains(ADMIN), "the page carries no secret");
    // What the script reads must be there. Queue an item first (the only
    // model fails, the cascade hands off).
    let queued = gw.post(&chat("helpdesk", false)).await;
    assert_eq!(header(&queued, "x-spillway-tier"), "handoff");
    let id = header(&queued, "x-spillway-handoff-id").to_string();
    let admin =
        |method: reqwest::Method, path: &str| client().request(method, format!("{}{path}", gw.url)).bearer_auth(ADMIN);
    for path in ["/admin/state", "/admin/handoff?status="] {
        assert!(page.contains(path), "the page calls {path}");
    }
    let state: serde_json::Value =
        admin(reqwest::Method::GET, "/admin/state").send().await.unwrap().json().await.unwrap();
    let model = &state["cascades"][0]["models"][0];
    for key in ["model", "tier", "alive", "breaker", "in_flight"] {
        assert!(model.get(key).is_some(), "/admin/state lacks models[].{key}: {state}");
    }
    assert!(state["load"].is_array() && state["state"]["backend"].is_string(), "{state}");
    let open: serde_json::Value =
        admin(reqwest::Method::GET, "/admin/handoff?status=open").send().await.unwrap().json().await.unwrap();
    let item = &open["data"][0];
    assert_eq!(item["id"], id.as_str());
    for key in ["cascade", "created_ms", "messages", "attempts", "status"] {
        assert!(item.get(key).is_some(), "a queue item lacks {key}: {item}");
    }
    // The page's answer call, as the script sends it.
    assert!(page.contains("/answer\", { text: text.value }"));
    let answered = admin(reqwest::Method::POST, &format!("/admin/handoff/{id}/answer"))
        .json(&serde_json::json!({"text": "A person looked at it."}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    // The revive call, as the script builds it.
    assert!(page.contains("\"/admin/models/\" + model.split(\"/\").map(encodeURIComponent).join(\"/\") + \"/revive\""));
    let revived = admin(reqwest::Method::POST, "/admin/models/m/down/revive").send().await.unwrap();
    assert_eq!(revived.status(), 200);
}

/// The page's script parses (when Node.js is on the machine; the check
/// needs no network and no browser).
#[test]
fn the_console_script_is_valid_javascript() {
    let page = include_str!("../src/server/ui.html");
    let script = page.split("<script>").nth(1).and_then(|s| s.split("</script>").next()).expect("one inline script");
    let Ok(out) = std::process::Command::new("node")
        .args(["--check", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child.stdin.take().expect("stdin").write_all(script.as_bytes())?;
            child.wait_with_output()
        })
    else {
        eprintln!("node is not installed: the script's syntax is not checked");
        return;
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
