//! [`Endpoint`]: the pooled client of one provider's chat endpoint, with
//! the request line and fixed headers prepared once when it is built.
//!
//! Each attempt of `kind: openai` is one [`Endpoint::post`]: a connection
//! from the serving thread's idle list (or a new one), the request, and the
//! response head with a [`Body`] that returns the connection when read.

use super::body::Body;
use super::connect::{Connector, Origin};
use super::error::{EndpointError, HttpError};
use super::fields::Fields;
use super::link::{self, Head, Link};
use super::pool::{self, Pool, SLOTS};
use super::proxy::Proxy;
use super::tls::tls_connector;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE, HOST, USER_AGENT};
use http::{StatusCode, Uri};
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::rustls;

/// A pooled client for one origin, with the request line and fixed headers
/// of one endpoint prepared.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub(super) connector: Arc<Connector>,
    pub(super) pool: Arc<Pool>,
    uri: Uri,
    headers: HeaderMap,
    /// The request line and the fixed headers, laid out once
    /// ([`link::Prefix`]).
    prefix: Arc<link::Prefix>,
}

impl Endpoint {
    /// An endpoint at `url` (`http` or `https`), sending `headers` (the
    /// key, the provider's extra headers) with every request. `ca_file`
    /// adds roots to the system's. `proxy` is the outbound proxy to go
    /// through ([`super::proxy::for_url`]), if any.
    pub fn new(
        url: &str,
        headers: &HeaderMap,
        ca_file: Option<&std::path::Path>,
        connect_timeout: Duration,
        proxy: Option<Proxy>,
    ) -> Result<Self, EndpointError> {
        let parsed = url::Url::parse(url).map_err(|e| EndpointError(format!("invalid URL: {e}")))?;
        let host = match parsed.host() {
            Some(url::Host::Domain(d)) => d.to_string(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err(EndpointError("the URL has no host".into())),
        };
        let https = match parsed.scheme() {
            "http" => false,
            "https" => true,
            other => return Err(EndpointError(format!("unsupported scheme `{other}` (http or https)"))),
        };
        let port = parsed.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
        let tls = if https {
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|e| EndpointError(format!("invalid TLS server name `{host}`: {e}")))?;
            Some((tls_connector(ca_file)?, name))
        } else {
            None
        };
        let mut path = parsed.path().to_string();
        if let Some(q) = parsed.query() {
            path.push('?');
            path.push_str(q);
        }
        let authority = match parsed.port() {
            Some(p) => format!("{}:{p}", parsed.host_str().unwrap_or_default()),
            None => parsed.host_str().unwrap_or_default().to_string(),
        };
        // Through a proxy, plain-HTTP requests name the whole URL.
        let plain_via_proxy = proxy.is_some() && !https;
        if plain_via_proxy {
            path = format!("http://{authority}{path}");
        }
        let uri: Uri = path.parse().map_err(|e| EndpointError(format!("invalid URL path: {e}")))?;
        let mut fixed = HeaderMap::with_capacity(headers.len() + 3);
        fixed.insert(HOST, HeaderValue::from_str(&authority).map_err(|_| EndpointError("invalid host".into()))?);
        fixed.insert(USER_AGENT, HeaderValue::from_static(concat!("spillway/", env!("CARGO_PKG_VERSION"))));
        fixed.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in headers {
            fixed.insert(name, value.clone());
        }
        if let Some(auth) = proxy.as_ref().and_then(|p| p.auth.clone()).filter(|_| plain_via_proxy) {
            fixed.insert(http::header::PROXY_AUTHORIZATION, auth);
        }
        let connector = Connector { origin: Origin { host, port, tls, proxy }, connect_timeout };
        let prefix = Arc::new(link::Prefix::new("POST", &uri, &fixed));
        Ok(Self { connector: Arc::new(connector), pool: Arc::new(Pool::new()), uri, headers: fixed, prefix })
    }

    /// Another endpoint of the same origin, sharing this one's connections,
    /// TLS setup and headers: the request path's `suffix` replaced by
    /// `with` (a provider's `/embeddings` beside its `/chat/completions`).
    pub fn sibling(&self, suffix: &str, with: &str) -> Result<Self, EndpointError> {
        let text = self.uri.to_string();
        let (path, query) = text.split_once('?').map_or((text.as_str(), None), |(p, q)| (p, Some(q)));
        let base =
            path.strip_suffix(suffix).ok_or_else(|| EndpointError(format!("the path does not end in {suffix}")))?;
        let mut next = format!("{base}{with}");
        if let Some(q) = query {
            next.push('?');
            next.push_str(q);
        }
        let uri: Uri = next.parse().map_err(|e| EndpointError(format!("invalid URL path: {e}")))?;
        let prefix = Arc::new(link::Prefix::new("POST", &uri, &self.headers));
        Ok(Self { uri, prefix, ..self.clone() })
    }

    /// Another endpoint of the same origin at `path_and_query` (from the
    /// `/` on), sharing this one's connections, TLS setup and headers: one
    /// Azure deployment's chat path beside another's.
    pub fn at_path(&self, path_and_query: &str) -> Result<Self, EndpointError> {
        // Through a proxy, plain-HTTP requests name the whole URL.
        let text = match (self.uri.scheme_str(), self.uri.authority()) {
            (Some(scheme), Some(authority)) => format!("{scheme}://{authority}{path_and_query}"),
            _ => path_and_query.to_owned(),
        };
        let uri: Uri = text.parse().map_err(|e| EndpointError(format!("invalid URL path: {e}")))?;
        let prefix = Arc::new(link::Prefix::new("POST", &uri, &self.headers));
        Ok(Self { uri, prefix, ..self.clone() })
    }

    /// Posts `body` and returns the response head with its body to read.
    pub async fn post(&self, body: Bytes) -> Result<Response, HttpError> {
        self.post_as(body, crate::providers::types::CallIds::default()).await
    }

    /// [`Self::post`] with the client request's id as `x-request-id` and
    /// its trace's `traceparent`.
    pub async fn post_as(&self, body: Bytes, ids: crate::providers::types::CallIds<'_>) -> Result<Response, HttpError> {
        let slot = pool::slot() % SLOTS;
        let request = self.prefix.request(crate::providers::headers::call_values(ids), &body);
        if let Some(mut link) = self.pool.take(slot) {
            // A write that fails on a reused connection: the upstream had
            // closed it while it was idle. Once more on a new one.
            if link.send(&request).await.is_ok() {
                let head = link.head().await.map_err(HttpError::Send)?;
                return Ok(self.wrap(head, link, slot));
            }
        }
        // Boxed: the TCP and TLS handshakes would otherwise make every
        // request's future larger (it is moved whole), pooled or not.
        let mut link = Box::pin(self.connector.connect()).await?;
        link.send(&request).await.map_err(HttpError::Send)?;
        let head = link.head().await.map_err(HttpError::Send)?;
        Ok(self.wrap(head, link, slot))
    }

    fn wrap(&self, head: Head, link: Link, slot: usize) -> Response {
        let Head { status, fields, framing, keep_alive } = head;
        Response { status, fields, body: Body::new(link, framing, keep_alive, self.pool.clone(), slot) }
    }
}

/// An upstream's response: its status and header fields, and its body to
/// read.
#[derive(Debug)]
pub struct Response {
    status: StatusCode,
    fields: Fields,
    body: Body,
}

impl Response {
    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The header fields, as sent ([`Fields`]).
    pub fn headers(&self) -> &Fields {
        &self.fields
    }

    /// The body, to read.
    pub fn into_body(self) -> Body {
        self.body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_line_and_host_come_from_the_url() {
        let mut extra = HeaderMap::new();
        extra.insert("x-title", HeaderValue::from_static("t"));
        let e = Endpoint::new(
            "http://127.0.0.1:8080/v1/chat/completions?api-version=1",
            &extra,
            None,
            Duration::from_secs(1),
            None,
        )
        .unwrap();
        assert_eq!(e.uri.to_string(), "/v1/chat/completions?api-version=1");
        assert_eq!(e.headers[HOST], "127.0.0.1:8080");
        assert_eq!(e.headers["x-title"], "t");
        let s = e.sibling("/chat/completions", "/embeddings").unwrap();
        assert_eq!(s.uri.to_string(), "/v1/embeddings?api-version=1");
        assert!(Arc::ptr_eq(&s.pool, &e.pool), "one pool for the origin");
        let e = Endpoint::new(
            "https://api.example.com/v1/chat/completions",
            &HeaderMap::new(),
            None,
            Duration::from_secs(1),
            None,
        )
        .unwrap();
        assert_eq!(e.headers[HOST], "api.example.com");
        assert_eq!(e.connector.origin.port, 443);
        assert!(e.connector.origin.tls.is_some());
    }
}
