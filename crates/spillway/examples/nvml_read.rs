//! Prints what Spillway's `nvml` load source reads on this machine: each
//! GPU's name and utilization, the load the source would publish for the
//! devices given as arguments (default: all), and a few polls through the
//! real probe. Used by `scripts/nvml-check.sh` on a GPU machine.
//!
//! `cargo run --release -p spillway --example nvml_read -- 0 1`

use spillway::load::gpu::{NvmlGpus, NvmlProbe};
use spillway::load::probe::Probe;
use spillway::load::{gpu_load, GpuReader};
use std::process::ExitCode;

fn main() -> ExitCode {
    let gpus = match NvmlGpus::init() {
        Ok(g) => g,
        Err(why) => {
            println!("nvml: unavailable: {why}");
            return ExitCode::from(2);
        }
    };
    let count = match gpus.device_count() {
        Ok(n) => n,
        Err(why) => {
            println!("nvml: device_count failed: {why}");
            return ExitCode::from(1);
        }
    };
    println!("nvml: {count} device(s)");
    for i in 0..count {
        let name = gpus.name(i).unwrap_or_else(|e| format!("<{e}>"));
        match gpus.utilization(i) {
            Ok(u) => println!("device {i}: {name}: gpu utilization {u} %"),
            Err(e) => println!("device {i}: {name}: utilization unavailable: {e}"),
        }
    }
    let mut devices: Vec<u32> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    if devices.is_empty() {
        devices = (0..count).collect();
    }
    match gpu_load(&gpus, &devices) {
        Ok(load) => println!("load over {devices:?}: {load:.2}"),
        Err(e) => println!("load over {devices:?}: error: {e}"),
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            println!("cannot start a runtime: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(async {
        let mut probe = NvmlProbe::new(devices.clone());
        for poll in 1..=5 {
            match probe.read().await {
                Ok(load) => println!("probe poll {poll}: load {load:.2}"),
                Err(e) => println!("probe poll {poll}: error: {e}"),
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    });
    ExitCode::SUCCESS
}
