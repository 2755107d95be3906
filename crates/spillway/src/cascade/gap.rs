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
}
