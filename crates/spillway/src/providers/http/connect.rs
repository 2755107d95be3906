//! A new upstream connection: TCP (to the proxy, if one applies), the
//! `CONNECT` tunnel for `https` behind a proxy, then TLS, each bounded by
//! `timeouts.connect`.
//!
//! Used by the endpoint when its pool has no idle connection for the
//! serving thread; the connection is then driven by whoever holds its
//! [`Link`].

use super::error::HttpError;
use super::link::Link;
use super::proxy::Proxy;
use super::tunnel::tunnel;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::rustls;

/// Where a provider's requests go, resolved once when it is built.
pub(super) struct Origin {
    pub(super) host: String,
    pub(super) port: u16,
    /// `Some` for `https`: the connector and the name to verify.
    pub(super) tls: Option<(tokio_rustls::TlsConnector, rustls::pki_types::ServerName<'static>)>,
    /// The outbound proxy, when the environment names one for this origin.
    pub(super) proxy: Option<Proxy>,
}

impl std::fmt::Debug for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Origin")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls.is_some())
            .field("proxy", &self.proxy)
            .finish()
    }
}

impl Origin {
    /// `host:port` as a `CONNECT` request names it.
    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// How to open a connection to one origin.
#[derive(Debug)]
pub(super) struct Connector {
    pub(super) origin: Origin,
    pub(super) connect_timeout: Duration,
}

impl Connector {
    /// A new connection, ready for its first request.
    pub(super) async fn connect(&self) -> Result<Link, HttpError> {
        let origin = &self.origin;
        let (host, port) = match &origin.proxy {
            Some(p) => (p.host.as_str(), p.port),
            None => (origin.host.as_str(), origin.port),
        };
        let mut tcp = tokio::time::timeout(self.connect_timeout, TcpStream::connect((host, port)))
            .await
            .map_err(|_| HttpError::ConnectTimeout(self.connect_timeout))?
            .map_err(|e| match &origin.proxy {
                Some(p) => HttpError::Connect(format!("proxy {p}: {e}")),
                None => HttpError::Connect(e.to_string()),
            })?;
        let _ = tcp.set_nodelay(true);
        if let (Some(proxy), Some(_)) = (&origin.proxy, &origin.tls) {
            tokio::time::timeout(self.connect_timeout, tunnel(&mut tcp, proxy, &origin.authority()))
                .await
                .map_err(|_| HttpError::ConnectTimeout(self.connect_timeout))??;
        }
        match &origin.tls {
            None => Ok(Link::new(Box::new(tcp))),
            Some((connector, name)) => {
                let tls = tokio::time::timeout(self.connect_timeout, connector.connect(name.clone(), tcp))
                    .await
                    .map_err(|_| HttpError::ConnectTimeout(self.connect_timeout))?
                    .map_err(|e| HttpError::Connect(format!("TLS: {e}")))?;
                Ok(Link::new(Box::new(tls)))
            }
        }
    }
}
