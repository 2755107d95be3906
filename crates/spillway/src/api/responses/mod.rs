//! The OpenAI Responses API (`POST /v1/responses`) as Spillway speaks it:
//! a request translated into the chat request every cascade runs
//! ([`request::to_chat`]), and the chat answer translated back — a whole
//! completion into a `response` object ([`response::from_completion`]),
//! the chat stream into the typed event stream ([`stream::Events`]).
//!
//! Errors keep OpenAI's shape (`api::error`). What refers to stored
//! responses (`previous_response_id`, `item_reference`) is found by
//! [`history`] and put in place by the handler, which reads the store.
//! Pure translation: nothing here knows cascades, upstreams or the store.

pub mod history;
pub mod request;
pub mod response;
pub mod stream;

pub use request::{to_chat, to_chat_map, Echo};
pub use response::{from_completion, Shell};
pub use stream::Events;
