//! The `CONNECT` tunnel through an outbound proxy, for `https` upstreams
//! (the rules for which proxy applies are in [`super::proxy`]).
//!
//! Called by [`super::connect`] on a fresh TCP connection to the proxy,
//! before the TLS handshake with the upstream; the request itself then
//! travels inside the tunnel, encrypted end to end.

use super::error::HttpError;
use super::proxy::Proxy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest answer head a proxy may send to `CONNECT`.
const MAX_CONNECT_HEAD: usize = 16 * 1024;

/// Asks `proxy` (connected as `tcp`) for a tunnel to `authority`.
pub(super) async fn tunnel(tcp: &mut TcpStream, proxy: &Proxy, authority: &str) -> Result<(), HttpError> {
    let fail = |what: String| HttpError::Connect(format!("through proxy {proxy}: {what}"));
    let mut head = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(auth) = proxy.auth.as_ref().and_then(|a| a.to_str().ok()) {
        head.push_str("Proxy-Authorization: ");
        head.push_str(auth);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    tcp.write_all(head.as_bytes()).await.map_err(|e| fail(e.to_string()))?;
    let mut answer = Vec::with_capacity(256);
    let mut chunk = [0u8; 1024];
    let end = loop {
        let n = tcp.read(&mut chunk).await.map_err(|e| fail(e.to_string()))?;
        if n == 0 {
            return Err(fail("the proxy closed the connection during CONNECT".into()));
        }
        answer.extend_from_slice(&chunk[..n]);
        if let Some(i) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if answer.len() > MAX_CONNECT_HEAD {
            return Err(fail("the proxy's answer to CONNECT is too long".into()));
        }
    };
    let status = std::str::from_utf8(&answer[..end])
        .ok()
        .and_then(|head| head.split_whitespace().nth(1))
        .and_then(|code| code.parse::<u16>().ok());
    match status {
        // The upstream speaks first only after our TLS hello: nothing may follow the head.
        Some(200..=299) if answer.len() == end => Ok(()),
        Some(200..=299) => Err(fail("the proxy sent data after accepting CONNECT".into())),
        Some(407) => Err(fail("the proxy wants credentials (407); put them in the proxy URL".into())),
        Some(code) => Err(fail(format!("the proxy refused the tunnel to {authority} (HTTP {code})"))),
        None => Err(fail("the proxy's answer to CONNECT is not HTTP".into())),
    }
}
