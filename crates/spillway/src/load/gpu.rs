//! The real NVML source (`source: nvml`): GPU utilization read through
//! `nvml-wrapper`, behind [`GpuReader`] so the mapping in [`super::nvml`]
//! is tested with fakes.
//!
//! `nvml-wrapper` loads `libnvidia-ml.so.1` at run time, so the gateway
//! builds and starts on machines without NVIDIA drivers. There the first
//! poll logs one clear warning, the provider's load stays unknown (profile:
//! the first) and, after three intervals, `spillway_load_stale` says so;
//! the library is not looked for again until a restart or reload (loading
//! it is the expensive part of NVML). NVML calls block for a moment, so they
//! run on tokio's blocking pool, never on a runtime worker.

use super::error::LoadError;
use super::nvml::{gpu_load, GpuReader};
use super::probe::Probe;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;
use std::sync::Arc;

/// NVML, initialised once per probe.
#[derive(Debug)]
pub struct NvmlGpus(Nvml);

impl NvmlGpus {
    /// Loads the driver library and initialises NVML (blocking). The error
    /// says in words what is missing.
    pub fn init() -> Result<Self, String> {
        Nvml::init().map(NvmlGpus).map_err(|e| explain(&e))
    }

    /// GPUs NVML sees.
    pub fn device_count(&self) -> Result<u32, String> {
        self.0.device_count().map_err(|e| e.to_string())
    }

    /// The product name of device `index`.
    pub fn name(&self, index: u32) -> Result<String, String> {
        self.0.device_by_index(index).and_then(|d| d.name()).map_err(|e| e.to_string())
    }
}

impl GpuReader for NvmlGpus {
    fn utilization(&self, device: u32) -> Result<u32, String> {
        // A `Device` borrows the `Nvml`: looked up per poll, never kept.
        self.0.device_by_index(device).and_then(|d| d.utilization_rates()).map(|u| u.gpu).map_err(|e| e.to_string())
    }
}

/// Why NVML could not start, in words an operator can act on.
fn explain(e: &NvmlError) -> String {
    match e {
        NvmlError::LibloadingError(inner) => format!(
            "the NVIDIA driver library libnvidia-ml.so.1 was not found ({inner}); \
             is an NVIDIA driver installed on this machine?"
        ),
        NvmlError::DriverNotLoaded => "the NVIDIA driver is installed but not loaded".to_owned(),
        NvmlError::NoPermission => "no permission to use NVML (the NVIDIA device files)".to_owned(),
        other => format!("NVML failed to initialise: {other}"),
    }
}

/// Reads the max utilization over `devices`.
pub struct NvmlProbe {
    devices: Arc<[u32]>,
    /// `None` until the first poll tries to initialise; then the handle or
    /// the reason it failed.
    nvml: Option<Result<Arc<NvmlGpus>, String>>,
}

impl NvmlProbe {
    /// A probe of the NVML device indices `devices`.
    pub fn new(devices: Vec<u32>) -> Self {
        NvmlProbe { devices: devices.into(), nvml: None }
    }

    async fn handle(&mut self) -> Result<Arc<NvmlGpus>, LoadError> {
        if self.nvml.is_none() {
            let init = tokio::task::spawn_blocking(NvmlGpus::init)
                .await
                .unwrap_or_else(|e| Err(format!("the NVML start-up task failed: {e}")))
                .map(Arc::new);
            if let Err(why) = &init {
                tracing::warn!(
                    reason = %why,
                    "NVML is unavailable: the `nvml` load source reads nothing and the provider's load stays unknown (no degradation) until a restart or reload."
                );
            }
            self.nvml = Some(init);
        }
        match &self.nvml {
            Some(Ok(gpus)) => Ok(gpus.clone()),
            Some(Err(why)) => Err(LoadError::Unavailable(why.clone())),
            None => Err(LoadError::Unavailable("NVML was not initialised".into())),
        }
    }
}

impl Probe for NvmlProbe {
    async fn read(&mut self) -> Result<f64, LoadError> {
        let gpus = self.handle().await?;
        let devices = self.devices.clone();
        tokio::task::spawn_blocking(move || gpu_load(gpus.as_ref(), &devices))
            .await
            .unwrap_or_else(|e| Err(LoadError::Fetch(format!("the NVML poll task failed: {e}"))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_errors_say_what_is_missing() {
        let missing = explain(&NvmlError::DriverNotLoaded);
        assert!(missing.contains("not loaded"), "{missing}");
        assert!(explain(&NvmlError::NoPermission).contains("permission"));
        assert!(explain(&NvmlError::Unknown).contains("NVML failed"));
    }

    /// On a machine without the driver (CI), the probe fails cleanly and
    /// keeps failing without retrying the library load; with a driver it
    /// reads a load in 0..=1. Either way nothing panics.
    #[tokio::test]
    async fn probe_never_panics_with_or_without_a_driver() {
        let mut probe = NvmlProbe::new(vec![0]);
        match probe.read().await {
            Ok(load) => assert!((0.0..=1.0).contains(&load)),
            Err(LoadError::Unavailable(why)) => {
                assert!(!why.is_empty());
                assert!(matches!(probe.read().await, Err(LoadError::Unavailable(_))));
            }
            Err(other) => assert!(matches!(other, LoadError::Gpu { .. }), "{other}"),
        }
    }
}
