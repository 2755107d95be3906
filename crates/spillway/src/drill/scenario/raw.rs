//! The scenario file as written: serde types with unknown keys refused,
//! checked and turned into a [`super::Scenario`] by `load_str`.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) config: Option<String>,
    pub(super) gateway: Option<serde_yaml_ng::Value>,
    pub(super) duration: String,
    pub(super) step: Option<String>,
    pub(super) seed: Option<u64>,
    pub(super) traffic: Vec<RawTraffic>,
    #[serde(default)]
    pub(super) faults: Vec<RawFault>,
    #[serde(default)]
    pub(super) expect: IndexMap<String, RawExpect>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTraffic {
    pub(super) cascade: String,
    pub(super) rps: f64,
    pub(super) from: Option<String>,
    pub(super) until: Option<String>,
    pub(super) stream: Option<bool>,
    pub(super) json: Option<bool>,
    pub(super) schema: Option<Value>,
    pub(super) prompt: Option<String>,
    pub(super) max_tokens: Option<u64>,
    pub(super) users: Option<u32>,
    pub(super) class: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFault {
    pub(super) at: String,
    #[serde(rename = "for")]
    pub(super) lasts: String,
    pub(super) model: Option<String>,
    pub(super) provider: Option<String>,
    pub(super) status: Option<u16>,
    pub(super) hang: Option<bool>,
    pub(super) answers: Option<String>,
    pub(super) share: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExpect {
    pub(super) min_success_rate: Option<f64>,
    pub(super) min_valid_rate: Option<f64>,
    pub(super) max_p99: Option<String>,
    pub(super) max_handoff_rate: Option<f64>,
    pub(super) min_free_share: Option<f64>,
    pub(super) max_cost_per_month: Option<f64>,
    pub(super) max_first_byte_p99: Option<String>,
    pub(super) max_latency_growth: Option<f64>,
    pub(super) shorter_by_profile: Option<bool>,
    #[serde(default)]
    pub(super) alerts: Vec<String>,
    pub(super) max_last_resort_share: Option<f64>,
    pub(super) paid_before_last_resort: Option<bool>,
    #[serde(default)]
    pub(super) alert_after: IndexMap<String, String>,
    pub(super) resolved: Option<bool>,
    pub(super) max_fault_model_answers: Option<u64>,
    pub(super) max_restore_after: Option<String>,
    pub(super) min_class_length_ratio: Option<f64>,
}
