//! The OpenAI Responses API (`POST /v1/responses`) as Spillway speaks it:
//! a request translated into the chat request every cascade runs
//! ([`request::to_chat`]), and the chat answer translated back — a whole
//! completion into a `response` object ([`response::from_completion`]),
//! the chat stream into the typed event stream ([`stream::Events`]).
//!
//! Errors keep OpenAI's shape (`api::error`); what the API's stored state
//! would need (`previous_response_id`, `item_reference`) is a 400, since
//! the gateway keeps no responses. Pure translation: nothing here knows
//! cascades or upstreams.

pub mod request;
pub mod response;
pub mod stream;

pub use request::{to_chat, Echo};
pub use response::{from_completion, Shell};
pub use stream::Events;
