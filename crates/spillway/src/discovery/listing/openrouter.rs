//! OpenRouter's rich `/models` (providers.md §3): context, per-token price
//! strings, modalities and supported parameters.

use serde_json::Value;

use super::read::{self, PriceRead};
use super::Entry;
use crate::discovery::model::ModelMeta;

pub(super) fn model(provider: &str, entry: &Value, warnings: &mut Vec<String>) -> Entry {
    let Some(id) = read::id(entry, &["id"], provider, warnings) else {
        return Entry::Skipped;
    };
    let mut m = ModelMeta::new(provider, &id);
    let model_ref = m.model_ref();

    // `top_provider.context_length` is the fallback some entries need when
    // the top-level one is null.
    let top_context = entry.get("top_provider").and_then(|t| t.get("context_length"));
    m.context = match entry.get("context_length").filter(|v| !v.is_null()) {
        Some(v) => read::context(Some(v), &model_ref, "context_length", warnings),
        None => read::context(top_context, &model_ref, "top_provider.context_length", warnings),
    };

    let pricing = entry.get("pricing").filter(|p| p.is_object());
    let price_in = price(pricing, "prompt", &model_ref, warnings);
    let price_out = price(pricing, "completion", &model_ref, warnings);
    // The `:free` suffix is OpenRouter's own promise; it wins over whatever
    // the pricing object says (sometimes a sentinel or nothing at all).
    m.free = id.ends_with(":free") || (price_in == Some(0.0) && price_out == Some(0.0));
    if m.free {
        m.price_in_per_1m = Some(0.0);
        m.price_out_per_1m = Some(0.0);
    } else {
        m.price_in_per_1m = price_in;
        m.price_out_per_1m = price_out;
    }

    let arch = entry.get("architecture");
    m.input_modalities = read::strings(arch.and_then(|a| a.get("input_modalities")));
    m.output_modalities = read::strings(arch.and_then(|a| a.get("output_modalities")));
    if m.input_modalities.is_empty() && m.output_modalities.is_empty() {
        // Older entries only have `"modality": "text+image->text"`.
        if let Some((inputs, outputs)) =
            arch.and_then(|a| a.get("modality")).and_then(Value::as_str).and_then(|s| s.split_once("->"))
        {
            m.input_modalities = split_modalities(inputs);
            m.output_modalities = split_modalities(outputs);
        }
    }

    m.supports_tools = entry
        .get("supported_parameters")
        .and_then(Value::as_array)
        .map(|params| params.iter().any(|p| p.as_str() == Some("tools")));
    Entry::Model(m)
}

/// One of `pricing.prompt`/`pricing.completion` in USD per 1M.
///
/// The reference says missing pricing keys default to 0; that is right for
/// the auxiliary keys (`image`, `request`, …) we do not read, but a missing
/// `prompt` or `completion` must not make a model look free, so it is unknown.
fn price(pricing: Option<&Value>, key: &str, model_ref: &str, warnings: &mut Vec<String>) -> Option<f64> {
    let pricing = pricing?;
    match read::price_per_token(pricing.get(key), model_ref, &format!("pricing.{key}"), warnings) {
        PriceRead::Known(p) => Some(p),
        PriceRead::Unknown | PriceRead::Missing => None,
    }
}

fn split_modalities(s: &str) -> Vec<String> {
    s.split('+').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}
