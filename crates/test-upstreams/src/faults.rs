//! Hostile upstreams: replies that try to hurt the gateway rather than fail
//! politely (the "Hardening" issue), and a fake that echoes what it was sent.

use crate::reply::{Reply, Step};
use bytes::Bytes;

/// An SSE stream that sends `data:` lines of `line_bytes` each, `lines`
/// of them, and never the blank line that would end the event; then hangs.
/// The steps share one buffer, so a large total costs the test nothing.
pub fn endless_event(line_bytes: usize, lines: usize) -> Reply {
    let mut line = b"data: ".to_vec();
    line.resize(line_bytes.saturating_sub(1).max(line.len()), b'x');
    line.push(b'\n');
    let line = Bytes::from(line);
    let mut reply = Reply::sse_raw(&[]);
    for _ in 0..lines {
        reply = reply.then(Step::Bytes(line.clone()));
    }
    reply.then(Step::Hang)
}
