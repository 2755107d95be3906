//! Per-attempt request rewriting: what one model of the cascade receives.
//!
//! The client's body is copied for each attempt and adapted to the target:
//! its provider's load profile (SPEC §9) and, later, its prompt variant
//! (SPEC §7). Everything here reads in-memory state only — no I/O on the
//! request path.

use super::Target;
use crate::api::ChatRequest;
use crate::runtime::Gateway;
use serde_json::{Map, Value};

/// The body one attempt sends, and what was applied to it.
#[derive(Debug)]
pub struct Prepared {
    /// The OpenAI request body for this attempt.
    pub body: Map<String, Value>,
    /// The load profile applied, when the provider's load is monitored.
    pub load_profile: Option<String>,
}

/// Builds the body of one attempt.
pub fn prepare(_gw: &Gateway, _target: &Target, req: &ChatRequest) -> Prepared {
    Prepared {
        body: req.body.clone(),
        load_profile: None,
    }
}

/// Whether the target must be skipped because its provider is in its last
/// load profile and has `skip_when_lazy: true` (degrade first, shed second).
pub fn skip_for_load(_gw: &Gateway, target: &Target) -> bool {
    let _ = target.provider.config.skip_when_lazy;
    false
}
