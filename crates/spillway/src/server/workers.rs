//! Serving threads: `server.workers` threads, each with its own
//! single-threaded event loop, accepting from the same listening socket.
//!
//! A connection, the requests on it, the upstream calls they make and the
//! upstream connections those use all stay on the thread that accepted it:
//! no task migrates, and no request wakes another thread. Measured on the
//! project's 2-core machine, tokio's work-stealing scheduler cost about a
//! quarter of the gateway's CPU per request in cross-thread wake-ups and
//! queue handling (`docs/PERFORMANCE.md`). Upstream connection pools keep
//! one idle list per thread ([`crate::providers::http::slot`], numbered
//! here as each thread starts), so a connection is reused by the thread
//! whose event loop drives it.
//!
//! Every thread polls its own duplicate of the listening socket; the
//! kernel wakes them all for a new connection and the first to call
//! `accept` takes it, so an idle thread tends to win. (Unlike
//! `SO_REUSEPORT`, a second gateway cannot bind the same port by mistake.)
//! Background jobs (discovery, health sync, alerts) run on the main
//! thread's loop, not here.

use super::AppState;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How many connections the kernel holds for the gateway before it
/// accepts them (capped by `net.core.somaxconn`). The standard library
/// listens with 128: a burst of more new connections than that — 256
/// clients connecting at once, a pool reconnecting after a restart — had
/// the rest's handshakes dropped and retried by their kernels a second
/// later (a p99 of 0.8 s at 256 connections in `bench/events.sh`).
pub const BACKLOG: i32 = 4096;

/// The listening socket of `spillway serve`: `addr` with address reuse
/// (as the standard library binds) and a backlog of [`BACKLOG`], in
/// non-blocking mode for the serving threads' event loops.
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let socket = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Serves `listener` on `workers` threads until `shutdown` is cancelled
/// and every thread has drained its connections.
pub async fn serve(
    listener: std::net::TcpListener,
    state: Arc<AppState>,
    shutdown: CancellationToken,
    workers: usize,
) -> std::io::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, workers, "Spillway is listening.");
    let mut done = Vec::with_capacity(workers);
    for i in 1..=workers.max(1) {
        let socket = listener.try_clone()?;
        let (state, shutdown) = (state.clone(), shutdown.clone());
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new().name(format!("spillway-w{i}")).spawn(move || {
            crate::providers::http::set_slot(i);
            let _ = tx.send(run_one(socket, state, shutdown));
        })?;
        done.push(rx);
    }
    drop(listener);
    let grace = state.gateway.load().config.server.shutdown_grace;
    let threads = async {
        let mut result = Ok(true);
        for rx in done {
            // A thread that vanished without an answer panicked.
            let ended = rx.await.unwrap_or_else(|_| Err(std::io::Error::other("a serving thread panicked")));
            match ended {
                Ok(drained) => result = result.map(|all| all && drained),
                Err(e) => {
                    tracing::error!(error = %e, "A serving thread failed.");
                    // Stop the others too: a gateway serving on fewer threads
                    // than configured would hide the failure.
                    shutdown.cancel();
                    result = Err(e);
                }
            }
        }
        result
    };
    // The drain is said once for the process, not once per thread.
    let (ended, ()) = tokio::join!(threads, super::shutting_down(&shutdown, grace));
    super::drained_note(ended?);
    Ok(())
}

fn run_one(socket: std::net::TcpListener, state: Arc<AppState>, shutdown: CancellationToken) -> std::io::Result<bool> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(socket)?;
        tokio::select! {
            served = super::accept_loop(listener, state, shutdown) => served,
            never = heartbeat() => match never {},
        }
    })
}

/// How often a serving thread's event loop wakes on its own.
const HEARTBEAT: std::time::Duration = std::time::Duration::from_millis(500);

/// Keeps a timer due within [`HEARTBEAT`] on the thread's event loop.
///
/// Every request arms timers (the header-read timeout, the first-token
/// deadline). tokio interrupts its event loop through an eventfd write, and
/// one more pass through `epoll_wait`, whenever a new timer is due before
/// the loop's next planned wake-up — which, on an idle connection between
/// two requests, is "never". A timer that is always due soon makes every
/// request's timers later than the planned wake-up, so arming them costs no
/// system call (measured in `docs/PERFORMANCE.md`: one `write` and one
/// `epoll_wait` less per request at one connection). The price is two
/// wake-ups a second per serving thread.
async fn heartbeat() -> std::convert::Infallible {
    let mut tick = tokio::time::interval(HEARTBEAT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tick.tick().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More clients than the standard library's backlog of 128 connect at
    /// once while none is accepted yet: every handshake completes at once
    /// (with a backlog of 128 the rest waited a second for a retry).
    #[tokio::test]
    async fn a_burst_of_connections_waits_in_the_backlog_not_for_a_retry() {
        let listener = listen("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = listener.local_addr().unwrap();
        let (done, clients) = test_upstreams::connect_burst(addr).await;
        assert_eq!(done, clients, "{done} of {clients} connected without a retry");
        drop(listener);
    }
}
