//! Upstream health: dead marks, circuit breakers, TTFT statistics, and the
//! read-only view the cascade runner consults before each attempt (SPEC §6).
//!
//! - [`ratelimit`]: how long an upstream asked us to stay away, read from
//!   `Retry-After` and the rate-limit headers of a 429 or of a normal answer
//!   that says the quota is used up.
//! - [`breaker`]: the state machine of one model's circuit breaker.
//! - [`registry`]: per-model and per-provider health, shared across config
//!   reloads; what the request path reads without I/O.
//! - [`quality`]: one model's answer-quality window and its demotion.
//! - [`feedback`]: the recent judged answers a client may rate.
//! - [`refusals`]: how often each cascade's request shapes are refused,
//!   so that a refusal counts only where the shape is usually answered.
//! - [`clock`]: wall-clock milliseconds that follow tokio's (pausable) clock.

pub mod breaker;
pub mod clock;
pub mod feedback;
pub mod quality;
pub mod ratelimit;
pub mod refusals;
pub mod registry;
pub mod stats;

pub use registry::{DeadMark, DeadReason, HealthEvent, HealthRegistry, ModelHealth, ProviderHealth};
