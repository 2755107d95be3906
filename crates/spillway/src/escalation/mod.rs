//! Escalation (SPEC §8): switching a request to a stronger cascade when the
//! user is frustrated, before the cascade runner starts.
//!
//! - [`frustration`]: the built-in detector behind `when: frustrated`, a pure
//!   function over the request's messages; its phrase tables live in
//!   `phrases.rs`, compiled into an index by `matcher.rs`.

pub mod frustration;
mod matcher;
mod phrases;

pub use frustration::{detect, Frustration, Signal};
