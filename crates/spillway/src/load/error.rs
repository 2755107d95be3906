//! [`LoadError`]: why a load source gave no reading this interval.
//!
//! The leaf of `load/`: the parsers, the probes and the monitors return
//! it; a monitor logs it and feeds it to the staleness rule, so a failed
//! reading never reaches a request.

/// Why a load source could not produce a reading this interval.
///
/// A monitor logs it and feeds it to [`Staleness`](super::Staleness); one
/// failure keeps the last load, three in a row make it unknown.
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
