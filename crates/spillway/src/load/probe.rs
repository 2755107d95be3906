//! [`Probe`]: one reading of a load source, the interface between a
//! monitor and what it measures (vLLM's `/metrics`, NVML, in-flight
//! attempts, generated tokens).
//!
//! A leaf of `load/`: the monitors call probes, and every source (the NVML
//! one in `gpu.rs` included) implements this without knowing the monitor.

use super::error::LoadError;
use std::future::Future;

/// One reading of a load source.
pub trait Probe: Send + 'static {
    /// The load now, in `0..=1`.
    fn read(&mut self) -> impl Future<Output = Result<f64, LoadError>> + Send;
}
