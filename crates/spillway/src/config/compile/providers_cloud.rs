//! The checks of the cloud kinds' own keys (`azure`, `gemini`, `bedrock`), kept apart
//! from `providers.rs` so each kind's rules read in one place: what a kind
//! cannot work without, each error at its YAML path; and the price a kind
//! has when the config gives none (Gemini's free tier).

use super::*;

/// `api-version` values that are not dated (round3.md §1.1).
const AZURE_UNDATED: [&str; 3] = ["v1", "preview", "latest"];

/// Checks the keys `kind` needs beyond the common ones.
pub(super) fn check_cloud_kind(cx: &mut Ctx, path: &str, kind: ProviderKind, p: &RawProvider) {
    match kind {
        ProviderKind::Azure => check_azure(cx, path, p),
        ProviderKind::Gemini if p.api_key.is_none() => {
            cx.err(format!("{path}.api_key"), "required for kind `gemini`: a Gemini API key (sent as `x-goog-api-key`)")
        }
        ProviderKind::Bedrock => check_bedrock(cx, path, p),
        _ => {}
    }
    if kind != ProviderKind::Bedrock {
        for (key, set) in [
            ("region", p.region.is_some()),
            ("aws_access_key_id", p.aws_access_key_id.is_some()),
            ("aws_secret_access_key", p.aws_secret_access_key.is_some()),
            ("aws_session_token", p.aws_session_token.is_some()),
        ] {
            if set {
                cx.err(format!("{path}.{key}"), format!("only kind `bedrock` takes `{key}`"));
            }
        }
    }
    if p.free_tier.is_some() && kind != ProviderKind::Gemini {
        cx.err(format!("{path}.free_tier"), "only kind `gemini` takes `free_tier`");
    }
}

/// The provider-wide price of a kind whose `price_per_1m` is not set: a
/// Gemini key on the free tier (the default) pays nothing, so its models
/// are free — listed or static, `free_only` cascades take them. Its limits
/// are per project and per model (requests per minute and per day): a
/// spent day is a quota failure until midnight Pacific.
pub(super) fn default_price(kind: ProviderKind, p: &RawProvider) -> Option<Price> {
    (kind == ProviderKind::Gemini && p.free_tier.unwrap_or(true)).then_some(Price { input: 0.0, output: 0.0 })
}

fn check_azure(cx: &mut Ctx, path: &str, p: &RawProvider) {
    if p.base_url.is_none() {
        cx.err(
            format!("{path}.base_url"),
            "required for kind `azure`: the resource's endpoint, such as https://NAME.openai.azure.com",
        );
    }
    match p.api_version.as_deref() {
        None => cx.err(
            format!("{path}.api_version"),
            "required for kind `azure`: a dated version such as \"2024-10-21\", or v1 for the v1 API",
        ),
        Some(v) if !is_azure_version(v) => cx.err(
            format!("{path}.api_version"),
            format!("`{v}` is not an api-version: expected a date such as 2024-10-21 (maybe with -preview), v1, preview or latest"),
        ),
        Some(_) => {}
    }
    let bearer = p.headers.iter().flatten().any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    if p.api_key.is_none() && !bearer {
        cx.err(
            format!("{path}.api_key"),
            "kind `azure` needs `api_key` (sent as `api-key`), or an Entra ID token in `headers: { authorization: \"Bearer …\" }`",
        );
    }
    let discovers = p.discovery.as_ref().is_some_and(|d| d.enabled.unwrap_or(true));
    if p.models.as_ref().is_none_or(Vec::is_empty) && !discovers {
        cx.err(
            format!("{path}.models"),
            "kind `azure` needs its deployments: list them under `models` (a model id is a deployment name) or turn on `discovery`",
        );
    }
}

fn check_bedrock(cx: &mut Ctx, path: &str, p: &RawProvider) {
    match p.region.as_deref() {
        None => cx.err(format!("{path}.region"), "required for kind `bedrock`: the AWS region, such as us-east-1"),
        Some(r) if r.is_empty() || !r.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') => {
            cx.err(format!("{path}.region"), format!("`{r}` is not an AWS region (such as us-east-1)"))
        }
        Some(_) => {}
    }
    if p.aws_access_key_id.is_some() != p.aws_secret_access_key.is_some() {
        let missing = if p.aws_access_key_id.is_some() { "aws_secret_access_key" } else { "aws_access_key_id" };
        cx.err(format!("{path}.{missing}"), "the access key id and its secret are given together");
    }
    if p.aws_session_token.is_some() && p.aws_access_key_id.is_none() {
        cx.err(
            format!("{path}.aws_session_token"),
            "a session token goes with aws_access_key_id and aws_secret_access_key",
        );
    }
    if p.models.as_ref().is_none_or(Vec::is_empty) && !p.allow_any_model.unwrap_or(false) {
        cx.err(
            format!("{path}.models"),
            "kind `bedrock` needs its models (model ids or inference profiles, such as anthropic.claude-3-5-sonnet-20240620-v1:0): it has no listing",
        );
    }
}

/// A Bedrock provider's region and configured keys.
pub(super) fn aws_config(kind: ProviderKind, p: &RawProvider) -> Option<AwsConfig> {
    (kind == ProviderKind::Bedrock).then(|| AwsConfig {
        region: p.region.clone().unwrap_or_default(),
        access_key_id: p.aws_access_key_id.clone().map(Secret::new),
        secret_access_key: p.aws_secret_access_key.clone().map(Secret::new),
        session_token: p.aws_session_token.clone().map(Secret::new),
    })
}

/// `2024-10-21`, `2025-04-01-preview`, or one of [`AZURE_UNDATED`].
fn is_azure_version(v: &str) -> bool {
    if AZURE_UNDATED.contains(&v) {
        return true;
    }
    let (date, rest) = v.split_at(v.len().min(10));
    let b = date.as_bytes();
    let dated = b.len() == 10
        && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() });
    dated && (rest.is_empty() || rest == "-preview")
}

#[cfg(test)]
mod tests {
    use crate::config::load_str;

    fn errors(yaml: &str) -> Vec<String> {
        match load_str(yaml, None, &|_| None) {
            Ok(_) => Vec::new(),
            Err(e) => e.0.into_iter().map(|e| format!("{}: {}", e.path, e.message)).collect(),
        }
    }

    fn assert_errors(yaml: &str, expected: &[&str]) {
        let errs = errors(yaml);
        for e in expected {
            assert!(errs.iter().any(|x| x.starts_with(e)), "missing `{e}` in {errs:#?}");
        }
    }

    #[test]
    fn azure_needs_an_endpoint_a_version_a_key_and_deployments() {
        assert_errors(
            "
providers:
  az: { kind: azure }
  bad: { kind: azure, base_url: 'https://r.openai.azure.com', api_key: k, api_version: '21-10-2024', models: [ { id: d } ] }
cascades:
  chat: { models: [bad/d] }
",
            &[
                "providers.az.base_url: required for kind `azure`",
                "providers.az.api_version: required for kind `azure`",
                "providers.az.api_key: kind `azure` needs `api_key`",
                "providers.az.models: kind `azure` needs its deployments",
                "providers.bad.api_version: `21-10-2024` is not an api-version",
            ],
        );
        let ok = "
providers:
  az:
    kind: azure
    base_url: https://r.openai.azure.com
    api_version: 2025-04-01-preview
    headers: { Authorization: 'Bearer entra-token' }
    models: [ { id: gpt-4o-eu } ]
  v1: { kind: azure, base_url: 'https://r.openai.azure.com', api_key: k, api_version: v1, discovery: {} }
cascades:
  chat: { models: [az/gpt-4o-eu] }
";
        assert_eq!(errors(ok), Vec::<String>::new());
        let config = load_str(ok, None, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.providers["v1"].discovery_format.as_deref(), Some("azure"));
        assert!(config.providers["az"].native_json);
    }

    #[test]
    fn gemini_needs_a_key_and_its_free_tier_is_priced_free() {
        assert_errors(
            "
providers:
  g: { kind: gemini, models: [ { id: gemini-2.5-flash } ] }
  o: { kind: openai, base_url: 'http://127.0.0.1:9/v1', free_tier: true, models: [ { id: m } ] }
cascades:
  chat: { models: [g/gemini-2.5-flash] }
",
            &["providers.g.api_key: required for kind `gemini`", "providers.o.free_tier: only kind `gemini`"],
        );
        let yaml = "
providers:
  free: { kind: gemini, api_key: k, discovery: {} }
  paid: { kind: gemini, api_key: k, free_tier: false, models: [ { id: gemini-2.5-pro } ] }
  priced: { kind: gemini, api_key: k, price_per_1m: { input: 0.3, output: 2.5 }, models: [ { id: gemini-2.5-flash } ] }
cascades:
  chat: { models: [paid/gemini-2.5-pro] }
";
        let config = load_str(yaml, None, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        let price = |name: &str| config.providers[name].price.map(|p| (p.input, p.output));
        assert_eq!(price("free"), Some((0.0, 0.0)));
        assert_eq!(price("paid"), None);
        assert_eq!(price("priced"), Some((0.3, 2.5)));
        assert_eq!(config.providers["free"].discovery_format.as_deref(), Some("gemini"));
    }

    #[test]
    fn bedrock_needs_a_region_and_its_models_and_keys_come_in_pairs() {
        assert_errors(
            "
providers:
  b: { kind: bedrock, discovery: {} }
  c: { kind: bedrock, region: 'EU West', aws_access_key_id: AKIA, aws_session_token: t, models: [ { id: m } ] }
  o: { kind: openai, base_url: 'http://127.0.0.1:9/v1', region: us-east-1, models: [ { id: m } ] }
cascades:
  chat: { models: [c/m] }
",
            &[
                "providers.b.region: required for kind `bedrock`",
                "providers.b.models: kind `bedrock` needs its models",
                "providers.b.discovery: kind `bedrock` has no model listing",
                "providers.c.region: `EU West` is not an AWS region",
                "providers.c.aws_secret_access_key: the access key id and its secret are given together",
                "providers.o.region: only kind `bedrock`",
            ],
        );
        let config = load_str(
            "
providers:
  b: { kind: bedrock, region: eu-central-1, aws_access_key_id: AKIA, aws_secret_access_key: s, models: [ { id: 'anthropic.claude-3-5-sonnet-20240620-v1:0' } ] }
cascades:
  chat: { models: ['b/anthropic.claude-3-5-sonnet-20240620-v1:0'] }
",
            None,
            &|_| None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let aws = config.providers["b"].aws.as_ref().unwrap();
        assert_eq!(aws.region, "eu-central-1");
        assert_eq!(aws.access_key_id.as_ref().map(|s| s.expose()), Some("AKIA"));
    }
}
