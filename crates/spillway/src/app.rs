//! The composition root: the one function that builds and starts the
//! application — config → gateway (and its generation's jobs) → shared
//! state store → process-wide jobs → server.
//!
//! `spillway serve`, `spillway drill` and the integration tests all start
//! the gateway through [`App::start`]; they differ only in how requests
//! arrive (a listener on serving threads, one listener on the current event
//! loop, or in-process calls of the handler) and in the clock they run on.
//!
//! What lives where: the process owns a [`Supervisor`] with the jobs that
//! outlive config generations (state sync and its Redis link, discovery
//! refresh, reload on SIGHUP and on a changed file); each config generation owns its own jobs under
//! a guard (`gateway::Generation`), started when it becomes live and
//! stopped when its last gateway drops.

use crate::config::{Config, StateBackend};
use crate::gateway::{Gateway, Live, Shared};
use crate::server::{self, AppState};
use crate::supervisor::Supervisor;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long background jobs get to stop after the server drained.
const JOBS_GRACE: Duration = Duration::from_secs(5);

/// Why the application could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A provider's client could not be built (an unreadable `ca_file`).
    #[error("cannot build the gateway: {0}")]
    Build(#[from] crate::providers::BuildError),
    /// The shared state store is misconfigured.
    #[error("cannot set up the shared state store: {0}")]
    State(#[from] crate::state::StateError),
}

/// Where client requests come from.
pub enum Listener {
    /// `server.workers` serving threads, each with its own event loop, as
    /// `spillway serve` runs (`None`: as many as the config says).
    Workers(std::net::TcpListener, Option<usize>),
    /// One listener served on the current event loop.
    Here(tokio::net::TcpListener),
}

/// A started application.
pub struct App {
    /// What every handler reads (the live gateway among it).
    pub state: Arc<AppState>,
    supervisor: Supervisor,
}

impl App {
    /// Builds the gateway from `config` and starts every background job:
    /// the generation's (load monitors, alerts, handoff retention, spend
    /// sharing), then the process's (shared state when `state.backend:
    /// redis`, the handoff spool's drain, discovery refresh, reload on SIGHUP — its handler installed
    /// before this returns, so a SIGHUP right after start reloads instead of
    /// killing the process). Needs a tokio runtime; does no network I/O.
    pub fn start(config: Config) -> Result<Self, StartError> {
        let supervisor = Supervisor::new(CancellationToken::new());
        let shared = Shared::default();
        let state_config = config.state.clone();
        let gateway = Gateway::build(config, &shared)?;
        let live = Arc::new(Live::new(gateway, supervisor.clone()));
        if state_config.backend == StateBackend::Redis {
            let rules_from = live.clone();
            let rules = Arc::new(move || rules_from.load().config.health.breaker);
            crate::state::sync::start_redis(&state_config, &shared.health, &shared.state, &supervisor, rules)?;
        }
        supervisor.spawn(crate::gateway::refresh::job(&live));
        supervisor.spawn(crate::handoff::spool::Drain { desk: shared.handoff.clone() });
        supervisor.spawn(crate::gateway::reload::ReloadOnSighup::new(live.clone()));
        supervisor.spawn(crate::gateway::watch::ReloadOnChange::new(live.clone()));
        Ok(Self { state: AppState::new(live), supervisor })
    }

    /// Serves `listener` until `shutdown` is cancelled, lets requests in
    /// flight drain (`server.shutdown_grace`), then stops every job.
    pub async fn serve(self, listener: Listener, shutdown: CancellationToken) -> std::io::Result<()> {
        let served = match listener {
            Listener::Workers(l, workers) => {
                let workers = workers.unwrap_or_else(|| self.state.gateway.load().config.server.workers);
                server::workers::serve(l, self.state.clone(), shutdown, workers).await
            }
            Listener::Here(l) => server::serve(l, self.state.clone(), shutdown).await,
        };
        self.stop().await;
        served
    }

    /// Stops every job: the process's and every generation's (they run on
    /// children of the process's supervisor).
    pub async fn stop(self) {
        self.supervisor.stop(JOBS_GRACE).await;
    }
}
