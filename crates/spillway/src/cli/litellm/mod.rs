//! `spillway import-litellm CONFIG [--out FILE]`: a LiteLLM proxy config
//! turned into an equivalent Spillway config — `model_list` groups into
//! cascades (deployments in order, then the groups their `fallbacks`
//! name), providers by prefix, `api_base` and key (`os.environ/X` becomes
//! `${X}`), `master_key` into `server.api_keys`, Redis, retries, timeouts
//! and cooldowns into `state` and `health` — and every setting it could
//! not carry over listed (on stderr, and as comments at the top of the
//! file). `docs/from-litellm.md` maps the two by hand.

pub mod convert;
pub mod emit;

use std::path::Path;
use std::process::ExitCode;

/// Runs the command.
pub fn run(source: &Path, out: Option<&Path>) -> ExitCode {
    let text = match std::fs::read_to_string(source) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read {}: {e}", source.display());
            return ExitCode::from(1);
        }
    };
    let plan = match convert::read(&text) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{}: {e}", source.display());
            return ExitCode::from(1);
        }
    };
    if plan.cascades.is_empty() {
        eprintln!("{}: no model group could be carried over:", source.display());
        for line in &plan.left_out {
            eprintln!("  - {line}");
        }
        return ExitCode::from(1);
    }
    let yaml = emit::yaml(&plan, &source.display().to_string());
    match out {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &yaml) {
                eprintln!("cannot write {}: {e}", path.display());
                return ExitCode::from(1);
            }
            eprintln!(
                "Wrote {} ({} provider(s), {} cascade(s)); check it with `spillway check --config {}`.",
                path.display(),
                plan.providers.len(),
                plan.cascades.len(),
                path.display()
            );
        }
        None => print!("{yaml}"),
    }
    if !plan.left_out.is_empty() {
        eprintln!("Not carried over ({}):", plan.left_out.len());
        for line in &plan.left_out {
            eprintln!("  - {line}");
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    const LITELLM: &str = r#"
model_list:
  - model_name: gpt-4o
    litellm_params:
      model: azure/gpt-4o-eu
      api_base: https://my-eu.openai.azure.com/
      api_key: os.environ/AZURE_API_KEY_EU
      rpm: 6
  - model_name: gpt-4o
    litellm_params: { model: openai/gpt-4o, api_key: os.environ/OPENAI_API_KEY }
    model_info: { input_cost_per_token: 0.0000025, output_cost_per_token: 0.00001, max_input_tokens: 128000 }
  - model_name: local
    litellm_params: {model: openai/my-model, api_base: "http://vllm:8000/v1", api_key: none}
  - model_name: fast
    litellm_params: { model: groq/llama-3.1-8b-instant, api_key: os.environ/GROQ_API_KEY }
  - model_name: embeddings
    litellm_params: { model: openai/text-embedding-3-small, api_key: os.environ/OPENAI_API_KEY }
    model_info: { mode: embedding }
router_settings:
  routing_strategy: simple-shuffle
  num_retries: 2
  timeout: 30
  fallbacks: [{"gpt-4o": ["local"]}, {"fast": ["nope"]}]
  allowed_fails: 3
  cooldown_time: 30
litellm_settings: {drop_params: true, request_timeout: 600, max_end_user_budget: 0.5}
general_settings: {master_key: sk-1234, database_url: os.environ/DATABASE_URL}
"#;

    #[test]
    fn groups_become_cascades_and_the_rest_is_listed() {
        let plan = convert::read(LITELLM).unwrap();
        let names: Vec<&str> = plan.providers.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["openai", "vllm", "groq"], "named by the host of a custom `api_base`");
        let gpt = &plan.cascades[0];
        assert_eq!(
            (gpt.name.as_str(), gpt.models.clone()),
            ("gpt-4o", vec!["openai/gpt-4o".into(), "vllm/my-model".into()])
        );
        assert!(plan.cascades.iter().any(|c| c.name == "embeddings" && c.embedding));
        assert_eq!(plan.providers[0].api_key.as_deref(), Some("${OPENAI_API_KEY}"));
        assert_eq!(plan.providers[0].models[0], ("gpt-4o".into(), Some(128_000), Some((2.5, 10.0))));
        assert_eq!(plan.api_keys, ["sk-1234"]);
        assert_eq!((plan.retries, plan.total_timeout_s, plan.breaker), (Some(2), Some(30.0), (Some(3), Some(30.0))));
        let left = plan.left_out.join("\n");
        for needle in [
            "azure",
            "rpm",
            "routing_strategy",
            "`fast` → `nope`",
            "database_url: LiteLLM's virtual keys live in its database: make each a `keys:` entry",
            "max_end_user_budget: per end user limits are a key's `per_user",
            "drop_params",
        ] {
            assert!(left.contains(needle), "{needle} in:\n{left}");
        }
        let yaml = emit::yaml(&plan, "litellm.yaml");
        let lookup = |name: &str| Some(format!("test-{name}"));
        let config = crate::config::load_str(&yaml, None, &lookup).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        match &config.cascades["gpt-4o"].source {
            crate::config::CascadeSource::Fixed(models) => assert_eq!(models.len(), 2),
            other => panic!("{other:?}"),
        }
        assert_eq!(config.providers["groq"].base_url.as_deref(), Some("https://api.groq.com/openai/v1"));
    }
}
