//! Continuing a stream another model broke off (SPEC §6, after the first
//! byte): which models can continue and how, and the walk that finds the
//! next one.
//!
//! When a forwarded stream fails after content reached the client — cut,
//! stalled past `timeouts.idle`, an in-band error, an end without a finish
//! reason — the forwarder ([`super::stream`]) asks [`Continuation::resume`]
//! for the next target of the cascade that passes the gates and can
//! continue: it is sent the original request plus the partial answer (per
//! its [`Mode`]) and, once its first token arrives, the forwarder goes on
//! forwarding from it on the same client stream. A target that rejects the
//! continuation (a 400 to a prefill, say) is settled like any failed
//! attempt and the next is tried; when none can, the stream ends with the
//! error event of the original failure.
//!
//! Not continued: a stream cut inside a tool call's arguments (half a call
//! cannot be finished safely by another model; the client gets the error
//! event), `n > 1` streams, and answers to `response_format` requests,
//! which are validated whole before their first byte and never break
//! mid-way.

use super::attempt::{self, Answer};
use super::context::Owned;
use super::gate;
use super::plan::{CascadePlan, Target};
use super::settle::{Rules, Ticket};
use super::walk::Walk;
use crate::api::continuation::Prefill;
use crate::api::ChatRequest;
use crate::config::{ContinuationMode, ProviderKind};
use crate::outcome::AttemptError;
use crate::providers::{ChunkStream, StreamItem};
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

pub use crate::api::continuation::Mode;

/// How `target` continues, or `None` when it must not be used to continue:
/// the model's `continuation`, else the provider's, else the default for
/// its kind and model (round2.md §4: prefill where the API continues a
/// final assistant message, instruct elsewhere).
pub fn mode_of(target: &Target) -> Option<Mode> {
    let p = &target.provider.config;
    let model = &target.model_ref.model;
    let set = p.models.iter().find(|m| m.id == *model).and_then(|m| m.continuation).or(p.continuation);
    let prefill = default_prefill(p.kind, p.base_url.as_deref(), p.discovery_format.as_deref(), model);
    match set {
        Some(ContinuationMode::None) => None,
        Some(ContinuationMode::Instruct) => Some(Mode::Instruct),
        Some(ContinuationMode::Prefill) => Some(Mode::Prefill(prefill.unwrap_or(Prefill::Plain))),
        None => Some(prefill.map_or(Mode::Instruct, Mode::Prefill)),
    }
}

/// The prefill style an API speaks, when it has one.
fn default_prefill(kind: ProviderKind, base_url: Option<&str>, format: Option<&str>, model: &str) -> Option<Prefill> {
    match kind {
        ProviderKind::Mock => Some(Prefill::Plain),
        ProviderKind::Anthropic if claude_rejects_prefill(model) => None,
        ProviderKind::Anthropic => Some(Prefill::Anthropic),
        // Azure serves OpenAI's models: a trailing assistant message starts
        // a new reply there too.
        // Whether Gemini continues a trailing `model` turn token by token
        // is not documented (round2.md §4 has no entry): instruct.
        // Bedrock: a trailing assistant message through Converse is what
        // Claude's prefill would need, but the reference has nothing on
        // Converse accepting it: instruct (`continuation: prefill` opts in).
        ProviderKind::GigaChat
        | ProviderKind::Yandex
        | ProviderKind::Azure
        | ProviderKind::Gemini
        | ProviderKind::Bedrock => None,
        ProviderKind::OpenAi => {
            let url = base_url.unwrap_or_default().to_ascii_lowercase();
            if format == Some("vllm") || url.contains("vllm") {
                Some(Prefill::Vllm)
            } else if url.contains("deepseek.com") || url.contains("mistral.ai") {
                Some(Prefill::Prefix)
            } else if matches!(format, Some("groq" | "ollama")) || url.contains("groq.com") || url.contains(":11434") {
                Some(Prefill::Plain)
            } else {
                // OpenAI itself starts a new reply after a trailing
                // assistant message; so do unknown servers, as far as we know.
                None
            }
        }
    }
}

/// Claude 4.6 and later answer a trailing assistant message with a 400
/// (Anthropic's migration guide): version from ids like
/// `claude-opus-4-6`, `claude-sonnet-4-5-20250929`, `claude-3-5-haiku-…`.
fn claude_rejects_prefill(model: &str) -> bool {
    let mut numbers =
        model.split(['-', '.', '@']).filter(|p| !p.is_empty() && p.len() <= 2).filter_map(|p| p.parse::<u32>().ok());
    let major = numbers.next().unwrap_or(0);
    let minor = numbers.next().unwrap_or(0);
    (major, minor) >= (4, 6)
}

/// What a stream keeps to continue on another model.
pub struct Continuation {
    pub ctx: Owned,
    pub plan: Arc<CascadePlan>,
    pub req: ChatRequest,
    /// `timeouts.total` from the request's start.
    pub deadline: Instant,
}

/// A continuation that produced its first token.
pub struct Resumed {
    pub ticket: Ticket,
    pub head: Vec<StreamItem>,
    pub rest: ChunkStream,
    pub mode: Mode,
}

impl Continuation {
    /// The first target after `after` that passes the gates, can continue,
    /// and answers its continuation up to a first token; every target tried
    /// on the way is settled. `None` when none did.
    pub async fn resume(&self, after: usize, partial: &str) -> Option<Resumed> {
        let walk = Walk {
            ctx: self.ctx.context(),
            plan: &self.plan,
            req: &self.req,
            deadline: self.deadline,
            calls: AtomicU32::new(0),
            log: Mutex::new(Vec::new()),
            min_context: AtomicU64::new(0),
            refused_context: AtomicU32::new(0),
            json: None,
        };
        let rules = Rules { breaker: walk.ctx.rules.breaker, dead_ttl: walk.ctx.rules.dead_ttl };
        let mut next = after;
        while Instant::now() < self.deadline {
            let (i, pass) = gate::next_admitted(&walk, &self.plan.targets, next)?;
            next = i + 1;
            let target = &self.plan.targets[i];
            let Some(mode) = mode_of(target) else {
                tracing::debug!(model = %target.name, "Not used to continue a stream (continuation: none).");
                continue;
            };
            let mut ticket =
                Ticket::new(&self.plan, i, self.ctx.context().health, rules, pass, self.req.journal.as_ref());
            ticket.continuing(mode.label());
            match attempt::once(&walk, target, &mut ticket, Some((partial, mode))).await {
                Ok((Answer::Stream { head, rest }, _)) => return Some(Resumed { ticket, head, rest, mode }),
                Ok((Answer::Complete(_), _)) => {
                    let e =
                        AttemptError::new(crate::outcome::Failure::BrokenBody, "a whole answer to a stream request");
                    self.failed(ticket, &e, mode);
                }
                Err(e) => self.failed(ticket, &e, mode),
            }
        }
        None
    }

    fn failed(&self, ticket: Ticket, e: &AttemptError, mode: Mode) {
        tracing::info!(model = %ticket.target().name, reason = %e, mode = mode.label(), "A model could not continue the stream.");
        self.ctx.metrics.continued(&self.plan.name, "-", &ticket.target().name, mode.label(), "rejected");
        ticket.failed(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_what_each_api_can_do() {
        let openai = |url: &str, format: Option<&str>| default_prefill(ProviderKind::OpenAi, Some(url), format, "m");
        assert_eq!(openai("https://api.openai.com/v1", None), None);
        assert_eq!(openai("http://gpu:8000/v1", Some("vllm")), Some(Prefill::Vllm));
        assert_eq!(openai("https://api.deepseek.com/beta", None), Some(Prefill::Prefix));
        assert_eq!(openai("https://api.mistral.ai/v1", None), Some(Prefill::Prefix));
        assert_eq!(openai("https://api.groq.com/openai/v1", None), Some(Prefill::Plain));
        assert_eq!(openai("http://127.0.0.1:11434/v1", None), Some(Prefill::Plain));
        let claude = |m: &str| default_prefill(ProviderKind::Anthropic, None, None, m);
        assert_eq!(claude("claude-sonnet-4-5-20250929"), Some(Prefill::Anthropic));
        assert_eq!(claude("claude-3-5-haiku-20241022"), Some(Prefill::Anthropic));
        assert_eq!(claude("claude-opus-4-20250514"), Some(Prefill::Anthropic));
        assert_eq!(claude("claude-opus-4-6"), None);
        assert_eq!(claude("claude-sonnet-4-7"), None);
        assert_eq!(claude("claude-opus-5"), None);
        assert_eq!(default_prefill(ProviderKind::GigaChat, None, None, "GigaChat"), None);
        assert_eq!(default_prefill(ProviderKind::Mock, None, None, "x"), Some(Prefill::Plain));
    }
}
