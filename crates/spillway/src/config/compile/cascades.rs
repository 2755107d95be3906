//! `cascades:`: model refs, discovery filters, embedding cascades.

use super::*;

pub(super) fn model_ref(
    cx: &mut Ctx,
    path: &str,
    text: &str,
    providers: &IndexMap<String, ProviderConfig>,
) -> Option<ModelRef> {
    let Some(r) = ModelRef::parse(text) else {
        cx.err(path, format!("expected a model ref `provider/model-id`, got `{text}`"));
        return None;
    };
    match providers.get(&r.provider) {
        // Its error is reported where it is declared.
        None if cx.failed_providers.contains(&r.provider) => None,
        None => {
            cx.err(path, format!("unknown provider `{}` in `{text}`", r.provider));
            None
        }
        // A mock answers for its `models:` and the ids of its `listing:`.
        Some(p)
            if p.kind == ProviderKind::Mock
                && !p.models.iter().any(|m| m.id == r.model)
                && !p.listing.iter().flatten().any(|m| m.id == r.model) =>
        {
            cx.err(path, format!("mock provider `{}` has no model `{}`", r.provider, r.model));
            None
        }
        Some(_) => Some(r),
    }
}

pub(super) fn compile_cascade(
    cx: &mut Ctx,
    name: &str,
    c: RawCascade,
    providers: &IndexMap<String, ProviderConfig>,
    breaker: &BreakerConfig,
) -> Option<CascadeConfig> {
    let path = format!("cascades.{name}");
    if name == "auto" || name.contains('/') {
        cx.err(&path, "a cascade cannot be named `auto` or contain `/` (those select other things)");
    }
    let kind = match c.kind.as_deref() {
        None | Some("chat") => CascadeKind::Chat,
        Some("embedding") => {
            if c.models.is_none() {
                cx.err(
                    format!("{path}.models"),
                    "an embedding cascade needs `models` (listings do not say which models embed)",
                );
            }
            for (key, present) in [("handoff", c.handoff == Some(true)), ("hedge_after", c.hedge_after.is_some())] {
                if present {
                    cx.err(format!("{path}.{key}"), "not available for an embedding cascade");
                }
            }
            CascadeKind::Embedding
        }
        Some(other) => {
            cx.err(format!("{path}.kind"), format!("unknown kind `{other}`: expected chat or embedding"));
            CascadeKind::Chat
        }
    };
    let discovery_keys = [
        ("strategy", c.strategy.is_some()),
        ("providers", c.providers.is_some()),
        ("preferred", c.preferred.is_some()),
        ("filters", c.filters.is_some()),
        ("min_other_providers", c.min_other_providers.is_some()),
        ("size", c.size.is_some()),
        ("preferred_order", c.preferred_order.is_some()),
    ];
    let source = if let Some(models) = c.models {
        for (key, present) in discovery_keys {
            if present {
                cx.err(
                    format!("{path}.{key}"),
                    "a cascade has either `models` (a fixed chain) or discovery settings, not both",
                );
            }
        }
        if models.is_empty() {
            cx.err(format!("{path}.models"), "a fixed chain needs at least one model");
        }
        let refs = models
            .iter()
            .enumerate()
            .filter_map(|(i, m)| model_ref(cx, &format!("{path}.models[{i}]"), m, providers))
            .collect();
        CascadeSource::Fixed(refs)
    } else {
        let strategy = match c.strategy.as_deref() {
            None | Some("speed_first") => Strategy::SpeedFirst,
            Some("quality_first") => Strategy::QualityFirst,
            Some("cheapest_first") => Strategy::CheapestFirst,
            Some(other) => {
                cx.err(
                    format!("{path}.strategy"),
                    format!("unknown strategy `{other}`: expected speed_first, quality_first or cheapest_first"),
                );
                Strategy::SpeedFirst
            }
        };
        let preferred: Vec<ModelRef> = c
            .preferred
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter_map(|(i, m)| model_ref(cx, &format!("{path}.preferred[{i}]"), m, providers))
            .collect();
        let source_providers = c.providers.unwrap_or_default();
        for (i, p) in source_providers.iter().enumerate() {
            if !providers.contains_key(p) && !cx.failed_providers.contains(p) {
                cx.err(format!("{path}.providers[{i}]"), format!("unknown provider `{p}`"));
            }
        }
        if source_providers.is_empty() && preferred.is_empty() {
            cx.err(&path, "a cascade needs `models`, or discovery settings with `providers` or `preferred`");
        }
        let f = c.filters.unwrap_or_default();
        if let Some(m) = f.max_cost_per_1m {
            if m < 0.0 || m.is_nan() {
                cx.err(format!("{path}.filters.max_cost_per_1m"), "cannot be negative");
            }
        }
        let preferred_order = match c.preferred_order.as_deref() {
            None | Some("price_class") => PreferredOrder::PriceClass,
            Some("strict") => PreferredOrder::Strict,
            Some(other) => {
                cx.err(
                    format!("{path}.preferred_order"),
                    format!("unknown order `{other}`: expected price_class or strict"),
                );
                PreferredOrder::PriceClass
            }
        };
        let size = c.size.unwrap_or(10);
        if size == 0 {
            cx.err(format!("{path}.size"), "must be greater than 0");
        }
        CascadeSource::Discovered(DiscoverySpec {
            strategy,
            providers: source_providers,
            preferred,
            filters: Filters {
                min_context: f.min_context,
                max_cost_per_1m: f.max_cost_per_1m,
                free_only: f.free_only.unwrap_or(false),
                exclude_patterns: f.exclude_patterns.unwrap_or_default(),
            },
            min_other_providers: c.min_other_providers.unwrap_or(0),
            size,
            preferred_order,
        })
    };
    let last_resort = c.last_resort.as_ref().and_then(|m| model_ref(cx, &format!("{path}.last_resort"), m, providers));
    let hedge_after =
        c.hedge_after.as_ref().map(|h| cx.duration(&format!("{path}.hedge_after"), Some(h), Duration::from_secs(2)));
    let daily_budget_usd = c.budget.map(|b| {
        if b.daily_usd < 0.0 || b.daily_usd.is_nan() {
            cx.err(format!("{path}.budget.daily_usd"), "cannot be negative");
        }
        b.daily_usd
    });
    let mut breakers = Vec::new();
    for (key, b) in c.breakers.unwrap_or_default() {
        let at = format!("{path}.breakers.{key}");
        let Some(r) = model_ref(cx, &at, &key, providers) else { continue };
        let in_chain = match &source {
            CascadeSource::Fixed(models) => models.contains(&r) || last_resort.as_ref() == Some(&r),
            // A discovered cascade's models are known only once listed.
            CascadeSource::Discovered(_) => true,
        };
        if !in_chain {
            cx.err(&at, format!("`{r}` is not a model of this cascade"));
        }
        let base = providers.get(&r.provider).and_then(|p| p.breaker).unwrap_or(*breaker);
        breakers.push((r, super::health::compile_breaker(cx, &at, &b, &base)));
    }
    Some(CascadeConfig {
        name: name.to_string(),
        kind,
        source,
        last_resort,
        handoff: c.handoff.unwrap_or(false),
        hedge_after,
        daily_budget_usd,
        continue_streams: c.continue_streams.unwrap_or(true),
        breakers,
        quality: c.quality.map(|q| super::quality::compile_quality(cx, &format!("{path}.quality"), q)),
    })
}

/// An embedding cascade's models: each of a kind with an embeddings call,
/// and all of one dimension where the config names it — a fallback to a
/// model of another dimension would hand the client vectors it cannot
/// compare with the ones it stored.
pub(super) fn check_embedding_cascade(cx: &mut Ctx, c: &CascadeConfig, providers: &IndexMap<String, ProviderConfig>) {
    let path = format!("cascades.{}", c.name);
    let CascadeSource::Fixed(models) = &c.source else { return };
    let mut refs: Vec<(String, &ModelRef)> =
        models.iter().enumerate().map(|(i, m)| (format!("{path}.models[{i}]"), m)).collect();
    if let Some(last) = &c.last_resort {
        refs.push((format!("{path}.last_resort"), last));
    }
    let mut first: Option<(u32, &ModelRef)> = None;
    for (at, r) in refs {
        let Some(p) = providers.get(&r.provider) else { continue };
        let dims = p.models.iter().find(|m| m.id == r.model).and_then(|m| m.dimensions);
        match p.kind {
            ProviderKind::OpenAi => {}
            ProviderKind::Mock if dims.is_none() => {
                cx.err(&at, format!("mock model `{r}` needs `dimensions` to serve embeddings"));
            }
            ProviderKind::Mock => {}
            other => {
                cx.err(
                    &at,
                    format!("kind `{}` has no embeddings API in Spillway (use openai or mock)", other.as_str()),
                );
            }
        }
        match (dims, first) {
            (Some(d), Some((f, fr))) if d != f => cx.err(
                &at,
                format!("`{r}` has dimension {d} but `{fr}` has {f}: an embedding cascade falls back only across models of one dimension"),
            ),
            (Some(d), None) => first = Some((d, r)),
            _ => {}
        }
    }
}
