//! `spillway serve`: load the config, build the gateway, serve until
//! SIGTERM/SIGINT; SIGHUP reloads the config (see `crate::reload`).

use crate::gateway::{Gateway, Shared};
use crate::server::{self, AppState};
use crate::supervisor::Supervisor;
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
        let listen = config.server.listen;
        let gateway = match Gateway::build(config, &Shared::default()) {
            Ok(g) => g,
            Err(e) => {
                tracing::error!(error = %e, "Cannot build the gateway.");
                return ExitCode::from(1);
            }
        };
        let listener = match tokio::net::TcpListener::bind(listen).await {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(%listen, error = %e, "Cannot listen.");
                return ExitCode::from(1);
            }
        };
        let shutdown = CancellationToken::new();
        watch_signals(shutdown.clone());
        // Background jobs stop with the process, after the server drained.
        let supervisor = Supervisor::new(CancellationToken::new());
        gateway.start_background(&supervisor);
        let state = AppState::new(gateway);
        // Shared state (`state.backend: redis`); never waits on Redis.
        if let Err(e) = crate::state::sync::start(&state, &supervisor) {
            tracing::error!(error = %e, "Cannot set up the shared state store.");
            return ExitCode::from(1);
        }
        // Discovery refresh (restores the cached round first) and SIGHUP reload.
        crate::discovery::refresh::start(&state, &supervisor);
        supervisor.spawn(crate::reload::ReloadOnSighup::new(state.clone()));
        let workers = state.gateway.load().config.server.workers;
        let served = match listener.into_std() {
            Ok(listener) => server::workers::serve(listener, state, shutdown, workers).await,
            Err(e) => Err(e),
        };
        supervisor.stop(std::time::Duration::from_secs(5)).await;
        match served {
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
