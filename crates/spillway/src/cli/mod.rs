//! The command line (SPEC §3): one file per subcommand.
//!
//! Exit codes: 0 ok, 1 invalid config or failed command, 2 usage error
//! (clap's own).

pub mod canary;
pub mod check;
pub mod discover;
pub mod drill;
pub mod handoff;
pub mod healthcheck;
pub mod keys;
pub mod litellm;
pub mod serve;
pub mod status;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Spillway: an OpenAI-compatible LLM gateway that keeps answering when
/// providers fail.
#[derive(Debug, Parser)]
#[command(name = "spillway", version, about)]
pub struct Cli {
    /// Config file.
    #[arg(long, global = true, env = "SPILLWAY_CONFIG", default_value = "spillway.yaml")]
    pub config: PathBuf,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the gateway.
    Serve {
        /// Listen on this address instead of the config's `server.listen`
        /// (`host:port`: `0.0.0.0:4000`, `localhost:4000`).
        #[arg(long)]
        listen: Option<String>,
    },
    /// Validate the config; print every error with its YAML path, or the resolved cascades.
    Check,
    /// Fetch every model listing now; print each discovered cascade and its diff against the cache.
    Discover {
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Ask a running gateway for its cascades, dead marks, breakers and load.
    Status {
        /// The gateway's base URL (default: the config's listen address).
        #[arg(long)]
        url: Option<String>,
    },
    /// The human-operator queue of a running gateway: list items, answer one.
    Handoff {
        /// `list` or `answer`.
        #[command(subcommand)]
        action: handoff::Action,
        /// The gateway's base URL (default: the config's listen address).
        #[arg(long, global = true)]
        url: Option<String>,
    },
    /// A running gateway's virtual keys: create, list, show, revoke.
    Keys {
        /// `create`, `list`, `show` or `revoke`.
        #[command(subcommand)]
        action: keys::Action,
        /// The gateway's base URL (default: the config's listen address).
        #[arg(long, global = true)]
        url: Option<String>,
    },
    /// Replay a fault scenario against the real engine with mock providers; print a report and write an SVG chart.
    Drill {
        /// The scenario file (its `config` names the gateway config).
        scenario: std::path::PathBuf,
        /// Where to write the chart (default: the scenario's name with `.svg`, in the current directory).
        #[arg(long, visible_alias = "out")]
        svg: Option<std::path::PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run every canary of the config once, on each of its models; print the results; exit 1 when one failed.
    Canary {
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Exit 0 when a running gateway's /readyz answers 200, else 1 (a container HEALTHCHECK).
    Healthcheck {
        /// The URL to probe (default: /readyz on the config's listen address).
        #[arg(long)]
        url: Option<String>,
    },
    /// Turn a LiteLLM proxy config into a Spillway config; list what could not be carried over.
    ImportLitellm {
        /// The LiteLLM config (`model_list`, `router_settings`, …).
        litellm_config: PathBuf,
        /// Where to write the Spillway config (default: stdout).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print the JSON Schema of the config file (for editors).
    #[command(hide = true)]
    Schema,
}

/// Parses the command line and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        // A probe that runs every few seconds: its output is its exit code.
        Command::Drill { .. } | Command::Healthcheck { .. } => crate::telemetry::init_with_default("error"),
        _ => crate::telemetry::init(),
    }
    match cli.command {
        Command::Serve { listen } => serve::run(&cli.config, listen.as_deref()),
        Command::Check => check::run(&cli.config),
        Command::Discover { json } => discover::run(&cli.config, json),
        Command::Status { url } => status::run(&cli.config, url),
        Command::Handoff { action, url } => handoff::run(&cli.config, url, action),
        Command::Keys { action, url } => keys::run(&cli.config, url, action),
        Command::Drill { scenario, svg, json } => drill::run(&scenario, svg, json),
        Command::Healthcheck { url } => healthcheck::run(&cli.config, url),
        Command::Canary { json } => canary::run(&cli.config, json),
        Command::ImportLitellm { litellm_config, out } => litellm::run(&litellm_config, out.as_deref()),
        Command::Schema => {
            print!("{}", crate::config::json_schema());
            ExitCode::SUCCESS
        }
    }
}

/// Replaces SIGHUP's default action (terminate) with Tokio's handler,
/// which only notes the signal; `main` calls it before anything else, so a
/// reload request sent while the process is still starting (a service
/// manager's `ExecReload`, a config watcher) is not fatal. Tokio keeps a
/// signal's handler installed for the life of the process and delivers
/// it to the listener that the reload job registers later, on any
/// runtime (one that arrived before it listens is delivered then: a
/// reload of the config just read, which changes nothing).
pub fn hold_hangups() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let installed = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .map(|rt| rt.block_on(async { signal(SignalKind::hangup()).map(drop) }));
        if let Err(e) | Ok(Err(e)) = installed {
            eprintln!("spillway: cannot handle SIGHUP ({e}); a SIGHUP during start-up would stop the process");
        }
    }
}

/// Whether `path` is the default path, not given by the user.
fn is_default_path(path: &std::path::Path) -> bool {
    path == std::path::Path::new("spillway.yaml") && std::env::var_os("SPILLWAY_CONFIG").is_none()
}

/// Loads the config; with the default path and no file there, the embedded
/// demo (mock providers only), so `spillway serve` works anywhere.
pub fn load(path: &std::path::Path) -> Result<crate::config::Config, crate::config::ConfigErrors> {
    if is_default_path(path) && !path.exists() {
        tracing::info!("No spillway.yaml here: using the embedded demo config (mock providers only).");
        let lookup = |name: &str| std::env::var(name).ok();
        return crate::config::load_str(crate::config::DEMO_YAML, None, &lookup);
    }
    crate::config::load_file(path)
}

/// Renders every error of a file, one per line under its name (what
/// `check`, `discover` and `drill` print for an invalid file).
pub(crate) fn errors_text(path: &std::path::Path, errors: &crate::config::ConfigErrors) -> String {
    let mut out = format!("{}: {} error(s)\n", path.display(), errors.0.len());
    for e in &errors.0 {
        out.push_str(&format!("  {e}\n"));
    }
    out
}

/// Where a command that talks to a running gateway sends its admin calls:
/// `--url` or the config's listen address, and the admin token from
/// `SPILLWAY_ADMIN_TOKEN` or the config.
pub(crate) struct AdminTarget {
    /// Base URL without a trailing `/`.
    pub url: String,
    /// The admin token, if any.
    pub token: Option<String>,
}

impl AdminTarget {
    /// Resolves the target of `status` and `handoff`. A config named with
    /// `--config` (or `SPILLWAY_CONFIG`) must load: guessing an address
    /// after a typo in its path would talk to the wrong gateway. With
    /// `--url` and no config named, no config is read (the embedded demo
    /// would only announce itself).
    pub(crate) fn resolve(config_path: &std::path::Path, url: Option<String>) -> Result<Self, String> {
        let config = if is_default_path(config_path) {
            match url {
                Some(_) => None,
                None => load(config_path).ok(),
            }
        } else if !config_path.exists() {
            return Err(format!(
                "{}: no such config file (name the gateway with --url, or fix --config)",
                config_path.display()
            ));
        } else {
            Some(crate::config::load_file(config_path).map_err(|e| errors_text(config_path, &e))?)
        };
        let url = url
            .or_else(|| config.as_ref().map(|c| format!("http://{}", c.server.listen)))
            .unwrap_or_else(|| "http://127.0.0.1:8080".to_string());
        let token = std::env::var("SPILLWAY_ADMIN_TOKEN").ok().filter(|t| !t.trim().is_empty()).or_else(|| {
            match config.as_ref() {
                // Made by the running gateway, not by this process.
                Some(c) if c.server.generate_admin_token => serve::read_generated_token(&c.state.data_dir),
                Some(c) if c.server.admin_token.is_some() => {
                    c.server.admin_token.as_ref().map(|t| t.expose().to_string())
                }
                // A gateway started here with a generated token (the demo).
                Some(c) => serve::read_generated_token(&c.state.data_dir),
                None => serve::read_generated_token(std::path::Path::new("spillway-data")),
            }
        });
        Ok(Self { url: url.trim_end_matches('/').to_string(), token })
    }

    /// The token, or the error that says none is configured.
    pub(crate) fn token(&self) -> Result<&str, String> {
        self.token.as_deref().ok_or_else(|| {
            "no admin token configured: set SPILLWAY_ADMIN_TOKEN, or server.admin_token in the config (--config)"
                .to_string()
        })
    }
}

/// A failed call to a gateway, with its cause ("connection refused"), not
/// only reqwest's "error sending request".
pub(crate) fn reach_error(url: &str, e: &reqwest::Error) -> String {
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !causes.iter().any(|c: &String| c.contains(&text) || text.contains(c.as_str())) {
            causes.push(text);
        }
        source = s.source();
    }
    let what = if e.is_timeout() { "timed out".to_string() } else { e.without_url_text() };
    match causes.last() {
        Some(root) => format!("cannot reach the gateway at {url}: {what}: {root}"),
        None => format!("cannot reach the gateway at {url}: {what}"),
    }
}

/// The admin API's answer to a status that is not 200, in words.
pub(crate) fn admin_status_error(status: u16, body: &serde_json::Value) -> String {
    match status {
        401 => "the admin token was rejected by the gateway (check SPILLWAY_ADMIN_TOKEN or server.admin_token)".into(),
        404 => "the admin API is disabled on that gateway (it has no server.admin_token)".into(),
        s => format!("the gateway answered HTTP {s}: {}", body["error"]["message"].as_str().unwrap_or("no details")),
    }
}

/// `reqwest::Error`'s text without the URL (which the message names already).
trait WithoutUrl {
    fn without_url_text(&self) -> String;
}

impl WithoutUrl for reqwest::Error {
    fn without_url_text(&self) -> String {
        let mut text = self.to_string();
        if let Some(u) = self.url() {
            text = text.replace(&format!(" for url ({u})"), "");
        }
        text
    }
}

/// A small runtime for a command's few HTTP calls; `Err` is the exit code.
/// Runs an admin API command: resolves the gateway's URL and admin token,
/// runs `work(url, token)` and prints what it returns (exit 0) or its
/// error (exit 1).
pub(crate) fn admin_command<F>(
    config_path: &std::path::Path,
    url: Option<String>,
    work: impl FnOnce(String, String) -> F,
) -> ExitCode
where
    F: std::future::Future<Output = Result<String, String>>,
{
    let target = AdminTarget::resolve(config_path, url).and_then(|t| {
        let token = t.token()?.to_string();
        Ok((t.url, token))
    });
    let (url, token) = match target {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let runtime = match client_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    match runtime.block_on(work(url, token)) {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

pub(crate) fn client_runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
        eprintln!("cannot start: {e}");
        ExitCode::from(1)
    })
}
