//! GPU utilization → a load in `0..=1` (SPEC §9, source `nvml`).
//!
//! The monitor owns the real NVML handle (`nvml-wrapper`, initialised once,
//! called off the async runtime because NVML calls block) and reaches it only
//! through [`GpuReader`]; this file is the mapping from per-device percentages
//! to one load, which tests drive with a fake reader.
//!
//! The load is the **max** over the configured devices: a model sharded over
//! several GPUs is as slow as its busiest one, and an average would hide one
//! saturated card among idle ones. NVML's `gpu` figure is the share of the
//! last sample period (1/6 s to 1 s) in which any kernel ran, so it reaches
//! 100 % well before the card is out of capacity; profiles' thresholds are
//! where that is tuned, not here.

use super::error::LoadError;

/// Reads one GPU's utilization. Implemented over `nvml-wrapper` by the
/// monitor, and by fakes in tests.
pub trait GpuReader {
    /// The `gpu` utilization of device `device` (NVML index) in percent,
    /// `0..=100`; an error message when the device cannot be read (no
    /// driver, GPU lost, not supported on a MIG slice, …).
    fn utilization(&self, device: u32) -> Result<u32, String>;
}

/// The max utilization over `devices` as a fraction `0..=1`.
///
/// Any device that fails fails the whole reading: taking the max of the
/// others could under-report exactly the GPU that is busy, and a failed
/// reading is handled upstream (keep the last load, unknown after three
/// intervals). Values above 100 (a driver quirk) are clamped.
pub fn gpu_load(reader: &dyn GpuReader, devices: &[u32]) -> Result<f64, LoadError> {
    if devices.is_empty() {
        return Err(LoadError::NoDevices);
    }
    let mut max = 0u32;
    for &device in devices {
        let percent = reader.utilization(device).map_err(|message| LoadError::Gpu { device, message })?;
        max = max.max(percent.min(100));
    }
    Ok(f64::from(max) / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A fake with fixed answers per device that records what was asked.
    struct Fake {
        answers: Vec<(u32, Result<u32, String>)>,
        asked: RefCell<Vec<u32>>,
    }

    impl Fake {
        fn new(answers: &[(u32, Result<u32, &str>)]) -> Self {
            Fake {
                answers: answers.iter().map(|(d, r)| (*d, r.map_err(str::to_owned))).collect(),
                asked: RefCell::new(Vec::new()),
            }
        }
    }

    impl GpuReader for Fake {
        fn utilization(&self, device: u32) -> Result<u32, String> {
            self.asked.borrow_mut().push(device);
            self.answers
                .iter()
                .find(|(d, _)| *d == device)
                .map(|(_, r)| r.clone())
                .unwrap_or_else(|| Err(format!("no device {device}")))
        }
    }

    #[test]
    fn max_over_the_configured_devices_only() {
        let fake = Fake::new(&[(0, Ok(35)), (1, Ok(80)), (2, Ok(100))]);
        assert_eq!(gpu_load(&fake, &[0, 1]), Ok(0.8));
        assert_eq!(*fake.asked.borrow(), [0, 1]);
        assert_eq!(gpu_load(&fake, &[0]), Ok(0.35));
        assert_eq!(gpu_load(&fake, &[2, 0]), Ok(1.0));
    }

    #[test]
    fn idle_and_out_of_range_values() {
        let fake = Fake::new(&[(0, Ok(0)), (1, Ok(250))]);
        assert_eq!(gpu_load(&fake, &[0]), Ok(0.0));
        assert_eq!(gpu_load(&fake, &[0, 1]), Ok(1.0));
    }

    #[test]
    fn one_failing_device_fails_the_reading() {
        let fake = Fake::new(&[(0, Ok(10)), (1, Err("NotSupported"))]);
        let err = gpu_load(&fake, &[0, 1]).unwrap_err();
        assert_eq!(err, LoadError::Gpu { device: 1, message: "NotSupported".into() });
        assert_eq!(err.to_string(), "GPU 1: NotSupported");
        assert_eq!(err.metric_label(), "gpu");
        assert!(matches!(gpu_load(&fake, &[7]), Err(LoadError::Gpu { device: 7, .. })));
    }

    #[test]
    fn no_devices_is_an_error() {
        let fake = Fake::new(&[]);
        assert_eq!(gpu_load(&fake, &[]), Err(LoadError::NoDevices));
        assert!(fake.asked.borrow().is_empty());
    }
}
