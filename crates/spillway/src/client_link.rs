//! What the server and a streamed answer share about one client
//! connection: the deadline the answer being written must meet, and why
//! the server cut the connection, if it did.
//!
//! A client that stops reading stops the server from writing, and hyper
//! then stops polling the response body: the stream forwarder, which
//! checks `timeouts.total` itself, is not polled either. So the deadline
//! also lives here, where the connection's writer (`server::client_io`)
//! sees it while its writes wait: past it — or past
//! `server.client_write_timeout` without a byte accepted — the writer
//! fails the connection, and the forwarder, dropped with it, reads the
//! [`Cut`] here to settle the request as an error rather than as a client
//! that went away.
//!
//! One link per connection (HTTP/1 answers one request at a time); the
//! request's [`crate::telemetry::RequestNotes`] carry it to the handler.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use tokio::time::{Duration, Instant};

/// Why the server closed a connection whose client stopped reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The streamed answer being written ran past `timeouts.total`.
    Total,
    /// The client accepted no bytes for `server.client_write_timeout`.
    WriteTimeout,
}

impl Cut {
    /// The `reason` label of `spillway_slow_client_cuts_total`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Total => "total",
            Self::WriteTimeout => "client_write_timeout",
        }
    }
}

/// One client connection's link; see the module docs.
#[derive(Debug)]
pub struct ClientLink {
    /// When the link was made: deadlines are kept as offsets from it.
    base: Instant,
    /// The deadline of the answer being written, in nanoseconds after
    /// `base`, plus one; 0 while there is none.
    deadline: AtomicU64,
    /// 0, or the [`Cut`] that closed the connection (1 + its index).
    cut: AtomicU8,
}

impl Default for ClientLink {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientLink {
    /// A link with no deadline and no cut.
    pub fn new() -> Self {
        Self { base: Instant::now(), deadline: AtomicU64::new(0), cut: AtomicU8::new(0) }
    }

    /// The answer being written must be over by `deadline`.
    pub fn bound(&self, deadline: Instant) {
        let after = deadline.saturating_duration_since(self.base).as_nanos();
        let after = u64::try_from(after).unwrap_or(u64::MAX - 1);
        self.deadline.store(after + 1, Ordering::Relaxed);
    }

    /// The answer is gone; the connection's next writes have no deadline.
    pub fn unbound(&self) {
        self.deadline.store(0, Ordering::Relaxed);
    }

    /// The deadline of the answer being written, if it has one.
    pub fn deadline(&self) -> Option<Instant> {
        match self.deadline.load(Ordering::Relaxed) {
            0 => None,
            n => Some(self.base + Duration::from_nanos(n - 1)),
        }
    }

    /// Records why the server is closing the connection.
    pub fn cut(&self, why: Cut) {
        let code = match why {
            Cut::Total => 1,
            Cut::WriteTimeout => 2,
        };
        self.cut.store(code, Ordering::Relaxed);
    }

    /// Why the server closed the connection, if it did.
    pub fn was_cut(&self) -> Option<Cut> {
        match self.cut.load(Ordering::Relaxed) {
            1 => Some(Cut::Total),
            2 => Some(Cut::WriteTimeout),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_deadline_is_kept_until_unbound_and_a_cut_is_remembered() {
        let link = ClientLink::new();
        assert_eq!(link.deadline(), None);
        let at = Instant::now() + Duration::from_millis(1500);
        link.bound(at);
        assert_eq!(link.deadline(), Some(at));
        link.unbound();
        assert_eq!(link.deadline(), None);
        // A deadline already past is kept as the link's start.
        tokio::time::advance(Duration::from_secs(1)).await;
        link.bound(Instant::now() - Duration::from_secs(5));
        assert!(link.deadline().is_some_and(|d| d <= Instant::now()));
        assert_eq!(link.was_cut(), None);
        link.cut(Cut::WriteTimeout);
        assert_eq!(link.was_cut(), Some(Cut::WriteTimeout));
        assert_eq!(Cut::Total.label(), "total");
    }
}
