//! The command line (SPEC §3): one file per subcommand.
//!
//! Exit codes: 0 ok, 1 invalid config or failed command, 2 usage error
//! (clap's own).

pub mod check;
pub mod discover;
pub mod handoff;
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
    Serve,
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
    /// Print the JSON Schema of the config file (for editors).
    #[command(hide = true)]
    Schema,
}

/// Parses the command line and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    crate::telemetry::init();
    match cli.command {
        Command::Serve => serve::run(&cli.config),
        Command::Check => check::run(&cli.config),
        Command::Discover { json } => discover::run(&cli.config, json),
        Command::Status { url } => status::run(&cli.config, url),
        Command::Handoff { action, url } => handoff::run(&cli.config, url, action),
        Command::Schema => {
            print!("{}", crate::config::json_schema());
            ExitCode::SUCCESS
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
        tracing::info!("No spillway.yaml here: running the embedded demo config (mock providers only).");
        let lookup = |name: &str| std::env::var(name).ok();
        return crate::config::load_str(crate::config::DEMO_YAML, None, &lookup);
    }
    crate::config::load_file(path)
}
