//! The HTTP client of the request path: HTTP/1.1 keep-alive connections to
//! one upstream origin, pooled per provider, with the protocol written and
//! read here ([`link`], [`chunked`]) rather than by hyper's client.
//!
//! Why not reqwest here: under load, profiles of the gateway showed
//! reqwest's layers (its redirect policy parsing the URL again for every
//! request, proxy matching, a header-map copy, the legacy pool's channel
//! hop) at about a sixth of the CPU spent per proxied request. This client
//! does only what a chat call needs: one POST with fixed headers to one
//! origin, over a connection taken from a small LIFO pool (the warmest
//! first), with rustls for `https` (the system's roots plus the provider's
//! `ca_file`). Listings, alerts and the other off-path calls keep reqwest.
//!
//! A connection goes back to the pool when its response body has been
//! read to the end; one dropped halfway is closed (the rest of its body
//! would be read first). A request whose write fails on a reused
//! connection (the upstream closed the idle connection at that moment) is
//! sent again once on a fresh connection.
//!
//! Behind an outbound proxy (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`; see
//! [`proxy`]) an `https` upstream is reached through a `CONNECT`
//! tunnel and an `http` one with absolute-form requests. Not supported
//! here: HTTP/2 (every OpenAI-compatible API also speaks HTTP/1.1).
//!
//! In a request's life: `openai_compat` posts each attempt through an
//! [`Endpoint`] and reads the answer from its [`Body`]. The parts, in the
//! order they import each other (each only those before it):
//!
//! - [`error`]: why a request got no response, why an endpoint cannot be built;
//! - [`chunked`]: the chunked body decoder, all of a read's chunks as one
//!   piece;
//! - [`fields`]: a response head's header fields, kept in its own bytes;
//! - [`link`]: one connection: the request written, the response head
//!   parsed (`httparse`), the body decoded in the reader's own poll (no
//!   task, no channel: a stream's events come out as many per wake-up as
//!   one socket read brought);
//! - [`pool`]: the serving thread's slot and the idle connections per slot;
//! - [`proxy`]: the proxy environment rules; [`tunnel`]: the `CONNECT` tunnel;
//! - [`tls`]: rustls with the system's roots plus `ca_file`;
//! - [`connect`]: a new connection (TCP, tunnel, TLS);
//! - [`body`]: the response body that hands its connection back, and
//!   [`read_to_end`] (also used by the server for client bodies);
//! - [`client`]: the [`Endpoint`] itself.

pub mod body;
pub(crate) mod chunked;
pub mod client;
pub mod connect;
pub mod error;
pub mod fields;
pub mod link;
pub mod pool;
pub mod proxy;
pub mod tls;
pub mod tunnel;

#[cfg(test)]
mod tests;

pub use body::{read_to_end, Body, BodyError, Completion, ReadError, MAX_BODY};
pub use client::{Endpoint, Response};
pub use error::{EndpointError, HttpError};
pub use fields::Fields;
pub use link::WireError;
pub(crate) use pool::set_slot;
pub use pool::slot;
