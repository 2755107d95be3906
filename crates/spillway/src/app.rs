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
        shared.telemetry.open(&config.telemetry, &shared.metrics, &supervisor);
        let gateway = Gateway::build(config, &shared)?;
        let live = Arc::new(Live::new(gateway, supervisor.clone()));
        if state_config.backend == StateBackend::Redis {
            let rules_from = live.clone();
            let rules = Arc::new(move || rules_from.load().config.health.breaker);
            crate::state::sync::start_redis(&state_config, &shared.health, &shared.state, &supervisor, rules)?;
        }
        supervisor.spawn(crate::gateway::refresh::job(&live));
        supervisor.spawn(crate::gateway::canary::CanaryJob { live: live.clone() });
        supervisor.spawn(crate::handoff::spool::Drain { desk: shared.handoff.clone() });
        supervisor.spawn(crate::gateway::reload::ReloadOnSighup::new(live.clone()));
        supervisor.spawn(crate::gateway::watch::ReloadOnChange::new(live.clone()));
        Ok(Self { state: AppState::new(live), supervisor })
    }

    /// Serves `listener` until `shutdown` is cancelled, then drains:
    /// `/readyz` answers 503 at once, new connections are still taken for
    /// `server.drain_delay` (a load balancer's time to stop sending), then
    /// the listener closes and requests in flight get
    /// `server.shutdown_grace`; last, every job stops.
    pub async fn serve(self, listener: Listener, shutdown: CancellationToken) -> std::io::Result<()> {
        let (close, state) = (CancellationToken::new(), self.state.clone());
        let serving = async {
            match listener {
                Listener::Workers(l, workers) => {
                    let workers = workers.unwrap_or_else(|| state.gateway.load().config.server.workers);
                    server::workers::serve(l, state.clone(), close.clone(), workers).await
                }
                Listener::Here(l) => server::serve(l, state.clone(), close.clone()).await,
            }
        };
        let drain = async {
            shutdown.cancelled().await;
            state.draining.store(true, std::sync::atomic::Ordering::Release);
            let delay = state.gateway.load().config.server.drain_delay;
            if !delay.is_zero() {
                tracing::info!(
                    delay_s = delay.as_secs_f64(),
                    "Draining: /readyz answers 503; still accepting for now."
                );
                tokio::time::sleep(delay).await;
            }
            close.cancel();
        };
        tokio::pin!(serving);
        let served = tokio::select! {
            served = &mut serving => served,
            () = drain => serving.await,
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
