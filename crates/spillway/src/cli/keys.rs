//! `spillway keys create|list|show|revoke`: a running gateway's virtual
//! keys, through its admin API (`/admin/keys`; token from
//! `SPILLWAY_ADMIN_TOKEN`, else the config's `server.admin_token`; URL from
//! `--url`, else the config's listen address).

use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

/// What to do with the keys.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Make a key; prints its secret once.
    Create {
        /// A name for people.
        #[arg(long)]
        name: Option<String>,
        /// A cascade (or provider/model ref) it may use; repeat for more (default: all).
        #[arg(long = "cascade")]
        cascades: Vec<String>,
        /// Requests per minute.
        #[arg(long)]
        rpm: Option<u64>,
        /// Tokens per minute.
        #[arg(long)]
        tpm: Option<u64>,
        /// Requests in flight.
        #[arg(long)]
        max_parallel: Option<u64>,
        /// Budget in USD per `--per`.
        #[arg(long)]
        budget_usd: Option<f64>,
        /// `day`, `month` or `total`.
        #[arg(long, default_value = "month")]
        per: String,
        /// When it stops working (RFC 3339 or a date).
        #[arg(long)]
        expires_at: Option<String>,
    },
    /// List every key (no secrets).
    List {
        /// Print the raw JSON.
        #[arg(long)]
        json: bool,
    },
    /// One key's limits and usage.
    Show {
        /// The key's id.
        id: String,
    },
    /// Revoke a key made through the admin API (every instance refuses it at once).
    Revoke {
        /// The key's id.
        id: String,
    },
}

/// Runs the command.
pub fn run(config_path: &Path, url: Option<String>, action: Action) -> ExitCode {
    super::admin_command(config_path, url, |url, token| async move {
        match action {
            Action::Create { name, cascades, rpm, tpm, max_parallel, budget_usd, per, expires_at } => {
                let mut body = json!({"name": name, "rpm": rpm, "tpm": tpm, "max_parallel": max_parallel,
                    "expires_at": expires_at});
                if !cascades.is_empty() {
                    body["cascades"] = json!(cascades);
                }
                if let Some(usd) = budget_usd {
                    body["budget"] = json!({"usd": usd, "per": per});
                }
                if let Some(m) = body.as_object_mut() {
                    m.retain(|_, v| !v.is_null());
                }
                let v = call(&url, &token, reqwest::Method::POST, "/admin/keys", Some(body)).await?;
                Ok(format!(
                    "Made key {} ({}). Its secret, shown this once:\n{}\n",
                    v["id"].as_str().unwrap_or("?"),
                    v["name"].as_str().unwrap_or(""),
                    v["key"].as_str().unwrap_or("?")
                ))
            }
            Action::List { json } => {
                let v = call(&url, &token, reqwest::Method::GET, "/admin/keys", None).await?;
                Ok(if json { format!("{v:#}\n") } else { render(&v) })
            }
            Action::Show { id } => {
                let v = call(&url, &token, reqwest::Method::GET, &format!("/admin/keys/{id}"), None).await?;
                Ok(format!("{v:#}\n"))
            }
            Action::Revoke { id } => {
                call(&url, &token, reqwest::Method::DELETE, &format!("/admin/keys/{id}"), None).await?;
                Ok(format!("Revoked {id}.\n"))
            }
        }
    })
}

async fn call(
    url: &str,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Result<Value, String> {
    let client = reqwest::Client::builder().no_proxy().build().map_err(|e| e.to_string())?;
    let mut req = client.request(method, format!("{url}{path}")).bearer_auth(token);
    if let Some(b) = &body {
        req = req.json(b);
    }
    let resp = req.send().await.map_err(|e| super::reach_error(url, &e))?;
    let status = resp.status().as_u16();
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    match status {
        200 | 201 => Ok(v),
        404 if path.starts_with("/admin/keys/") => Err("no such key".into()),
        400 | 409 => Err(v["error"]["message"].as_str().unwrap_or("refused").to_string()),
        s => Err(super::admin_status_error(s, &v)),
    }
}

/// The keys as lines: id, source, name, limits.
pub fn render(list: &Value) -> String {
    let keys = list["keys"].as_array().map(Vec::as_slice).unwrap_or_default();
    if keys.is_empty() {
        return "No keys.\n".into();
    }
    let mut out = String::new();
    for k in keys {
        let limit = |f: &str| k[f].as_u64().map_or("-".to_string(), |n| n.to_string());
        let budget = match (k["budget"]["usd"].as_f64(), k["budget"]["per"].as_str()) {
            (Some(usd), Some(per)) => format!("${usd:.2}/{per}"),
            _ => "-".into(),
        };
        let _ = writeln!(
            out,
            "{:<20} {:<6} rpm={:<6} tpm={:<8} parallel={:<4} budget={:<12} {}",
            k["id"].as_str().unwrap_or("?"),
            k["source"].as_str().unwrap_or(""),
            limit("rpm"),
            limit("tpm"),
            limit("max_parallel"),
            budget,
            k["name"].as_str().unwrap_or("")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keys_without_secrets() {
        let v = json!({"keys": [{"id": "cfg", "source": "config", "name": "cfg", "rpm": 30, "budget": {"usd": 5.0, "per": "day"}}]});
        let text = render(&v);
        assert!(text.contains("cfg") && text.contains("rpm=30") && text.contains("$5.00/day"), "{text}");
        assert_eq!(render(&json!({"keys": []})), "No keys.\n");
    }
}
