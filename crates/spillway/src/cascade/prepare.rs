//! Per-attempt request rewriting: what one model of the cascade receives.
//!
//! The client's body is adapted to the target — copied first, and only when
//! something rewrites it (most attempts send it as it came):
//! its provider's load profile (SPEC §9) and, later, its prompt variant
//! (SPEC §7). Everything here reads in-memory state only — no I/O on the
//! request path: the load profile is one atomic load on state a background
//! monitor publishes (see [`crate::load`]).

use super::context::Context;
use super::plan::Target;
use crate::api::request::Outgoing;
use crate::api::ChatRequest;
use crate::load::LoadRegistry;
use crate::providers::Reply;

/// The body one attempt sends, and what was applied to it.
#[derive(Debug)]
pub struct Prepared<'a> {
    /// The OpenAI request body for this attempt: the client's own unless
    /// something rewrote it.
    pub body: Outgoing<'a>,
    /// The load profile applied, when the provider's load is monitored.
    pub load_profile: Option<String>,
    /// The prompt variant applied, if a `prompts:` rule matched.
    pub prompt: Option<crate::prompts::Applied>,
}

/// Builds the body of one attempt: the client's body with the provider's
/// active load profile applied (system prompt, scaled `max_tokens`) — the
/// one before it for a caller the request's `load_relief` names
/// (fair degradation, `tenancy::fair::relieved`).
pub fn prepare<'a>(ctx: &Context<'_>, target: &Target, req: &'a ChatRequest) -> Prepared<'a> {
    let mut body = Outgoing::new(req);
    // The prompt variant first, so a load profile's system prompt is added
    // to what this model actually receives.
    let prompt = if ctx.prompts.is_empty() || !ctx.prompts.matches(&target.name) {
        None
    } else {
        ctx.prompts.apply(&target.name, body.to_mut())
    };
    if let Some(p) = &prompt {
        ctx.metrics
            .prompt_variants
            .get_or_create(&crate::metrics::PromptLabels {
                provider: target.model_ref.provider.clone(),
                model: target.model_ref.model.clone(),
                variant: p.variant.clone(),
                version: p.version.clone(),
            })
            .inc();
    }
    let provider = &target.model_ref.provider;
    let relieved = req.load_relief.iter().any(|p| p == provider);
    let load_profile = ctx.load.get(provider).and_then(|load| load.rewrite(&mut body, relieved)).map(str::to_owned);
    Prepared { body, load_profile, prompt }
}

/// Whether the target must be skipped because its provider is in its last
/// load profile and has `skip_when_lazy: true` (degrade first, shed second).
pub fn skip_for_load(load: &LoadRegistry, target: &Target) -> bool {
    target.provider.config.skip_when_lazy && load.get(&target.model_ref.provider).is_some_and(|load| load.is_lazy())
}

/// Hands the upstream's reply back, counting the tokens it generates when
/// the provider's load source is `token_velocity` (untouched otherwise).
pub fn observe(load: &LoadRegistry, target: &Target, reply: Reply) -> Reply {
    match load.get(&target.model_ref.provider) {
        Some(load) if load.counts_tokens() => crate::load::tokens::count(load.clone(), reply),
        _ => reply,
    }
}
