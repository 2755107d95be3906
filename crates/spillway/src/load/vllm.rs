//! vLLM's Prometheus `/metrics` → a load in `0..=1` (SPEC §9, source
//! `vllm_metrics`). Called by the monitor on each scrape; pure.
//!
//! The formula is the SPEC's: `load = max(kv_cache_usage, waiting / (running +
//! waiting))`, with the waiting term 0 when nothing runs or waits.
//!
//! Both metric generations are read: `vllm:kv_cache_usage_perc` (current) and
//! `vllm:gpu_cache_usage_perc` (its old name, still shown by old servers and
//! by new ones with `--show-hidden-metrics-for-version`). When a model has
//! both, the current name wins. Despite "perc", both are fractions `0..=1`.
//!
//! Aggregation, explicitly:
//! - **Within one `model_name`**, series differ by `engine` (data parallel
//!   ranks of the same model): running and waiting are **summed**, KV-cache
//!   usage is the **max** (one full engine already preempts its requests).
//! - **Across `model_name` values** (several models behind one metrics URL):
//!   the provider's load is the **max of the per-model loads**. Summing
//!   running/waiting across models would let an idle model hide a queue on a
//!   busy one, and the gateway cannot steer a request to a different model of
//!   the same provider to escape that queue; the conservative reading is that
//!   the provider is as loaded as its busiest model.
//!
//! NaN values (a gauge not yet set) are ignored, negative counts count as 0,
//! and the result is clamped to `0..=1`.

use super::error::LoadError;
use super::prometheus;

/// Requests in the running batch.
pub const RUNNING: &str = "vllm:num_requests_running";
/// Requests queued for the batch.
pub const WAITING: &str = "vllm:num_requests_waiting";
/// KV-cache usage fraction, current name.
pub const KV_CACHE: &str = "vllm:kv_cache_usage_perc";
/// KV-cache usage fraction, the name before vLLM ~0.10.
pub const KV_CACHE_OLD: &str = "vllm:gpu_cache_usage_perc";

/// What one served model reported, aggregated over its engines.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelLoad {
    /// The `model_name` label (empty when a series had none).
    pub model: String,
    /// Sum of `num_requests_running` over engines.
    pub running: f64,
    /// Sum of `num_requests_waiting` over engines.
    pub waiting: f64,
    /// Max KV-cache usage over engines, current name preferred; `None` when
    /// the model reported neither generation.
    pub kv_cache_usage: Option<f64>,
}

impl ModelLoad {
    /// `max(kv_cache_usage, waiting / (running + waiting))`, clamped to `0..=1`.
    pub fn load(&self) -> f64 {
        let total = self.running + self.waiting;
        let queue = if total > 0.0 { self.waiting / total } else { 0.0 };
        queue.max(self.kv_cache_usage.unwrap_or(0.0)).clamp(0.0, 1.0)
    }
}

/// Per-model accumulator; the two KV generations are kept apart so the
/// current name can win regardless of the order the series come in.
#[derive(Default)]
struct Acc {
    running: f64,
    waiting: f64,
    kv: Option<f64>,
    kv_old: Option<f64>,
}

fn max_opt(a: Option<f64>, b: f64) -> Option<f64> {
    Some(a.map_or(b, |a| a.max(b)))
}

/// The per-model readings in `text`, in order of first appearance.
///
/// Fails when the text is not valid exposition format, or when it holds no
/// vLLM load series at all.
pub fn vllm_model_loads(text: &str) -> Result<Vec<ModelLoad>, LoadError> {
    // A scrape has one or a few models: a linear search beats a map here.
    let mut models: Vec<(String, Acc)> = Vec::new();
    for sample in prometheus::samples(text) {
        let sample = sample?;
        let name = sample.name.as_ref();
        if !matches!(name, RUNNING | WAITING | KV_CACHE | KV_CACHE_OLD) || sample.value.is_nan() {
            continue;
        }
        let model = sample.label("model_name").unwrap_or("");
        let at = match models.iter().position(|(m, _)| m == model) {
            Some(at) => at,
            None => {
                models.push((model.to_owned(), Acc::default()));
                models.len() - 1
            }
        };
        let acc = &mut models[at].1;
        let v = sample.value;
        match name {
            RUNNING => acc.running += v.max(0.0),
            WAITING => acc.waiting += v.max(0.0),
            KV_CACHE => acc.kv = max_opt(acc.kv, v),
            _ => acc.kv_old = max_opt(acc.kv_old, v),
        }
    }
    if models.is_empty() {
        return Err(LoadError::NoMetrics);
    }
    Ok(models
        .into_iter()
        .map(|(model, acc)| ModelLoad {
            model,
            running: acc.running,
            waiting: acc.waiting,
            kv_cache_usage: acc.kv.or(acc.kv_old),
        })
        .collect())
}

/// The provider's load from one scrape of vLLM's `/metrics`: the max of the
/// per-model loads (see the module docs for why).
pub fn vllm_load(text: &str) -> Result<f64, LoadError> {
    Ok(vllm_model_loads(text)?.iter().map(ModelLoad::load).fold(0.0, f64::max))
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! fixture {
        ($name:literal) => {
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/load/", $name))
        };
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn current_generation_sums_engines_and_maxes_kv() {
        let text = fixture!("vllm_v1_two_engines.prom");
        let models = vllm_model_loads(text).unwrap();
        assert_eq!(models.len(), 1);
        let m = &models[0];
        assert_eq!(m.model, "t-lite");
        assert_eq!((m.running, m.waiting), (12.0, 4.0));
        assert_eq!(m.kv_cache_usage, Some(0.61));
        // waiting / total = 4 / 16 = 0.25 < 0.61.
        assert!(close(vllm_load(text).unwrap(), 0.61));
    }

    #[test]
    fn old_generation_gpu_cache_name() {
        let text = fixture!("vllm_v0_gpu_cache.prom");
        let models = vllm_model_loads(text).unwrap();
        assert_eq!(models[0].kv_cache_usage, Some(0.2));
        // The queue dominates here: 6 waiting of 8.
        assert!(close(vllm_load(text).unwrap(), 0.75));
    }

    #[test]
    fn current_name_wins_when_both_generations_are_shown() {
        let text = fixture!("vllm_both_generations.prom");
        let models = vllm_model_loads(text).unwrap();
        assert_eq!(models[0].kv_cache_usage, Some(0.33));
        assert!(close(vllm_load(text).unwrap(), 0.33));
    }

    #[test]
    fn several_models_take_the_busiest() {
        let text = fixture!("vllm_multi_model.prom");
        let models = vllm_model_loads(text).unwrap();
        let names: Vec<&str> = models.iter().map(|m| m.model.as_str()).collect();
        assert_eq!(names, ["t-lite", "qwen \"small\"", "idle"]);
        assert!(close(models[0].load(), 0.5));
        assert!(close(models[1].load(), 0.9));
        assert!(close(models[2].load(), 0.0));
        assert!(close(vllm_load(text).unwrap(), 0.9));
    }

    #[test]
    fn idle_server_and_nan_gauges() {
        let text = fixture!("vllm_idle_nan.prom");
        assert!(close(vllm_load(text).unwrap(), 0.0));
    }

    #[test]
    fn missing_metrics_and_garbage_are_errors() {
        let text = fixture!("not_vllm.prom");
        assert_eq!(vllm_load(text), Err(LoadError::NoMetrics));
        assert_eq!(vllm_load(""), Err(LoadError::NoMetrics));
        let err = vllm_load("<html>502 Bad Gateway</html>").unwrap_err();
        assert_eq!(err.metric_label(), "parse");
    }

    #[test]
    fn load_is_clamped() {
        let m = ModelLoad { model: String::new(), running: 0.0, waiting: 0.0, kv_cache_usage: Some(1.7) };
        assert_eq!(m.load(), 1.0);
    }
}
