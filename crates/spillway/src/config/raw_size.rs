//! A byte size as written (`server.max_body_bytes`,
//! `telemetry.request_log.max_size`).

use schemars::JsonSchema;
use serde::Deserialize;

/// A byte size: an integer, or a string such as `4MiB`, `512KiB`, `1MB`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawSize {
    /// Bytes.
    Bytes(u64),
    /// A number with a unit (`B`, `KB`, `KiB`, `MB`, `MiB`, `GB`, `GiB`).
    Text(String),
}
