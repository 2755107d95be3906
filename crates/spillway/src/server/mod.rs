//! The HTTP server: accept loop, connection settings, graceful shutdown.
//!
//! Connections are served by the gateway's own HTTP/1.1 ([`http1`]) with
//! a header-read timeout (a slow client cannot hold a connection open by
//! trickling headers), a body read whole within its own bounds, and
//! keep-alive. On shutdown the listener closes at once, idle connections
//! close, and requests in flight get `server.shutdown_grace` to finish.

pub mod admin;
pub mod admin_discovery;
pub mod admin_keys;
pub mod admin_load;
pub mod admin_state;
pub mod aliases;
pub mod answer_headers;
pub mod auth;
pub mod chat;
pub mod client_io;
pub mod completions;
pub mod conventions;
pub mod embeddings;
pub mod feedback;
pub mod handoff_routes;
pub mod http1;
pub mod keyed;
pub mod kinds;
pub mod messages;
pub mod responses;
pub mod routes;
pub mod stored_routes;
pub mod ui;
pub mod workers;

use crate::gateway::Live;
use crate::metrics::Metrics;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// State shared by every handler.
#[derive(Debug)]
pub struct AppState {
    /// The live gateway; replaced atomically on reload and refresh.
    pub gateway: Arc<Live>,
    /// Metrics (outlive reloads).
    pub metrics: Arc<Metrics>,
    /// Chat requests being served now (for `max_concurrent_requests`).
    pub in_flight: AtomicUsize,
    /// Shutting down: `/readyz` answers 503 so load balancers stop
    /// sending, while requests in flight finish.
    pub draining: std::sync::atomic::AtomicBool,
}

impl AppState {
    /// Serves the live gateway `gateway`.
    pub fn new(gateway: Arc<Live>) -> Arc<Self> {
        let metrics = gateway.load().metrics.clone();
        Arc::new(Self { gateway, metrics, in_flight: AtomicUsize::new(0), draining: Default::default() })
    }
}

/// The connection's handler: chat completions go straight to their
/// handler; everything else through the router. (Routing the hot path by
/// hand keeps the router's nested services and their future moves off it:
/// they showed as the largest single cost in instruction profiles.)
#[derive(Clone)]
struct Front {
    state: Arc<AppState>,
    router: TowerToHyperService<axum::Router>,
    /// The connection's link, which the requests on it carry in their notes.
    link: Option<Arc<crate::client_link::ClientLink>>,
}

impl http1::Handler for Front {
    fn call(&self, mut req: http::Request<http1::RequestBody>) -> impl Future<Output = http1::Answer> + Send {
        let entered = {
            let gw = self.state.gateway.load();
            conventions::enter(&mut req, gw.config.server.cors.as_ref(), self.link.clone())
        };
        let route = match entered {
            Ok(entered) => {
                aliases::add_v1(&mut req);
                let chat = req.method() == http::Method::POST && req.uri().path() == "/v1/chat/completions";
                Route::Serve { chat, req, entered }
            }
            Err(preflight) => Route::Answered(Box::new(http1::Answer::from(*preflight))),
        };
        async move {
            let (chat, req, entered) = match route {
                Route::Answered(preflight) => return *preflight,
                Route::Serve { chat, req, entered } => (chat, req, entered),
            };
            let span = entered.span.clone();
            // The chat handler's future is made here, where it is awaited: in
            // the connection's state, not moved (its state is kilobytes).
            let (resp, laid) = if chat {
                let notes = entered.notes.clone();
                tracing::Instrument::instrument(chat::chat_noted(self.state.clone(), req, notes), span).await
            } else {
                let mut req = req;
                conventions::carry(&mut req, &entered);
                match tracing::Instrument::instrument(hyper::service::Service::call(&self.router, req), span).await {
                    Ok(r) => (r, None),
                    Err(never) => match never {},
                }
            };
            conventions::leave(resp, laid, entered)
        }
    }
}

/// Where [`Front`] sends a request. (Made and taken apart once a request,
/// never stored: boxing the request to even the variants out would cost
/// an allocation on every one.)
#[allow(clippy::large_enum_variant)]
enum Route {
    /// A CORS preflight, answered at the door.
    Answered(Box<http1::Answer>),
    /// To the chat handler (`chat`) or the router.
    Serve { chat: bool, req: http::Request<http1::RequestBody>, entered: conventions::Entered },
}

/// Serves until `shutdown` is cancelled, then drains within the grace period.
pub async fn serve(listener: TcpListener, state: Arc<AppState>, shutdown: CancellationToken) -> std::io::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, "Spillway is listening.");
    let grace = state.gateway.load().config.server.shutdown_grace;
    let seat = workers::seats(&state.metrics, 1).pop().ok_or_else(|| std::io::Error::other("no serving seat"))?;
    let (drained, ()) =
        tokio::join!(accept_loop(listener, state, shutdown.clone(), seat), shutting_down(&shutdown, grace));
    drained_note(drained?);
    Ok(())
}

/// Says once, when `shutdown` comes, that the gateway is draining (every
/// serving thread drains on its own; the lines are the process's).
pub(crate) async fn shutting_down(shutdown: &CancellationToken, grace: std::time::Duration) {
    shutdown.cancelled().await;
    tracing::info!(
        grace_s = grace.as_secs_f64(),
        "Shutting down: no new connections; letting requests in flight finish."
    );
}

/// Says once how the drain ended.
pub(crate) fn drained_note(drained: bool) {
    if drained {
        tracing::info!("All connections closed.");
    } else {
        tracing::warn!("Grace period over; dropping the remaining connections.");
    }
}

/// Accepts and serves connections on the current event loop until
/// `shutdown`, then drains them within the grace period; whether every
/// connection closed in time. See [`serve`].
pub(crate) async fn accept_loop(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: CancellationToken,
    mut seat: workers::Seat,
) -> std::io::Result<bool> {
    let (settings, grace) = {
        let server = &state.gateway.load().config.server;
        let settings = http1::Settings {
            header_read_timeout: server.header_read_timeout,
            body_read_timeout: server.body_read_timeout,
            max_body_bytes: server.max_body_bytes,
        };
        (settings, server.shutdown_grace)
    };
    let front =
        Front { state: state.clone(), router: TowerToHyperService::new(routes::router(state.clone())), link: None };
    let tasks = TaskTracker::new();
    loop {
        let (stream, peer, held) = tokio::select! {
            accepted = listener.accept() => match accepted {
                // Served here, or handed to a thread that holds fewer.
                Ok((stream, peer)) => match seat.take(stream, peer) {
                    Some(taken) => taken,
                    None => continue,
                },
                Err(e) => {
                    // Out of file descriptors and the like: back off briefly
                    // instead of spinning.
                    tracing::warn!(error = %e, "Accept failed.");
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    continue;
                }
            },
            Some(handed) = seat.handed() => handed,
            () = shutdown.cancelled() => break,
        };
        let _ = stream.set_nodelay(true);
        let link = Arc::new(crate::client_link::ClientLink::new());
        let write_timeout = state.gateway.load().config.server.client_write_timeout;
        let io = client_io::ClientIo::new(stream, link.clone(), state.metrics.clone(), write_timeout);
        let front = Front { link: Some(link), ..front.clone() };
        let shutdown = shutdown.clone();
        tasks.spawn(async move {
            http1::serve(io, &front, settings, shutdown).await;
            tracing::trace!(%peer, "Connection closed.");
            drop(held);
        });
    }
    drop(listener);
    seat.close();
    tasks.close();
    // Idle connections close as soon as they see the shutdown; busy ones
    // after their answer.
    Ok(tokio::select! {
        () = tasks.wait() => true,
        () = tokio::time::sleep(grace) => false,
    })
}
