//! Escalation (SPEC §8): switching a request to a stronger cascade when the
//! user is frustrated, before the cascade runner starts.
//!
//! - [`frustration`]: the built-in detector behind `when: frustrated`, a pure
//!   function over the request's messages; its phrase tables live in
//!   `phrases.rs`, compiled into an index by `matcher.rs`.
//! - [`rules`]: applies `escalation:` rules to a request (the route calls it
//!   before the runner).

pub mod frustration;
mod matcher;
mod phrases;
pub mod rules;

pub use frustration::{detect, Frustration, Signal};
