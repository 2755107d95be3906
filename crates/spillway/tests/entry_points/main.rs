//! The entry points beside chat completions, through the real server
//! started the way `serve` starts it, against fake upstreams and mocks:
//! the Responses API, Anthropic's Messages API, embeddings, and the
//! model and fallback routes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

#[path = "../common/mod.rs"]
mod common;

mod bodies;
mod embeddings;
mod limits;
mod messages;
#[path = "../redis_support/mod.rs"]
mod redis_support;
mod responses;
mod routes;
mod stored;
mod support;
