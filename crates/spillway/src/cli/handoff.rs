//! `spillway handoff list [--status open|answered]` and `spillway handoff
//! answer ID TEXT`: the human-operator queue of a running gateway, through
//! its admin API (token from `SPILLWAY_ADMIN_TOKEN`, else the config's
//! `server.admin_token`; URL from `--url`, else the config's listen address).

use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

/// What to do with the queue.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// List queued requests (open ones by default).
    List {
        /// `open`, `answered` or `all`.
        #[arg(long, default_value = "open")]
        status: String,
        /// Print the raw JSON.
        #[arg(long)]
        json: bool,
    },
    /// Answer a queued request.
    Answer {
        /// The item id (`ho_…`).
        id: String,
        /// The answer the client will read.
        text: String,
    },
    /// Close a queued request without answering it (the client reads `closed`).
    Close {
        /// The item id (`ho_…`).
        id: String,
    },
}

/// Runs the command.
pub fn run(config_path: &Path, url: Option<String>, action: Action) -> ExitCode {
    super::admin_command(config_path, url, |url, token| async move {
        let token = Some(token);
        match action {
            Action::List { status, json } => {
                let v = call(&url, token.as_deref(), &format!("/admin/handoff?status={status}"), None).await?;
                Ok(if json { format!("{v:#}\n") } else { render(&v) })
            }
            Action::Answer { id, text } => {
                let path = format!("/admin/handoff/{id}/answer");
                call(&url, token.as_deref(), &path, Some(json!({"text": text}))).await?;
                Ok(format!("Answered {id}.\n"))
            }
            Action::Close { id } => {
                let path = format!("/admin/handoff/{id}/close");
                call(&url, token.as_deref(), &path, Some(json!({}))).await?;
                Ok(format!("Closed {id} without an answer.\n"))
            }
        }
    })
}

async fn call(url: &str, token: Option<&str>, path: &str, body: Option<Value>) -> Result<Value, String> {
    let client = reqwest::Client::new();
    let mut req = match &body {
        Some(b) => client.post(format!("{url}{path}")).json(b),
        None => client.get(format!("{url}{path}")),
    };
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.map_err(|e| super::reach_error(url, &e))?;
    let status = resp.status().as_u16();
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    match status {
        200 => Ok(v),
        404 if body.is_some() => {
            Err(format!("the gateway answered HTTP 404: {}", v["error"]["message"].as_str().unwrap_or("no such item")))
        }
        s => Err(super::admin_status_error(s, &v)),
    }
}

/// The list as lines: id, status, cascade, age, the last user message.
pub fn render(list: &Value) -> String {
    let items = list["data"].as_array().map(Vec::as_slice).unwrap_or_default();
    if items.is_empty() {
        return "No items.\n".into();
    }
    let mut out = String::new();
    for item in items {
        let last_user = item["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
            .map(|m| match &m["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .unwrap_or_default();
        let short: String = last_user.chars().take(80).collect();
        let created = item["created_ms"].as_u64().map(crate::alerts::clock_text).unwrap_or_default();
        let _ = writeln!(
            out,
            "{}  {}  {}  {}\n    user: {}",
            item["id"].as_str().unwrap_or("?"),
            item["status"].as_str().unwrap_or("?"),
            item["cascade"].as_str().unwrap_or("?"),
            created,
            short
        );
        if let Some(a) = item["answer"].as_str() {
            let _ = writeln!(out, "    answer: {a}");
        }
    }
    out
}
