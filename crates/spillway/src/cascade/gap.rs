//! Waiting for a stream's next item within a bound, with one timer per
//! attempt that is armed only when the item is not there yet.
//!
//! Upstream chunks often arrive several to a read: the next one is then
//! ready at once, and a fresh `timeout_at` per item (a timer registered
//! and removed each time, and a clock read) was most of what waiting cost.

use crate::outcome::AttemptError;
use crate::providers::{ChunkStream, StreamItem};
use futures_util::StreamExt;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;
use tokio::time::{Instant, Sleep};

/// The bound passed before the stream had an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

/// One attempt's timer for the gaps between its stream's items.
pub struct Gap {
    timer: Pin<Box<Sleep>>,
}

impl Default for Gap {
    fn default() -> Self {
        Self::new()
    }
}

impl Gap {
    /// A timer not armed yet (registered with the runtime on first wait).
    pub fn new() -> Self {
        Self { timer: Box::pin(tokio::time::sleep_until(Instant::now())) }
    }

    /// The next item of `s`; if it has to be waited for, at most until
    /// `until()` (read then, once).
    pub async fn next(
        &mut self,
        s: &mut ChunkStream,
        until: impl FnOnce() -> Instant,
    ) -> Result<Option<Result<StreamItem, AttemptError>>, Elapsed> {
        let mut until = Some(until);
        let timer = &mut self.timer;
        poll_fn(|cx| {
            if let Poll::Ready(item) = s.poll_next_unpin(cx) {
                return Poll::Ready(Ok(item));
            }
            if let Some(until) = until.take() {
                timer.as_mut().reset(until());
            }
            timer.as_mut().poll(cx).map(|()| Err(Elapsed))
        })
        .await
    }

    /// Hands `each` every item of `s` that is ready, in one poll, until it
    /// returns `Some` (what `drain` then returns) or an item has to be
    /// waited for: each wait at most until `until(state)` (read then, once
    /// a wait). What [`Self::next`] in a loop does, without a future made
    /// and an item moved out of it for every item.
    pub async fn drain<S, T>(
        &mut self,
        s: &mut ChunkStream,
        state: &mut S,
        mut each: impl FnMut(&mut S, Option<Result<StreamItem, AttemptError>>) -> Option<T>,
        until: impl Fn(&S) -> Instant,
    ) -> Result<T, Elapsed> {
        let timer = &mut self.timer;
        let mut armed = false;
        poll_fn(|cx| loop {
            match s.poll_next_unpin(cx) {
                Poll::Ready(item) => {
                    armed = false;
                    if let Some(out) = each(state, item) {
                        return Poll::Ready(Ok(out));
                    }
                }
                Poll::Pending => {
                    if !armed {
                        timer.as_mut().reset(until(state));
                        armed = true;
                    }
                    return timer.as_mut().poll(cx).map(|()| Err(Elapsed));
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn a_ready_item_needs_no_timer_and_a_late_one_meets_it() {
        let mut gap = Gap::new();
        let mut ready: ChunkStream = futures_util::stream::iter([Ok(StreamItem::Done)]).boxed();
        let got = gap.next(&mut ready, || unreachable!("no wait, no clock read")).await;
        assert!(matches!(got, Ok(Some(Ok(StreamItem::Done)))));

        let late = async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(StreamItem::Done)
        };
        let mut late: ChunkStream = futures_util::stream::once(late).boxed();
        let t = Instant::now();
        assert_eq!(gap.next(&mut late, || t + Duration::from_secs(2)).await.err(), Some(Elapsed));
        assert_eq!(t.elapsed(), Duration::from_secs(2));
        // Re-armed for the next wait: the item comes within it.
        let got = gap.next(&mut late, || Instant::now() + Duration::from_secs(10)).await;
        assert!(matches!(got, Ok(Some(Ok(StreamItem::Done)))));
        assert_eq!(t.elapsed(), Duration::from_secs(5));
    }

    /// A drain takes every ready item in one poll with no clock read, and
    /// bounds each wait from when it starts (the bound read once a wait,
    /// from the state the items left).
    #[tokio::test(start_paused = true)]
    async fn a_drain_takes_what_is_ready_and_bounds_each_wait() {
        let late = |secs| async move {
            tokio::time::sleep(Duration::from_secs(secs)).await;
            Ok(StreamItem::Skipped)
        };
        let ready = futures_util::stream::iter([Ok(StreamItem::Skipped), Ok(StreamItem::Skipped)]);
        let mut s: ChunkStream = ready
            .chain(futures_util::stream::once(late(5)))
            .chain(futures_util::stream::once(late(1)))
            .chain(futures_util::stream::iter([Ok(StreamItem::Done)]))
            .boxed();
        let mut gap = Gap::new();
        // (items taken, bounds read)
        let mut seen = (0, std::cell::Cell::new(0));
        let each = |seen: &mut (u32, std::cell::Cell<u32>), item: Option<Result<StreamItem, AttemptError>>| {
            seen.0 += 1;
            matches!(item, Some(Ok(StreamItem::Done))).then_some(seen.0)
        };
        let t = Instant::now();
        let bound = |secs| {
            move |seen: &(u32, std::cell::Cell<u32>)| {
                seen.1.set(seen.1.get() + 1);
                Instant::now() + Duration::from_secs(secs)
            }
        };
        assert_eq!(gap.drain(&mut s, &mut seen, each, bound(2)).await, Err(Elapsed));
        assert_eq!((seen.0, seen.1.get(), t.elapsed()), (2, 1, Duration::from_secs(2)));
        // The late item comes within the next bound (read again), the one
        // after it within its own wait, then the end.
        assert_eq!(gap.drain(&mut s, &mut seen, each, bound(4)).await, Ok(5));
        assert_eq!((seen.1.get(), t.elapsed()), (3, Duration::from_secs(6)));
    }
}
