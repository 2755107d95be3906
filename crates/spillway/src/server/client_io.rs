//! A client connection as the server reads and writes it, with a bound on
//! how long its writes may wait.
//!
//! A client that stops reading fills its socket; the connection
//! (`server::http1`) then waits for the socket and stops polling the response body, so nothing the body does —
//! the stream forwarder's own `timeouts.total` check included — can end
//! the answer, and the answer keeps its concurrency slot and its upstream
//! call (issue 24: 50 clients reading a byte a second held 50 slots and
//! 50 upstream connections at 3.75 × `total`). Here the wait itself is
//! bounded: while a write cannot proceed, one timer runs to the earlier of
//! `server.client_write_timeout` after the client last accepted bytes and
//! the deadline of the streamed answer being written ([`ClientLink`]);
//! when it fires the write fails, the connection is dropped and with it
//! the answer (its slot, its upstream response), and the cut is recorded
//! on the link for the forwarder's settlement and counted in
//! `spillway_slow_client_cuts_total`. The socket is reset rather than
//! closed, so the kernel does not keep sending what the client would not
//! read.
//!
//! A write that proceeds costs nothing more than the socket's own: no
//! clock read, no timer.

use crate::client_link::{ClientLink, Cut};
use crate::metrics::Metrics;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Duration, Instant, Sleep};

/// A client's TCP connection; see the module docs.
pub(super) struct ClientIo {
    inner: TcpStream,
    link: Arc<ClientLink>,
    metrics: Arc<Metrics>,
    write_timeout: Duration,
    /// Since when the writes have been waiting (none while they proceed).
    blocked_since: Option<Instant>,
    /// Made at the first wait: most connections never need it.
    timer: Option<Pin<Box<Sleep>>>,
    cut: bool,
}

impl ClientIo {
    pub(super) fn new(inner: TcpStream, link: Arc<ClientLink>, metrics: Arc<Metrics>, write_timeout: Duration) -> Self {
        Self { inner, link, metrics, write_timeout, blocked_since: None, timer: None, cut: false }
    }

    /// A write could not proceed: wait for the socket, or for the bound.
    fn stalled(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let now = Instant::now();
        let since = *self.blocked_since.get_or_insert(now);
        let quiet_until = since + self.write_timeout;
        let (until, why) = match self.link.deadline() {
            Some(d) if d < quiet_until => (d, Cut::Total),
            _ => (quiet_until, Cut::WriteTimeout),
        };
        if now < until {
            let timer = self.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
            if timer.deadline() != until {
                timer.as_mut().reset(until);
            }
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        Poll::Ready(Err(self.cut(why)))
    }

    /// Gives up on the client: records why, resets the socket.
    fn cut(&mut self, why: Cut) -> io::Error {
        if !std::mem::replace(&mut self.cut, true) {
            self.link.cut(why);
            self.metrics.clients.cut(why);
            let peer = self.inner.peer_addr().ok();
            tracing::warn!(?peer, reason = why.label(), "The client stopped reading; closing its connection.");
            // Zero linger: closing resets the connection at once (no
            // blocking: the socket is closed with nothing to wait for).
            let _ = socket2::SockRef::from(&self.inner).set_linger(Some(Duration::ZERO));
        }
        gone()
    }

    fn wrote(&mut self, r: Poll<io::Result<usize>>, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        match r {
            Poll::Pending => self.stalled(cx),
            Poll::Ready(r) => {
                self.blocked_since = None;
                Poll::Ready(r)
            }
        }
    }
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading")
}

impl AsyncRead for ClientIo {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for ClientIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.cut {
            return Poll::Ready(Err(gone()));
        }
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.wrote(r, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.cut {
            return Poll::Ready(Err(gone()));
        }
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.wrote(r, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A server-side connection whose client never reads.
    async fn stuck(write_timeout: Duration) -> (ClientIo, TcpStream, Arc<ClientLink>, Arc<Metrics>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let (link, metrics) = (Arc::new(ClientLink::new()), Arc::new(Metrics::new()));
        (ClientIo::new(server, link.clone(), metrics.clone(), write_timeout), client, link, metrics)
    }

    /// Writes until the connection fails; the (paused) time it took.
    async fn write_until_cut(io: &mut ClientIo) -> (Duration, io::Error) {
        let start = Instant::now();
        let chunk = vec![b'x'; 64 * 1024];
        loop {
            if let Err(e) = io.write_all(&chunk).await {
                return (start.elapsed(), e);
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_accepts_nothing_is_cut_at_the_write_timeout() {
        let (mut io, _client, link, metrics) = stuck(Duration::from_secs(30)).await;
        let (took, e) = write_until_cut(&mut io).await;
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(took, Duration::from_secs(30));
        assert_eq!(link.was_cut(), Some(Cut::WriteTimeout));
        assert_eq!(
            metrics.clients.cuts.get_or_create(&crate::metrics::CutLabels { reason: "client_write_timeout" }).get(),
            1
        );
        // Cut once: later writes fail at once and count nothing more.
        assert!(io.write_all(b"more").await.is_err());
        assert_eq!(
            metrics.clients.cuts.get_or_create(&crate::metrics::CutLabels { reason: "client_write_timeout" }).get(),
            1
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_answers_deadline_cuts_sooner_when_it_comes_first() {
        let (mut io, _client, link, _) = stuck(Duration::from_secs(30)).await;
        link.bound(Instant::now() + Duration::from_secs(2));
        let (took, _) = write_until_cut(&mut io).await;
        assert_eq!(took, Duration::from_secs(2));
        assert_eq!(link.was_cut(), Some(Cut::Total));
    }

    /// On the real clock: with time paused, the runtime skipped ahead while
    /// the kernel was still passing the reader's window update back to the
    /// writer, and on a loaded machine that read as a stall (a flaky cut).
    #[tokio::test]
    async fn a_client_that_reads_in_time_is_not_cut() {
        let (mut io, mut client, link, _) = stuck(Duration::from_secs(5)).await;
        let reader = async move {
            let mut buf = vec![0u8; 1 << 20];
            let mut got = 0usize;
            // Reads every 50 ms: each wait a hundredth of the 5 s bound.
            while got < 2 << 20 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                got += tokio::io::AsyncReadExt::read(&mut client, &mut buf).await.unwrap();
            }
        };
        let writer = async {
            let chunk = vec![b'x'; 64 * 1024];
            for _ in 0..32 {
                io.write_all(&chunk).await.unwrap();
            }
        };
        tokio::join!(reader, writer);
        assert_eq!(link.was_cut(), None);
    }
}
