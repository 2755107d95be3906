//! The gateway: a compiled config turned into live providers and cascade
//! plans ([`Gateway`]), the generation of background jobs it owns
//! ([`Generation`]), and the live slot a server reads it from, which
//! reloads and discovery refreshes replace ([`Live`]).

pub mod build;
pub mod canary;
pub mod generation;
pub mod live;
pub mod refresh;
pub mod reload;
pub mod watch;

pub use build::{Gateway, Shared};
pub use generation::Generation;
pub use live::Live;
