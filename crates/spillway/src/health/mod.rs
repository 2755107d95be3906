//! Upstream health: dead marks, the circuit breaker, and the read-only view
//! the cascade runner consults before each attempt (SPEC §6).
//!
//! - [`ratelimit`]: how long an upstream asked us to stay away, read from
//!   `Retry-After` and the rate-limit headers of a 429 or of a normal answer
//!   that says the quota is used up.

pub mod ratelimit;
