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
//! - [`registry`]: the published load and profile per provider, read by
//!   the request path with one atomic load.
//! - [`monitor`]: the background job per provider that polls its source.
//! - [`gpu`]: the real NVML reader behind [`GpuReader`].
//! - [`tokens`]: counting generated tokens in answers for `token_velocity`.

pub mod gpu;
pub mod monitor;
pub mod nvml;
pub mod profile;
pub mod prometheus;
pub mod registry;
pub mod rewrite;
pub mod tokens;
pub mod velocity;
pub mod vllm;

pub use nvml::{gpu_load, GpuReader};
pub use profile::{Profile, ProfileSelector, Staleness};
pub use registry::{LoadRegistry, LoadSnapshot, NotEmulated, ProviderLoad};
pub use rewrite::apply_profile;
pub use velocity::VelocityMeter;
pub use vllm::vllm_load;

/// Why a load source could not produce a reading this interval.
///
/// A monitor logs it and feeds it to [`Staleness`]; one failure keeps the last
/// load, three in a row make it unknown.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    /// The metrics text is not valid Prometheus exposition format. Treated
    /// like Prometheus itself does: the whole scrape fails.
    #[error("metrics text, line {line}: {reason}")]
    Parse {
        /// 1-based line number in the scraped text.
        line: usize,
        /// What was wrong, as a fixed phrase (bounded, so it can be logged
        /// as a field without leaking scraped content).
        reason: &'static str,
    },
    /// The scrape parsed but holds none of the vLLM series the load formula
    /// needs; usually the `url` points at something that is not vLLM.
    #[error("no vLLM load metrics (vllm:num_requests_running/_waiting, vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc)")]
    NoMetrics,
    /// The `nvml` source has an empty `devices` list.
    #[error("no GPU devices configured")]
    NoDevices,
    /// Reading one GPU failed (driver missing, GPU lost, not supported on a
    /// MIG slice, …); the message is the reader's.
    #[error("GPU {device}: {message}")]
    Gpu {
        /// The NVML device index that failed.
        device: u32,
        /// The reader's description of the failure.
        message: String,
    },
    /// Fetching the reading failed (connection refused, HTTP error status,
    /// a cut body).
    #[error("fetch failed: {0}")]
    Fetch(String),
    /// The reading took longer than the poll interval.
    #[error("no reading within the poll interval")]
    Timeout,
    /// The source cannot work on this machine (NVML without an NVIDIA
    /// driver); the load stays unknown until a restart or reload.
    #[error("source unavailable: {0}")]
    Unavailable(String),
}

impl LoadError {
    /// A bounded label for metrics (`spillway_load_errors_total{reason=…}`).
    pub fn metric_label(&self) -> &'static str {
        match self {
            LoadError::Parse { .. } => "parse",
            LoadError::NoMetrics => "no_metrics",
            LoadError::NoDevices => "no_devices",
            LoadError::Gpu { .. } => "gpu",
            LoadError::Fetch(_) => "fetch",
            LoadError::Timeout => "timeout",
            LoadError::Unavailable(_) => "unavailable",
        }
    }
}
