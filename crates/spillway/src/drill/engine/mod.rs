//! Runs a scenario: the real gateway (the same handler `spillway serve`
//! serves, with its background jobs) on a single-threaded runtime whose
//! clock is paused and jumps ahead whenever every task waits, so ten
//! minutes of traffic take as long as the CPU work they cause. Requests go
//! to the handler in-process, no sockets; the mocks' delays, deadlines,
//! dead marks, breakers and outage windows all run on that clock.
//!
//! - `sample`: what a run observed (each request's [`Sample`], the [`Run`]).
//! - `run`: building the gateway on the paused clock and running it.
//! - `send`: the traffic, sent on schedule.
//! - `read`: each answer read as a client would.

mod read;
mod run;
pub(crate) mod sample;
mod send;

pub use run::{run, RunError};
pub use sample::{AlertSeen, Outcome, Run, Sample};
