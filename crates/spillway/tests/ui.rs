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

/// The console page as it is embedded.
const PAGE_SOURCE: &str = include_str!("../src/server/ui.html");

#[tokio::test]
async fn the_console_is_off_without_an_admin_token() {
    let gw = start(&config(false)).await;
    let r = gw.get("/ui").await;
    assert_eq!(r.status(), 404);
    assert_eq!(header(&r, "content-type"), "text/html; charset=utf-8");
    let page = r.text().await.unwrap();
    assert!(page.contains("The operator console is off"), "{page}");
    assert!(
        page.contains("no admin token configured") && page.contains("server.admin_token"),
        "how to enable it: {page}"
    );
    // The console's own way of saying how long a mark has left: never "0 s left".
    assert!(!PAGE_SOURCE.contains("seconds_left + \" s left"), "{PAGE_SOURCE}");
    assert!(PAGE_SOURCE.contains("function left(s)") && PAGE_SOURCE.contains("ends now"));
    // The admin API itself stays a plain 404.
    let api = gw.get("/admin/state").await;
    assert_eq!(api.status(), 404);
    assert_valid("ErrorResponse", &api.json().await.unwrap());
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

#[tokio::test]
async fn the_console_shows_rates_errors_shares_cost_and_closes_items() {
    let gw = start(&config(true).replace("    handoff: true\n", "    handoff: true\n    budget: { daily_usd: 2.5 }\n"))
        .await;
    let page = gw.get("/ui").await.text().await.unwrap();
    assert!(page.contains("the admin token was rejected"), "a wrong token is called the admin token");
    assert!(page.contains("@media (max-width: 600px)") && page.contains("overflow-x: auto"), "narrow screens");
    for column in ["\"requests\"", "\"errors\"", "\"error %\"", "\"share\"", "\"last error\""] {
        assert!(page.contains(column), "the page shows {column}");
    }
    assert!(page.contains("Close without answering") && page.contains("/close\", {}"));
    let queued = gw.post(&chat("helpdesk", false)).await;
    let id = header(&queued, "x-spillway-handoff-id").to_string();
    let state = gw.admin_get("/admin/state", ADMIN).await;
    let cascade = &state["cascades"][0];
    let model = &cascade["models"][0];
    assert_eq!((model["attempts"].as_u64(), model["failures"].as_u64()), (Some(1), Some(1)), "{state}");
    assert!(model["last_error"]["text"].as_str().unwrap().contains("upstream_error"), "{state}");
    assert!(model["last_error"]["at_unix_ms"].as_u64().is_some());
    assert_eq!(model["served"], 0);
    assert!(model["share"].is_null(), "no answers yet: {state}");
    assert_eq!(cascade["daily_budget_usd"], 2.5);
    assert_eq!(cascade["spent_today_usd"], 0.0);
    assert!(cascade["tier_shares"].is_object());
    // Closing an item without an answer.
    let closed = client()
        .post(format!("{}/admin/handoff/{id}/close", gw.url))
        .bearer_auth(ADMIN)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 200);
    let item: serde_json::Value = closed.json().await.unwrap();
    assert_eq!(
        (item["status"].as_str(), item["closed"].as_bool(), item["answer"].is_null()),
        (Some("answered"), Some(true), true)
    );
    let open = gw.admin_get("/admin/handoff?status=open", ADMIN).await;
    assert!(open["data"].as_array().unwrap().is_empty(), "{open}");
    let client_view: serde_json::Value =
        client().get(format!("{}/v1/handoff/{id}", gw.url)).send().await.unwrap().json().await.unwrap();
    assert_eq!(client_view["status"], "closed");
    let again = client().post(format!("{}/admin/handoff/{id}/close", gw.url)).bearer_auth(ADMIN).send().await.unwrap();
    assert_eq!(again.status(), 409, "closed once");
}

#[tokio::test]
async fn the_console_shares_add_up_by_model_and_tier() {
    let dir = std::env::temp_dir().join(format!("spillway-ui-share-{}", spillway::handoff::new_id()));
    let yaml = format!(
        "server:\n  admin_token: {ADMIN}\nstate:\n  data_dir: {}\nproviders:\n  m:\n    kind: mock\n    models: [{{ id: a }}, {{ id: b }}]\ncascades:\n  c:\n    models: [m/a]\n    last_resort: m/b\n{FAST_HEALTH}",
        dir.display()
    );
    let gw = start(&yaml).await;
    for stream in [false, true, false] {
        let r = gw.post(&chat("c", stream)).await;
        let _ = r.text().await;
    }
    let state = gw.admin_get("/admin/state", ADMIN).await;
    let c = &state["cascades"][0];
    assert_eq!(c["served"], 3, "{state}");
    assert_eq!(c["models"][0]["share"], 1.0, "{state}");
    assert_eq!(c["models"][1]["share"], 0.0, "{state}");
    assert_eq!(c["tier_shares"]["preferred"], 1.0, "{state}");
    assert_eq!(c["tier_shares"]["last_resort"], 0.0, "{state}");
    assert_eq!(c["models"][0]["attempts"], 3);
    let _ = std::fs::remove_dir_all(dir);
}
