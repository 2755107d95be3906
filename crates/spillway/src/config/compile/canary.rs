//! `canaries:`: a known prompt, where it goes, what its answer must satisfy.

use super::*;

/// Compiles every canary; `cascades` and `providers` are compiled already.
pub(super) fn compile_canaries(
    cx: &mut Ctx,
    raw: Vec<RawCanary>,
    cascades: &IndexMap<String, CascadeConfig>,
    providers: &IndexMap<String, ProviderConfig>,
) -> Vec<CanaryConfig> {
    let mut out = Vec::new();
    for (i, c) in raw.into_iter().enumerate() {
        let path = format!("canaries[{i}]");
        let target = match (c.cascade, c.model) {
            (Some(name), None) => {
                if !cascades.contains_key(&name) {
                    cx.err(format!("{path}.cascade"), format!("no cascade `{name}`"));
                }
                CanaryTarget::Cascade(name)
            }
            (None, Some(m)) => match ModelRef::parse(&m).filter(|r| providers.contains_key(&r.provider)) {
                Some(r) => CanaryTarget::Model(r),
                None => {
                    cx.err(format!("{path}.model"), format!("`{m}` is not a model ref of a configured provider"));
                    continue;
                }
            },
            _ => {
                cx.err(&path, "name either a `cascade` or a `model`");
                continue;
            }
        };
        if c.prompt.trim().is_empty() {
            cx.err(format!("{path}.prompt"), "must not be empty");
        }
        let k = c.check;
        if let Some(schema) = &k.json_schema {
            if let Err(e) = jsonschema::validator_for(schema) {
                cx.err(format!("{path}.check.json_schema"), format!("not a valid JSON Schema: {e}"));
            }
        }
        let regex = k.regex.as_deref().and_then(|r| match regex::Regex::new(r) {
            Ok(re) => Some(re),
            Err(e) => {
                cx.err(format!("{path}.check.regex"), format!("not a valid regular expression: {e}"));
                None
            }
        });
        let script = k.script.as_deref().and_then(|s| {
            let parsed = crate::quality::text::Script::parse(s);
            if parsed.is_none() {
                cx.err(
                    format!("{path}.check.script"),
                    format!("unknown script `{s}`: expected latin, cyrillic or cjk"),
                );
            }
            parsed
        });
        let max_latency =
            k.max_latency.as_ref().map(|m| cx.duration(&format!("{path}.check.max_latency"), Some(m), Duration::ZERO));
        let interval = cx.duration(&format!("{path}.interval"), c.interval.as_ref(), Duration::from_secs(300));
        if interval < Duration::from_secs(1) {
            cx.err(format!("{path}.interval"), "must be at least 1s");
        }
        out.push(CanaryConfig {
            name: c.name.unwrap_or_else(|| format!("canary-{i}")),
            target,
            prompt: c.prompt,
            check: CanaryCheck {
                json_schema: k.json_schema,
                regex,
                contains: k.contains.unwrap_or_default(),
                not_contains: k.not_contains.unwrap_or_default(),
                script,
                max_latency,
            },
            interval,
        });
    }
    out
}
