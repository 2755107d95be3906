//! What discovery knows about one model, whatever listing it came from.
//!
//! Every listing reader (see [`super::listing`]) turns its provider's format
//! into [`ModelMeta`]; static `models:` from the provider config arrive as
//! [`StaticHint`]s and are merged in by [`apply_hints`]. Cascade building
//! ([`super::build`]) then only ever looks at `ModelMeta`.

use serde::{Deserialize, Serialize};

/// One model as discovery sees it. `None` always means "the listing did not
/// say"; SPEC §4 gives unknown values their meaning (unknown context fails
/// `min_context`, unknown price is paid with unknown cost).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMeta {
    /// The provider name from the config (`groq`), not the upstream's name.
    pub provider: String,
    /// The upstream model id, exactly as the listing spells it; may contain `/`.
    pub id: String,
    /// Context window in tokens.
    pub context: Option<u32>,
    /// USD per 1M input tokens.
    pub price_in_per_1m: Option<f64>,
    /// USD per 1M output tokens.
    pub price_out_per_1m: Option<f64>,
    /// Costs nothing (OpenRouter `:free`, or both prices known to be zero).
    pub free: bool,
    /// Operator-given quality score from a static hint; larger is better.
    /// Listings never carry it.
    pub quality: Option<f64>,
    /// Parameters in billions: from the listing where it says (Ollama's
    /// `parameter_size`), else read from the id by [`parse_param_count`].
    pub params_b: Option<f64>,
    /// False when the listing marks the model inactive (Groq `active:false`);
    /// inactive models are shown by `spillway discover` but never built in.
    pub active: bool,
    /// Input modalities (`text`, `image`, …) when the listing gives them.
    pub input_modalities: Vec<String>,
    /// Output modalities when the listing gives them.
    pub output_modalities: Vec<String>,
    /// Tool calling support when the listing says (OpenRouter
    /// `supported_parameters`).
    pub supports_tools: Option<bool>,
    /// Where this entry came from, for `spillway discover` and for debugging
    /// a surprising cascade.
    pub source: Source,
}

/// Where a [`ModelMeta`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Only from the provider's listing.
    Listed,
    /// From the listing, with a static hint applied on top.
    ListedWithHint,
    /// Only from the config's static `models:` (the provider lists nothing).
    Static,
}

impl ModelMeta {
    /// A listed model with nothing known but its id; the parameter count is
    /// read from the id.
    pub fn new(provider: &str, id: &str) -> Self {
        Self {
            provider: provider.to_owned(),
            id: id.to_owned(),
            context: None,
            price_in_per_1m: None,
            price_out_per_1m: None,
            free: false,
            quality: None,
            params_b: parse_param_count(id),
            active: true,
            input_modalities: Vec::new(),
            output_modalities: Vec::new(),
            supports_tools: None,
            source: Source::Listed,
        }
    }

    /// The model ref `provider/id` (SPEC §2).
    pub fn model_ref(&self) -> String {
        let mut s = String::with_capacity(self.provider.len() + 1 + self.id.len());
        s.push_str(&self.provider);
        s.push('/');
        s.push_str(&self.id);
        s
    }

    /// Whether `model_ref` names this model, without allocating.
    pub fn is_ref(&self, model_ref: &str) -> bool {
        model_ref
            .strip_prefix(self.provider.as_str())
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|id| id == self.id)
    }

    /// Both prices known: the larger of input and output per 1M, which is
    /// what `max_cost_per_1m` bounds ("input and output both at most").
    pub fn max_price_per_1m(&self) -> Option<f64> {
        Some(self.price_in_per_1m?.max(self.price_out_per_1m?))
    }
}

/// Reads a parameter count in billions from a model id: `70b` → 70,
/// `8x7b` → 56 (experts times size), `1.5b` → 1.5, `270m` → 0.27.
///
/// The id is split on `-`, `_`, `:`, `/` and `@`; a token counts only when it
/// is entirely a size, so `a22b` (the active-parameter half of
/// `qwen3-235b-a22b`), `4k` (a context) and `v0.3` are ignored. When several
/// tokens match, the largest wins: it is the total, which is what "larger
/// first" in `quality_first` means.
pub fn parse_param_count(id: &str) -> Option<f64> {
    id.split(['-', '_', ':', '/', '@']).filter_map(parse_size_token).max_by(f64::total_cmp)
}

/// One `[Nx]D[.D](b|m)` token, case-insensitive, in billions.
pub(crate) fn parse_size_token(token: &str) -> Option<f64> {
    let lower = token.trim().to_ascii_lowercase();
    let (number, scale) = if let Some(n) = lower.strip_suffix('b') {
        (n, 1.0)
    } else if let Some(n) = lower.strip_suffix('m') {
        (n, 0.001)
    } else {
        return None;
    };
    let (experts, size) = match number.split_once('x') {
        Some((e, s)) => (parse_plain_number(e)?, s),
        None => (1.0, number),
    };
    let value = experts * parse_plain_number(size)? * scale;
    // 0 parameters or a quadrillion are misreadings, not models.
    (value > 0.0 && value < 100_000.0).then_some(value)
}

/// Digits with at most one dot; rejects signs, exponents and empty strings
/// that `f64::from_str` would accept or that make no sense in an id.
fn parse_plain_number(s: &str) -> Option<f64> {
    let ok = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && s.bytes().filter(|&b| b == b'.').count() <= 1
        && s.bytes().next().is_some_and(|b| b.is_ascii_digit());
    if ok {
        s.parse().ok()
    } else {
        None
    }
}

/// A static model from the provider config (`models:` in SPEC §4).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StaticHint {
    /// Model id at the provider, as the listing would spell it.
    pub id: String,
    /// Context window in tokens.
    pub context: Option<u32>,
    /// USD per 1M input tokens.
    pub price_in_per_1m: Option<f64>,
    /// USD per 1M output tokens.
    pub price_out_per_1m: Option<f64>,
    /// Quality score for `quality_first`; larger is better.
    pub quality: Option<f64>,
}

/// The models of one provider after its static hints were applied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Merged {
    /// Listed models (with hints applied), or the static models alone.
    pub models: Vec<ModelMeta>,
    /// Hints that matched nothing, one line each.
    pub warnings: Vec<String>,
}

/// Merges a provider's static `models:` into what its listing returned.
///
/// - `listed: None` means the provider lists nothing (discovery disabled, or
///   a kind without a listing such as Yandex): every hint stands alone as a
///   [`Source::Static`] model.
/// - `listed: Some(models)`: a hint matching a listed id (exactly) *overrides*
///   each field it sets and leaves the others as listed. The operator wrote
///   the hint on purpose, usually because the listing is wrong or silent
///   (Ollama reports a context that is not `num_ctx`; OpenAI and GigaChat list
///   no prices). A hint whose id is not listed is dropped with a warning: the
///   listing is the truth about what exists, and discovery is there to notice
///   that a model went away.
///
/// A model whose prices end up both zero counts as free.
pub fn apply_hints(provider: &str, listed: Option<Vec<ModelMeta>>, hints: &[StaticHint]) -> Merged {
    let Some(mut models) = listed else {
        let models = hints
            .iter()
            .map(|h| {
                let mut m = ModelMeta::new(provider, &h.id);
                m.source = Source::Static;
                apply_one(&mut m, h);
                m
            })
            .collect();
        return Merged { models, warnings: Vec::new() };
    };
    let mut warnings = Vec::new();
    for hint in hints {
        match models.iter_mut().find(|m| m.id == hint.id) {
            Some(m) => {
                m.source = Source::ListedWithHint;
                apply_one(m, hint);
            }
            None => {
                warnings.push(format!("{provider}/{}: static model is not in the provider's listing; ignored", hint.id))
            }
        }
    }
    Merged { models, warnings }
}

/// Prices every model whose listing and hints give no price with the
/// provider's `price_per_1m` (`(input, output)` USD per 1M): a price the
/// listing or a hint gave, or a `:free` mark, wins. Both zero makes it free.
pub fn apply_provider_price(models: &mut [ModelMeta], price: (f64, f64)) {
    for m in models.iter_mut().filter(|m| !m.free) {
        let input = *m.price_in_per_1m.get_or_insert(price.0);
        let output = *m.price_out_per_1m.get_or_insert(price.1);
        m.free = input == 0.0 && output == 0.0;
    }
}

fn apply_one(m: &mut ModelMeta, h: &StaticHint) {
    if let Some(c) = h.context {
        m.context = Some(c);
    }
    if let Some(p) = h.price_in_per_1m {
        m.price_in_per_1m = Some(p);
    }
    if let Some(p) = h.price_out_per_1m {
        m.price_out_per_1m = Some(p);
    }
    if let Some(q) = h.quality {
        m.quality = Some(q);
    }
    if h.price_in_per_1m.is_some() || h.price_out_per_1m.is_some() {
        // A hinted price decides freeness: a paid price overrides `:free`.
        m.free = m.price_in_per_1m == Some(0.0) && m.price_out_per_1m == Some(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_counts_from_ids() {
        let cases: &[(&str, Option<f64>)] = &[
            ("llama-3.3-70b-versatile", Some(70.0)),
            ("qwen/qwen3-235b-a22b", Some(235.0)),
            ("mixtral-8x7b-32768", Some(56.0)),
            ("deepseek-r1-distill-qwen-1.5b", Some(1.5)),
            ("Llama-3.3-70B-Instruct", Some(70.0)),
            ("qwen2.5:7b", Some(7.0)),
            ("google/gemma-3-270m", Some(0.27)),
            ("meta-llama/llama-4-scout-17b-16e-instruct", Some(17.0)),
            ("openai/gpt-oss-120b:free", Some(120.0)),
            ("phi-3-mini-4k-instruct", None),
            ("mistral-7b-instruct-v0.3", Some(7.0)),
            ("whisper-large-v3", None),
            ("GigaChat-Pro", None),
            ("qwen3-30b-a3b", Some(30.0)),
            ("-b", None),
            ("x7b", None),
            ("0b", None),
        ];
        for (id, want) in cases {
            assert_eq!(parse_param_count(id), *want, "{id}");
        }
    }

    #[test]
    fn model_ref_and_is_ref() {
        let m = ModelMeta::new("openrouter", "google/gemma-3-27b-it:free");
        assert_eq!(m.model_ref(), "openrouter/google/gemma-3-27b-it:free");
        assert!(m.is_ref("openrouter/google/gemma-3-27b-it:free"));
        assert!(!m.is_ref("openrouter/google/gemma-3-27b-it"));
        assert!(!m.is_ref("openroutergoogle/gemma-3-27b-it:free"));
    }

    #[test]
    fn hints_override_listed_fields_and_drop_unlisted() {
        let mut listed = ModelMeta::new("local", "qwen2.5:7b");
        listed.context = Some(131_072);
        let hints = [
            StaticHint { id: "qwen2.5:7b".into(), context: Some(8192), quality: Some(3.0), ..Default::default() },
            StaticHint { id: "gone".into(), ..Default::default() },
        ];
        let merged = apply_hints("local", Some(vec![listed]), &hints);
        assert_eq!(merged.models.len(), 1);
        let m = &merged.models[0];
        assert_eq!((m.context, m.quality, m.source), (Some(8192), Some(3.0), Source::ListedWithHint));
        assert_eq!(m.price_in_per_1m, None, "unset hint fields keep the listed value");
        assert_eq!(merged.warnings.len(), 1);
        assert!(merged.warnings[0].contains("local/gone"));
    }

    #[test]
    fn hints_stand_alone_without_a_listing() {
        let hints = [
            StaticHint {
                id: "GigaChat-Pro".into(),
                context: Some(32_768),
                price_in_per_1m: Some(1.5),
                price_out_per_1m: Some(1.5),
                quality: None,
            },
            StaticHint {
                id: "t-lite".into(),
                price_in_per_1m: Some(0.0),
                price_out_per_1m: Some(0.0),
                ..Default::default()
            },
        ];
        let merged = apply_hints("gigachat", None, &hints);
        assert!(merged.warnings.is_empty());
        assert_eq!(merged.models[0].model_ref(), "gigachat/GigaChat-Pro");
        assert_eq!(merged.models[0].source, Source::Static);
        assert!(!merged.models[0].free);
        assert!(merged.models[1].free, "zero prices mean free");
    }

    #[test]
    fn the_provider_price_fills_only_what_nothing_else_priced() {
        let unpriced = ModelMeta::new("groq", "llama-3.3-70b-versatile");
        let mut listed = ModelMeta::new("groq", "listed");
        (listed.price_in_per_1m, listed.price_out_per_1m) = (Some(0.5), Some(0.8));
        let mut half = ModelMeta::new("groq", "half");
        half.price_in_per_1m = Some(0.0);
        let hint = StaticHint {
            id: "hinted".into(),
            price_in_per_1m: Some(2.0),
            price_out_per_1m: Some(2.0),
            ..Default::default()
        };
        let hinted = ModelMeta::new("groq", "hinted");
        let mut merged = apply_hints("groq", Some(vec![unpriced, listed, half, hinted]), &[hint]);
        apply_provider_price(&mut merged.models, (0.0, 0.0));
        let m = &merged.models;
        assert!(m[0].free && m[0].price_in_per_1m == Some(0.0), "{:?}", m[0]);
        assert_eq!((m[1].price_in_per_1m, m[1].free), (Some(0.5), false), "listed prices win");
        assert!(m[2].free, "the missing half is filled");
        assert_eq!((m[3].price_in_per_1m, m[3].free), (Some(2.0), false), "a static hint wins");
    }

    #[test]
    fn paid_hint_overrides_free_listing() {
        let mut listed = ModelMeta::new("or", "x:free");
        listed.free = true;
        listed.price_in_per_1m = Some(0.0);
        listed.price_out_per_1m = Some(0.0);
        let hint = StaticHint { id: "x:free".into(), price_in_per_1m: Some(0.1), ..Default::default() };
        let merged = apply_hints("or", Some(vec![listed]), &[hint]);
        assert!(!merged.models[0].free);
    }
}
