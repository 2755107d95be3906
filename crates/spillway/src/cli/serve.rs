//! `spillway serve`: load the config, start the application through the
//! composition root (`crate::app`), serve until SIGTERM/SIGINT; SIGHUP
//! reloads the config (see `crate::gateway::reload`).

use crate::app::{App, Listener};
use std::path::Path;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

/// Runs the command.
pub fn run(path: &Path) -> ExitCode {
    let config = match super::load(path) {
        Ok(c) => c,
        Err(errors) => {
            for e in &errors.0 {
                tracing::error!(error = %e, "Invalid config.");
            }
            return ExitCode::from(1);
        }
    };
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
        let listener = match std::net::TcpListener::bind(listen).and_then(|l| l.set_nonblocking(true).map(|()| l)) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(%listen, error = %e, "Cannot listen.");
                app.stop().await;
                return ExitCode::from(1);
            }
        };
        match app.serve(Listener::Workers(listener, None), shutdown).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!(error = %e, "Server failed.");
                ExitCode::from(1)
            }
        }
    })
}

/// Cancels `shutdown` on SIGINT or SIGTERM.
fn watch_signals(shutdown: CancellationToken) {
    #[allow(clippy::disallowed_methods)]
    // the one long-lived task outside the supervisor: it ends the process
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "Cannot watch SIGTERM; only Ctrl-C stops the gateway.");
                    let _ = ctrl_c.await;
                    shutdown.cancel();
                    return;
                }
            };
            tokio::select! {
                _ = ctrl_c => {},
                _ = term.recv() => {},
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        tracing::info!("Shutdown signal received.");
        shutdown.cancel();
    });
}
