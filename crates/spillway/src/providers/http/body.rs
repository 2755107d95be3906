//! The response body of the request path's client: read as frames or as
//! a byte stream, it hands its connection back to the pool when it ends.
//! It is decoded in the reader's own poll ([`Link::poll_body`]): every
//! event one socket read brought is ready at once, as one piece.
//!
//! A body dropped halfway closes its connection — which is what cancels
//! an upstream's generation when the client leaves — unless the reader
//! marked the answer complete first (a stream's `[DONE]`): then the rest
//! is drained briefly in the background and the connection kept.
//! [`read_to_end`] reads any body whole (also the server's client bodies).

use super::link::{Framing, Link, WireError};
use super::pool::Pool;
use bytes::Bytes;
use futures_util::Stream;
use http_body_util::BodyExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// The largest whole (non-streamed) answer read from an upstream.
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// Why reading a response body failed.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The connection broke mid-body, or its framing was invalid.
    #[error("response body: {0}")]
    Transport(#[source] WireError),
    /// The body is larger than [`MAX_BODY`].
    #[error("response body larger than {MAX_BODY} bytes")]
    TooLarge,
}

/// A response body; the connection returns to its pool when it has been
/// read to the end.
pub struct Body {
    /// `None` once the body has ended or failed (its connection given
    /// back or closed).
    link: Option<Link>,
    framing: Framing,
    /// The connection can take another request after this body.
    keep_alive: bool,
    pool: Arc<Pool>,
    slot: usize,
    /// Set by the reader when the answer is complete at its own level (an
    /// SSE `[DONE]`) though the body may not have ended yet; made only for
    /// readers that ask ([`Body::completion`]).
    complete: Option<Arc<std::sync::atomic::AtomicBool>>,
}

/// How long a dropped body whose answer was complete may take to reach its
/// end (the chunked terminator after `[DONE]`) so its connection can be
/// reused, and how many bytes it may still send.
const DRAIN_TIME: Duration = Duration::from_secs(1);
const DRAIN_BYTES: usize = 64 * 1024;

/// Marks a body's answer complete; see [`Body::completion`].
#[derive(Debug, Clone)]
pub struct Completion(Arc<std::sync::atomic::AtomicBool>);

impl Completion {
    /// The answer is complete: what the body still sends is its end.
    pub fn mark(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Body(..)")
    }
}

impl Drop for Body {
    /// A body dropped before its end closes its connection — unless its
    /// answer was complete (a stream's `[DONE]` seen): then the rest (the
    /// chunked terminator, normally already on its way) is read in the
    /// background, briefly, and the connection goes back to its pool. A
    /// body dropped mid-answer (the client left) is never drained: closing
    /// the connection is what cancels the upstream's generation.
    fn drop(&mut self) {
        let Some(link) = self.link.take() else { return };
        if !self.keep_alive || !self.complete.as_ref().is_some_and(|c| c.load(std::sync::atomic::Ordering::Acquire)) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        // The rest is read through a body of its own, which gives the
        // connection back when it reaches the end.
        let framing = std::mem::replace(&mut self.framing, Framing::Length(0));
        let mut rest = Body {
            link: Some(link),
            framing,
            keep_alive: true,
            pool: self.pool.clone(),
            slot: self.slot,
            complete: None,
        };
        // Detached on purpose: it ends within DRAIN_TIME.
        runtime.spawn(async move {
            let _ = tokio::time::timeout(DRAIN_TIME, async {
                let mut left = DRAIN_BYTES;
                while let Some(Ok(frame)) = rest.frame().await {
                    let n = frame.data_ref().map_or(0, Bytes::len);
                    if n > left {
                        // Too much after a complete answer: close it.
                        rest.link = None;
                        return;
                    }
                    left -= n;
                }
            })
            .await;
        });
    }
}

impl Body {
    /// The body of a response on `link`, framed by `framing`; the
    /// connection goes back to `pool`'s `slot` when it ends, if
    /// `keep_alive`.
    pub(super) fn new(link: Link, framing: Framing, keep_alive: bool, pool: Arc<Pool>, slot: usize) -> Self {
        Body { link: Some(link), framing, keep_alive, pool, slot, complete: None }
    }

    /// A handle the reader uses to say the answer is complete, so that
    /// dropping the body afterwards keeps its connection (see `Drop`).
    pub fn completion(&mut self) -> Completion {
        Completion(self.complete.get_or_insert_with(Arc::default).clone())
    }

    /// Reads the whole body (at most [`MAX_BODY`] bytes).
    pub async fn bytes(self) -> Result<Bytes, BodyError> {
        read_to_end(self, MAX_BODY).await.map_err(|e| match e {
            ReadError::Body(e) => BodyError::Transport(e),
            ReadError::TooLarge => BodyError::TooLarge,
        })
    }

    /// The next piece of the body; the connection goes back at its end
    /// (when nothing was read past it) and is closed on an error.
    fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, WireError>>> {
        let Some(link) = self.link.as_mut() else { return Poll::Ready(None) };
        let polled = link.poll_body(cx, &mut self.framing);
        match &polled {
            Poll::Ready(None) => {
                if let Some(link) = self.link.take().filter(|l| self.keep_alive && l.drained()) {
                    self.pool.give_back(self.slot, link);
                }
            }
            Poll::Ready(Some(Err(_))) => self.link = None,
            _ => {}
        }
        polled
    }
}

/// Why [`read_to_end`] stopped.
#[derive(Debug)]
pub enum ReadError<E> {
    /// The body failed.
    Body(E),
    /// It is longer than the limit.
    TooLarge,
}

/// Reads a body to its end, at most `limit` bytes: a body that comes as one
/// frame (the usual case) is returned as that frame, uncopied; more frames
/// are joined.
pub async fn read_to_end<B>(body: B, limit: usize) -> Result<Bytes, ReadError<B::Error>>
where
    B: hyper::body::Body<Data = Bytes>,
{
    let mut body = std::pin::pin!(body);
    let mut single: Option<Bytes> = None;
    let mut joined = bytes::BytesMut::new();
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(ReadError::Body)?.into_data() else { continue };
        len = len.saturating_add(data.len());
        if len > limit {
            return Err(ReadError::TooLarge);
        }
        if single.is_none() && joined.is_empty() {
            single = Some(data);
        } else {
            if let Some(first) = single.take() {
                joined.extend_from_slice(&first);
            }
            joined.extend_from_slice(&data);
        }
    }
    Ok(single.unwrap_or_else(|| joined.freeze()))
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = WireError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, WireError>>> {
        self.poll_data(cx).map(|d| d.map(|d| d.map(hyper::body::Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        self.link.is_none() || matches!(self.framing, Framing::Length(0))
    }
}

impl Stream for Body {
    type Item = Result<Bytes, WireError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.poll_data(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn read_to_end_keeps_one_frame_as_is_and_joins_several() {
        let one = Bytes::from_static(b"whole");
        let got = read_to_end(http_body_util::Full::new(one.clone()), 10).await.unwrap();
        assert_eq!(got.as_ptr(), one.as_ptr(), "a single frame is not copied");
        let frames = || {
            let parts =
                ["ab", "cd", "e"].map(|p| Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from(p))));
            http_body_util::StreamBody::new(futures_util::stream::iter(parts))
        };
        assert_eq!(read_to_end(frames(), 5).await.unwrap(), "abcde");
        assert!(matches!(read_to_end(frames(), 4).await, Err(ReadError::TooLarge)));
    }
}
