//! A request's body as the handlers get it: read whole by the connection
//! before the handler runs, bounded in size (`server.max_body_bytes`) and
//! time (`server.body_read_timeout`), or the reason it could not be.
//!
//! Reading it first costs a handler nothing it had (a body is one JSON
//! document, parsed whole) and means a client trickling its body holds
//! no handler, no concurrency slot and no upstream call while it does; a
//! body that arrived with its head (nearly every one) is a slice of the
//! read buffer, uncopied.

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Why a request's body could not be read. The handler answers it in its
/// own API's shape (`chat::admit`: 408, 413 or 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Not all of it came within `server.body_read_timeout`.
    #[error("the request body did not arrive in time")]
    TimedOut,
    /// It is longer than `server.max_body_bytes` (declared, or as read).
    #[error("the request body is too large")]
    TooLarge,
    /// The client closed the connection before the body ended.
    #[error("the connection closed before the request body ended")]
    Closed,
    /// The chunked coding is broken.
    #[error("an invalid chunked request body: {0}")]
    Invalid(&'static str),
}

/// The body of a request the server read; see the module docs.
#[derive(Debug)]
pub struct RequestBody(Inner);

#[derive(Debug)]
enum Inner {
    /// Given out (or empty from the start).
    Done,
    Whole(Bytes),
    Failed(BodyError),
}

impl RequestBody {
    /// A request without a body.
    pub fn empty() -> Self {
        Self(Inner::Done)
    }

    /// A body read whole.
    pub fn whole(bytes: Bytes) -> Self {
        if bytes.is_empty() {
            Self::empty()
        } else {
            Self(Inner::Whole(bytes))
        }
    }

    /// A body that could not be read: its one frame is the error.
    pub fn failed(why: BodyError) -> Self {
        Self(Inner::Failed(why))
    }
}

impl hyper::body::Body for RequestBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        Poll::Ready(match std::mem::replace(&mut self.0, Inner::Done) {
            Inner::Done => None,
            Inner::Whole(bytes) => Some(Ok(Frame::data(bytes))),
            Inner::Failed(why) => Some(Err(why)),
        })
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.0, Inner::Done)
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Inner::Whole(b) => SizeHint::with_exact(b.len() as u64),
            Inner::Done => SizeHint::with_exact(0),
            Inner::Failed(_) => SizeHint::default(),
        }
    }
}
