//! `spillway drill`: replay a fault scenario against the real engine with
//! mock providers, and report what the clients would have seen (SPEC §11).
//!
//! A scenario ([`scenario`]) names a gateway config whose providers are all
//! `kind: mock`, streams of traffic, fault windows and optional pass marks.
//! The engine ([`engine`]) runs the gateway's own request handler and
//! background jobs on a paused clock, so a ten-minute scenario takes
//! seconds and the same seed gives the same report. The report
//! ([`report`], [`svg`]) gives per cascade the success rate, the share each
//! tier and model served over time, latency percentiles, the valid-output
//! rate and the cost, as a table, JSON and an SVG chart; for a discovered
//! cascade, the cascade discovery built and what it said ([`discovered`]);
//! per caller class, the answers' length and load profiles ([`classes`]).

pub mod classes;
pub mod discovered;
pub mod engine;
pub mod marks;
pub mod report;
pub mod scenario;
pub mod svg;
pub mod times;
pub mod units;

pub use engine::{run, Run, RunError};
pub use report::Report;
pub use scenario::{load_file, load_str, Scenario};
