//! `spillway status [--url URL]`: ask a running gateway's admin API for its
//! cascades, dead marks, breaker states and load, and print them as tables.
//!
//! The admin token comes from `SPILLWAY_ADMIN_TOKEN`, else from the
//! config's `server.admin_token`; the URL defaults to the config's listen
//! address.

use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

/// Runs the command.
pub fn run(config_path: &Path, url: Option<String>) -> ExitCode {
    let target = match super::AdminTarget::resolve(config_path, url) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let token = match target.token() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let runtime = match super::client_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let result = runtime.block_on(fetch(&target.url, token));
    match result {
        Ok(state) => {
            print!("{}", render(&state));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

/// `GET /admin/state`.
pub async fn fetch(url: &str, token: &str) -> Result<Value, String> {
    let client = reqwest::Client::builder().no_proxy().build().map_err(|e| e.to_string())?;
    let req = client.get(format!("{}/admin/state", url.trim_end_matches('/'))).bearer_auth(token);
    let resp = req.send().await.map_err(|e| super::reach_error(url, &e))?;
    match resp.status().as_u16() {
        200 => resp.json().await.map_err(|e| format!("the gateway answered something that is not JSON: {e}")),
        s => Err(super::admin_status_error(s, &resp.json().await.unwrap_or(Value::Null))),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// Renders `/admin/state` as tables.
pub fn render(state: &Value) -> String {
    let mut out = String::new();
    let backend = &state["state"];
    let _ = writeln!(
        out,
        "State: {}{}",
        text(&backend["backend"]),
        if backend["degraded"] == Value::Bool(true) { " (DEGRADED: serving from local state)" } else { "" }
    );
    for cascade in state["cascades"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let _ = writeln!(out, "\nCascade {}", text(&cascade["name"]));
        let mut rows =
            vec![["#".to_string(), "model".into(), "tier".into(), "status".into(), "breaker".into(), "ttft".into()]];
        for (i, m) in cascade["models"].as_array().map(Vec::as_slice).unwrap_or_default().iter().enumerate() {
            let status = match m["dead"].as_object() {
                Some(d) => format!("dead: {} ({}s left)", text(&d["reason"]), text(&d["seconds_left"])),
                None => "alive".into(),
            };
            let b = &m["breaker"];
            let breaker = match b["reason"].as_str() {
                Some(r) => format!("{} ({r})", text(&b["state"])),
                None => text(&b["state"]),
            };
            let ttft = m["ttft_ms"].as_f64().map(|t| format!("{t:.0} ms")).unwrap_or_else(|| "-".into());
            rows.push([(i + 1).to_string(), text(&m["model"]), text(&m["tier"]), status, breaker, ttft]);
        }
        table(&mut out, &rows);
    }
    if let Some(load) = state["load"].as_array().filter(|l| !l.is_empty()) {
        let _ = writeln!(out, "\nLoad");
        let mut rows = vec![[
            "provider".to_string(),
            "load".into(),
            "profile".into(),
            "source".into(),
            "stale".into(),
            String::new(),
        ]];
        for l in load {
            let value = l["load"].as_f64().map(|v| format!("{v:.2}")).unwrap_or_else(|| "unknown".into());
            rows.push([
                text(&l["provider"]),
                value,
                text(&l["profile"]),
                text(&l["source"]),
                text(&l["stale"]),
                String::new(),
            ]);
        }
        table(&mut out, &rows);
    }
    if let Some(depth) = state["handoff_queue_depth"].as_u64() {
        let _ = writeln!(out, "\nHandoff queue: {depth} open");
    }
    out
}

fn table<const N: usize>(out: &mut String, rows: &[[String; N]]) {
    let widths: Vec<usize> = (0..N).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    for row in rows {
        let line: Vec<String> = row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        let _ = writeln!(out, "  {}", line.join("  ").trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_cascades_marks_and_breakers() {
        let state = json!({
            "state": {"backend": "memory", "degraded": false},
            "cascades": [{"name": "chat", "models": [
                {"model": "groq/llama", "tier": "preferred", "dead": {"reason": "rate_limited", "seconds_left": 42}, "breaker": {"state": "closed"}, "ttft_ms": 210.4},
                {"model": "paid/pro", "tier": "last_resort", "dead": null, "breaker": {"state": "open", "reason": "5 consecutive failures"}, "ttft_ms": null}
            ]}]
        });
        let text = render(&state);
        assert!(text.contains("Cascade chat"), "{text}");
        assert!(text.contains("dead: rate_limited (42s left)"), "{text}");
        assert!(text.contains("open (5 consecutive failures)"), "{text}");
        assert!(text.contains("210 ms"), "{text}");
    }
}
