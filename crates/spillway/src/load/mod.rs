//! Load-aware degradation (SPEC §9): turning a provider's load into a
//! profile, and a profile into a rewritten request.
//!
//! Where it sits in a request's life: a background monitor per provider polls
//! its source every `interval` and publishes a load in `0..=1` (or "unknown");
//! the request path only reads that last value, picks a [`Profile`] with a
//! [`ProfileSelector`] and calls [`apply_profile`] on the request body before
//! it goes to the upstream. Nothing in this module does I/O or reads a clock:
//! the monitors pass in what they fetched and the time they fetched it, so
//! every piece is a plain function that tests drive directly.
//!
//! - [`prometheus`]: a small parser for the Prometheus text format.
//! - [`vllm`]: vLLM's `/metrics` → load.
//! - [`nvml`]: GPU utilization → load, behind the [`GpuReader`] trait.
//! - [`velocity`]: a sliding-window tokens/s meter for `token_velocity`.
//! - [`profile`]: profiles, the hysteresis selector, and the staleness rule
//!   ("three failed intervals make the load unknown").
//! - [`rewrite`]: adding the profile's system prompt and scaling `max_tokens`.
//!
//! The moving parts around them:
//!
//! - [`state`]: the published load and profile of one provider, read by
//!   the request path with one atomic load.
//! - [`registry`]: the monitored providers of one config generation.
//! - [`probe`]: one reading of a source, the interface every source offers.
//! - [`monitor`]: the background job per provider that polls its probe.
//! - [`gpu`]: the real NVML reader behind [`GpuReader`].
//! - [`tokens`]: counting generated tokens in answers for `token_velocity`.
//! - [`error`]: why a source gave no reading.
//!
//! Imports run one way: `error` and `probe` at the bottom, the pure parts
//! and the published state above them, the monitors above those, the
//! registry on top; `load/` reads the adapters (`providers::Provider`, their
//! replies) and nothing in `providers/` or `api/` reads `load/`.

pub mod error;
pub mod gpu;
pub mod monitor;
pub mod nvml;
pub mod probe;
pub mod profile;
pub mod prometheus;
pub mod registry;
pub mod rewrite;
pub mod state;
pub mod tokens;
pub mod velocity;
pub mod vllm;

pub use error::LoadError;
pub use nvml::{gpu_load, GpuReader};
pub use probe::Probe;
pub use profile::{Profile, ProfileSelector, Staleness};
pub use registry::LoadRegistry;
pub use rewrite::apply_profile;
pub use state::{LoadSnapshot, NotEmulated, ProviderLoad};
pub use velocity::VelocityMeter;
pub use vllm::vllm_load;
