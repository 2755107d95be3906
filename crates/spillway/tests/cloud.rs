//! The cloud kinds through the composition root, each against its fake
//! upstream (`test-upstreams`): what each sends (URL, auth, body), whole
//! and streamed answers, tools, JSON mode, errors and discovery. The
//! shared behaviour of every adapter is in `conformance.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

mod common;
mod file_gateway;

#[path = "native/azure.rs"]
mod azure;

#[path = "native/gemini.rs"]
mod gemini;

#[path = "native/bedrock.rs"]
mod bedrock;
