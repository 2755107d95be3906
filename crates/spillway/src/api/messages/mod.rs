//! The Anthropic Messages API (`POST /v1/messages`) as Spillway speaks it,
//! so Anthropic SDKs and coding agents can use any cascade: a request
//! translated into the chat request every cascade runs
//! ([`request::to_chat`]), the chat answer translated back — a whole
//! completion into a `message` ([`response::from_completion`]), the chat
//! stream into Anthropic's events ([`stream::Events`]) — and errors in
//! Anthropic's shape ([`error`]). Pure translation: nothing here knows
//! cascades or upstreams.

pub mod error;
pub mod request;
pub mod response;
pub mod stream;

pub use request::to_chat;
pub use response::from_completion;
pub use stream::Events;
