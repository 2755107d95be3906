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
//!
//! Since a connection never leaves its thread, the first to accept is not
//! left to decide alone ([`Spread`]): clients keep their connections open
//! for thousands of requests, and a burst of them (a pool opening 256 at
//! once) was split as unevenly as 40 / 60 between two threads — the busier
//! thread's core then sets the tail latency while the other's idles. A
//! thread that already holds more than its share hands the connection it
//! just accepted to the thread that holds the fewest, through that
//! thread's inbox: the socket leaves this thread's event loop and joins
//! the other's before a byte of it is read. Each thread's open connections
//! are the gauge `spillway_server_connections{worker}`.

use super::AppState;
use crate::metrics::{Metrics, WorkerLabels};
use prometheus_client::metrics::gauge::Gauge;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
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
    for (i, seat) in (1..).zip(seats(&state.metrics, workers)) {
        let socket = listener.try_clone()?;
        let (state, shutdown) = (state.clone(), shutdown.clone());
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new().name(format!("spillway-w{i}")).spawn(move || {
            crate::providers::http::set_slot(i);
            let _ = tx.send(run_one(socket, state, shutdown, seat));
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

fn run_one(
    socket: std::net::TcpListener,
    state: Arc<AppState>,
    shutdown: CancellationToken,
    seat: Seat,
) -> std::io::Result<bool> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(socket)?;
        tokio::select! {
            served = super::accept_loop(listener, state, shutdown, seat) => served,
            never = heartbeat() => match never {},
        }
    })
}

/// A connection accepted by one serving thread and handed to another.
type Handed = (std::net::TcpStream, SocketAddr);

/// The serving threads' open connections, and each one's inbox: where a
/// connection a thread accepted is served.
struct Spread {
    /// Open client connections of each thread (`spillway_server_connections`),
    /// a connection counted from the moment it is placed.
    open: Vec<Gauge>,
    inboxes: Vec<mpsc::UnboundedSender<Handed>>,
}

/// The thread a connection goes to, given each thread's open connections
/// and `me`, the one that accepted it: `me`, unless it holds more than one
/// connection and an eighth over the least loaded thread's count (a small
/// difference is not worth moving a socket for); then the least loaded.
fn place(open: impl Iterator<Item = i64>, me: usize) -> usize {
    let (mut least_at, mut least, mut mine) = (me, i64::MAX, 0);
    for (at, n) in open.enumerate() {
        if n < least {
            (least_at, least) = (at, n);
        }
        if at == me {
            mine = n;
        }
    }
    if mine > least.saturating_add(1 + least / 8) {
        least_at
    } else {
        me
    }
}

/// One serving thread's place in the [`Spread`]: its number (from 0), its
/// inbox, and what it needs to hand a connection on.
pub(crate) struct Seat {
    me: usize,
    spread: Arc<Spread>,
    inbox: mpsc::UnboundedReceiver<Handed>,
}

/// A seat for each of `workers` serving threads (at least one), their
/// gauges in `metrics`.
pub(crate) fn seats(metrics: &Metrics, workers: usize) -> Vec<Seat> {
    let workers = workers.max(1);
    let open = (1..=workers)
        .map(|i| metrics.connections.get_or_create(&WorkerLabels { worker: i.to_string() }).clone())
        .collect();
    let (inboxes, boxes): (Vec<_>, Vec<_>) = (0..workers).map(|_| mpsc::unbounded_channel()).unzip();
    let spread = Arc::new(Spread { open, inboxes });
    boxes.into_iter().enumerate().map(|(me, inbox)| Seat { me, spread: spread.clone(), inbox }).collect()
}

/// A connection this thread serves: counted open until dropped.
pub(crate) struct Held(Gauge);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl Seat {
    /// A connection this thread just accepted: `Some` to serve it here,
    /// `None` when it was handed to a thread with fewer.
    pub(crate) fn take(&self, stream: TcpStream, peer: SocketAddr) -> Option<(TcpStream, SocketAddr, Held)> {
        let to = place(self.spread.open.iter().map(Gauge::get), self.me);
        if to != self.me {
            if let (Some(gauge), Some(inbox)) = (self.spread.open.get(to), self.spread.inboxes.get(to)) {
                // Counted there now, so the next connection's placement
                // sees it even before that thread takes it in.
                gauge.inc();
                match stream.into_std() {
                    Ok(socket) => match inbox.send((socket, peer)) {
                        Ok(()) => return None,
                        // That thread has stopped (shutting down): served here.
                        Err(mpsc::error::SendError((socket, _))) => {
                            gauge.dec();
                            return self.adopt(socket, peer);
                        }
                    },
                    Err(e) => {
                        gauge.dec();
                        tracing::warn!(error = %e, "A connection could not leave its thread's event loop.");
                        return None;
                    }
                }
            }
        }
        Some((stream, peer, self.hold()))
    }

    /// The next connection another thread handed to this one, counted
    /// here already.
    pub(crate) async fn handed(&mut self) -> Option<(TcpStream, SocketAddr, Held)> {
        loop {
            let (socket, peer) = self.inbox.recv().await?;
            let held = Held(self.gauge());
            match TcpStream::from_std(socket) {
                Ok(stream) => return Some((stream, peer, held)),
                Err(e) => {
                    tracing::warn!(error = %e, "A connection handed to this thread could not join its event loop.")
                }
            }
        }
    }

    /// Takes no more connections: those handed to this thread and not yet
    /// taken in are closed (as a listener's backlog is when it closes) and
    /// counted out.
    pub(crate) fn close(&mut self) {
        self.inbox.close();
        let gauge = self.gauge();
        while self.inbox.try_recv().is_ok() {
            gauge.dec();
        }
    }

    /// A socket taken back from a channel, counted and served here.
    fn adopt(&self, socket: std::net::TcpStream, peer: SocketAddr) -> Option<(TcpStream, SocketAddr, Held)> {
        match TcpStream::from_std(socket) {
            Ok(stream) => Some((stream, peer, self.hold())),
            Err(e) => {
                tracing::warn!(error = %e, "A connection could not rejoin its thread's event loop.");
                None
            }
        }
    }

    /// This thread's count, one more.
    fn hold(&self) -> Held {
        let gauge = self.gauge();
        gauge.inc();
        Held(gauge)
    }

    fn gauge(&self) -> Gauge {
        self.spread.open.get(self.me).cloned().unwrap_or_default()
    }
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

    #[test]
    fn a_connection_stays_unless_its_thread_holds_more_than_its_share() {
        // Even, or one more: kept.
        assert_eq!(place([0, 0].into_iter(), 0), 0);
        assert_eq!(place([1, 0].into_iter(), 0), 0);
        assert_eq!(place([3, 2].into_iter(), 0), 0);
        // Two more than the least: handed to it.
        assert_eq!(place([2, 0].into_iter(), 0), 1);
        assert_eq!(place([5, 9, 3].into_iter(), 1), 2);
        // Within an eighth (and one) of the least: not worth a move.
        assert_eq!(place([136, 120].into_iter(), 0), 0);
        assert_eq!(place([137, 120].into_iter(), 0), 1);
        // The least loaded thread always keeps what it accepts.
        assert_eq!(place([0, 50].into_iter(), 0), 0);
        assert_eq!(place([7].into_iter(), 0), 0);
    }

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
