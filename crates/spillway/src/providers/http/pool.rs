//! The idle connections of one upstream origin, one list per serving
//! thread, and the thread's slot that picks the list.
//!
//! A connection's socket is registered with the event loop that opened
//! it, so a connection is reused only by that thread (no cross-thread
//! wake-up). The
//! serving threads number themselves with `set_slot` as they start
//! (`server::workers`); every other thread (the main one, tests' runtimes)
//! is slot 0. An endpoint takes a connection from its pool before each
//! request and the response body gives it back when it has been read to
//! the end.

use super::link::Link;
use std::cell::Cell;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

thread_local! {
    static SLOT: Cell<usize> = const { Cell::new(0) };
}

/// The calling thread's slot: `1..=workers` on a serving thread, 0
/// elsewhere (the main thread, tests' runtimes, blocking threads).
pub fn slot() -> usize {
    SLOT.with(Cell::get)
}

/// Numbers the calling thread: called once by each serving thread as it
/// starts, with `1..=workers`.
pub(crate) fn set_slot(i: usize) {
    SLOT.with(|s| s.set(i));
}

/// Idle connections kept per origin and serving thread; more are closed
/// when they come back.
const MAX_IDLE: usize = 512;
/// Idle lists per pool: one per serving thread ([`slot`]), wrapping around
/// beyond this many threads.
pub(super) const SLOTS: usize = 64;
/// An idle connection older than this is closed instead of reused (many
/// servers close theirs after 60–120 s).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

#[derive(Debug)]
pub(super) struct Idle {
    link: Link,
    since: Instant,
}

/// The idle connections of one origin, one list per serving thread.
#[derive(Debug)]
pub(super) struct Pool {
    pub(super) idle: Box<[Mutex<Vec<Idle>>]>,
}

impl Pool {
    /// A pool with an empty list per slot.
    pub(super) fn new() -> Self {
        Self { idle: (0..SLOTS).map(|_| Mutex::new(Vec::new())).collect() }
    }

    /// The most recently returned live connection of `slot`, if any.
    pub(super) fn take(&self, slot: usize) -> Option<Link> {
        let mut idle = self.idle[slot].lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(Idle { mut link, since }) = idle.pop() {
            if since.elapsed() < IDLE_TIMEOUT && link.is_open() {
                return Some(link);
            }
        }
        None
    }

    /// Keeps a connection whose response was read to its end for reuse.
    pub(super) fn give_back(&self, slot: usize, mut link: Link) {
        if !link.is_open() {
            return;
        }
        let now = Instant::now();
        let mut idle = self.idle[slot].lock().unwrap_or_else(PoisonError::into_inner);
        // The oldest sit at the front: close the ones past their time.
        let stale = idle.iter().take_while(|i| now.duration_since(i.since) >= IDLE_TIMEOUT).count();
        idle.drain(..stale);
        if idle.len() < MAX_IDLE {
            idle.push(Idle { link, since: now });
        }
    }
}
