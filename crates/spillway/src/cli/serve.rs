//! `spillway serve`: load the config, start the application through the
//! composition root (`crate::app`), serve until SIGTERM/SIGINT; SIGHUP
//! reloads the config (see `crate::gateway::reload`). `--listen` replaces
//! the config's address (and is held to the same rule: no non-loopback
//! address without client keys unless the config allows it). With
//! `server.generate_admin_token` the token made at start is printed with
//! the console's address and kept in `state.data_dir` for `spillway status`.

use crate::app::{App, Listener};
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

/// The file in `state.data_dir` that holds a generated admin token.
pub const TOKEN_FILE: &str = "admin-token";

/// The token a running gateway generated, from its `data_dir`.
pub(crate) fn read_generated_token(data_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(data_dir.join(TOKEN_FILE)).ok()?;
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

/// A generated admin token, and where it is kept and served.
struct Generated {
    token: crate::secret::Secret,
    dir: std::path::PathBuf,
    listen: std::net::SocketAddr,
}

impl Generated {
    fn of(config: &crate::config::Config) -> Option<Self> {
        let token = config.server.admin_token.clone().filter(|_| config.server.generate_admin_token)?;
        Some(Self { token, dir: config.state.data_dir.clone(), listen: config.server.listen })
    }
}

/// Keeps the generated token where `spillway status` reads it (mode 0600),
/// and says where the console is.
fn announce_token(g: &Generated) {
    let (token, dir) = (&g.token, &g.dir);
    let written = std::fs::create_dir_all(dir).and_then(|()| {
        let path = dir.join(TOKEN_FILE);
        let _ = std::fs::remove_file(&path);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        std::io::Write::write_all(&mut options.open(&path)?, format!("{}\n", token.expose()).as_bytes())
    });
    if let Err(e) = written {
        tracing::warn!(dir = %dir.display(), error = %e, "Cannot keep the generated admin token; `spillway status` needs SPILLWAY_ADMIN_TOKEN.");
    }
    // Printed, not logged: it is for the person at this terminal, and log
    // lines go to collectors. A closed stdout (`serve | head -1`) must not
    // stop the gateway, so the write's error is ignored (`println!` panics).
    let _ = writeln!(
        std::io::stdout(),
        "Console: http://{}/ui  admin token (made for this run, loopback only): {}\n\
         `spillway status` finds it in {}.",
        g.listen,
        token.expose(),
        dir.join(TOKEN_FILE).display()
    );
}

/// Runs the command.
pub fn run(path: &Path, listen: Option<&str>) -> ExitCode {
    let config = match super::load(path) {
        Ok(c) => c,
        Err(errors) => {
            for e in &errors.0 {
                tracing::error!(error = %e, "Invalid config.");
            }
            return ExitCode::from(1);
        }
    };
    let mut config = config;
    if let Some(text) = listen {
        let s = &config.server;
        let refused = crate::config::compile::listen::parse_listen(text).and_then(|addr| {
            let exposed = crate::config::compile::listen::exposed_without_keys(
                addr,
                !s.api_keys.is_empty() || !config.keys.is_empty(),
                s.allow_unauthenticated,
            );
            let generated = (s.generate_admin_token && !addr.ip().is_loopback())
                .then(|| format!("`server.generate_admin_token` is for loopback addresses only, and `{addr}` is not"));
            exposed.or(generated).map_or(Ok(addr), Err)
        });
        match refused {
            Ok(addr) => config.server.listen = addr,
            Err(e) => {
                tracing::error!(error = %e, "Invalid --listen.");
                return ExitCode::from(1);
            }
        }
    }
    let generated = Generated::of(&config);
    // The main thread's loop runs the background jobs; requests are served
    // by `server.workers` threads of their own (`server::workers`).
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "Cannot start the async runtime.");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(async move {
        // Signals first: a SIGTERM or SIGHUP that arrives while starting
        // must be handled, not take the process's default action.
        let shutdown = CancellationToken::new();
        watch_signals(shutdown.clone());
        let listen = config.server.listen;
        let app = match App::start(config) {
            Ok(app) => app,
            Err(e) => {
                tracing::error!(error = %e, "Cannot start the gateway.");
                return ExitCode::from(1);
            }
        };
        let listener = match crate::server::workers::listen(listen) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(%listen, error = %e, "Cannot listen.");
                app.stop().await;
                return ExitCode::from(1);
            }
        };
        if let Some(g) = &generated {
            announce_token(g);
        }
        match app.serve(Listener::Workers(listener, None), shutdown).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!(error = %e, "Server failed.");
                ExitCode::from(1)
            }
        }
    })
}

/// Cancels `shutdown` on SIGINT or SIGTERM. The handlers are installed
/// here, before the listener is bound: a signal that arrives the moment the
/// port accepts connections stops the gateway gracefully instead of taking
/// the signal's default action (killing it mid-start).
fn watch_signals(shutdown: CancellationToken) {
    #[cfg(unix)]
    let installed = {
        use tokio::signal::unix::{signal, SignalKind};
        match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
            (Ok(term), Ok(int)) => Some((term, int)),
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(error = %e, "Cannot watch SIGTERM/SIGINT; only Ctrl-C stops the gateway.");
                None
            }
        }
    };
    #[allow(clippy::disallowed_methods)]
    // the one long-lived task outside the supervisor: it ends the process
    tokio::spawn(async move {
        #[cfg(unix)]
        match installed {
            Some((mut term, mut int)) => {
                tokio::select! {
                    _ = term.recv() => {},
                    _ = int.recv() => {},
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("Shutdown signal received.");
        shutdown.cancel();
    });
}
