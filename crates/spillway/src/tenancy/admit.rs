//! The request's side of tenancy: who the caller is ([`identify`]), what
//! it may use ([`allows`]), what it reserves ([`reservation`]) and the
//! OpenAI rate-limit headers of its standing ([`rate_headers`]).

use super::tally::Standing;
use crate::cascade::CascadePlan;
use crate::config::{Config, KeySpec, Limits, Secret};
use crate::discovery::DiscoveryState;
use std::collections::HashMap;
use std::sync::Arc;

/// The answer cap reserved when neither the request (`max_tokens`) nor
/// any provider of the cascade (`default_max_tokens`) sets one.
pub const DEFAULT_RESERVED_OUTPUT: u64 = 4096;

/// Who sent a request.
#[derive(Debug, Clone)]
pub enum Caller {
    /// Clients need no key (neither `server.api_keys` nor `keys` is set).
    Anyone,
    /// A key of `server.api_keys`: no limits.
    Plain(Secret),
    /// A virtual key.
    Key(Arc<KeySpec>),
}

impl Caller {
    /// The virtual key, if it is one.
    pub fn key(&self) -> Option<&Arc<KeySpec>> {
        match self {
            Self::Key(k) => Some(k),
            _ => None,
        }
    }

    /// The plain key, if it is one.
    pub fn plain(&self) -> Option<&Secret> {
        match self {
            Self::Plain(s) => Some(s),
            _ => None,
        }
    }
}

/// Virtual keys by the SHA-256 of their secret.
pub type KeyIndex = HashMap<String, Arc<KeySpec>>;

/// The index of the config's keys.
pub fn index(config: &Config) -> KeyIndex {
    config.keys.iter().map(|k| (k.secret_sha256.clone(), Arc::new(k.clone()))).collect()
}

/// Who `token` is: `None` for no key, an unknown one, or an expired one
/// (all answered 401 alike). Virtual keys are found by the SHA-256 of the
/// token (a digest lookup tells a timing observer nothing about the
/// secret); plain keys by the constant-time comparison of `server::auth`.
pub fn identify(
    index: &KeyIndex,
    registry: &super::registry::Registry,
    plain: &[Secret],
    find_plain: impl Fn(&[Secret], &str) -> Option<Secret>,
    token: Option<&str>,
    now_ms: impl FnOnce() -> u64,
) -> Option<Caller> {
    let runtime = registry.any();
    if index.is_empty() && plain.is_empty() && !runtime {
        return Some(Caller::Anyone);
    }
    let token = token?;
    if !index.is_empty() || runtime {
        let sha = crate::secret::sha256_hex(token);
        if let Some(k) = index.get(&sha).cloned().or_else(|| registry.find(&sha)) {
            // The clock is read only for a key that can expire.
            if k.expires_at_ms.is_some_and(|at| at <= now_ms()) {
                return None;
            }
            return Some(Caller::Key(k));
        }
    }
    find_plain(plain, token).map(Caller::Plain)
}

/// Whether `key` may use cascade (or model ref) `name`.
pub fn allows(key: &KeySpec, name: &str) -> bool {
    key.cascades.as_ref().is_none_or(|list| list.iter().any(|c| c == name))
}

/// What a request of `plan` reserves: tokens (the prompt's estimate plus
/// the answer's cap) and USD (those tokens at the highest input and output
/// prices among the cascade's models; an unknown price counts 0, as cost does).
pub fn reservation(
    config: &Config,
    discovery: &DiscoveryState,
    plan: &CascadePlan,
    prompt_tokens: u64,
    max_tokens: Option<u64>,
) -> (u64, f64) {
    let cap = max_tokens.unwrap_or_else(|| {
        plan.targets
            .iter()
            .filter_map(|t| config.providers.get(&t.model_ref.provider).and_then(|p| p.default_max_tokens))
            .max()
            .map_or(DEFAULT_RESERVED_OUTPUT, u64::from)
    });
    let (mut pin, mut pout) = (0.0f64, 0.0f64);
    for t in &plan.targets {
        if let Some(p) = crate::usage::price(config, discovery, &t.name) {
            pin = pin.max(p.input);
            pout = pout.max(p.output);
        }
    }
    (prompt_tokens + cap, (prompt_tokens as f64 * pin + cap as f64 * pout) / 1e6)
}

/// The end user: the `x-spillway-user` header, else the body's `user`
/// (Anthropic's `metadata.user_id` arrives as `user`), cut to [`super::MAX_USER`].
/// (`body_user`: the body's `user` string, [`crate::api::request::ChatRequest::body_user`]).
pub fn end_user(header: Option<&str>, body_user: Option<&str>) -> Option<String> {
    let u = header.or(body_user)?.trim();
    if u.is_empty() {
        return None;
    }
    Some(u.chars().take(super::MAX_USER).collect())
}

/// A Go-style duration as OpenAI writes resets: `20ms`, `1s`, `1.5s`, `6m0s`.
pub fn go_duration(ms: u64) -> String {
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let (m, rest) = (ms / 60_000, ms % 60_000);
    let secs = if rest % 1000 == 0 { format!("{}s", rest / 1000) } else { format!("{}s", rest as f64 / 1000.0) };
    if m == 0 {
        secs
    } else {
        format!("{m}m{secs}")
    }
}

/// The OpenAI rate-limit headers of the subjects counted (the key, and
/// its user when the user has limits): the requests trio where one has an
/// `rpm`, the tokens trio where one has a `tpm`, each from the subject with
/// the fewest left.
pub fn rate_headers(subjects: &[(&Limits, Standing)]) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let requests = subjects
        .iter()
        .filter_map(|(l, s)| l.rpm.map(|limit| (limit, s.requests_left, s.requests_reset_ms)))
        .min_by_key(|(_, left, _)| *left);
    if let Some((limit, left, reset)) = requests {
        out.push(("x-ratelimit-limit-requests", limit.to_string()));
        out.push(("x-ratelimit-remaining-requests", left.to_string()));
        out.push(("x-ratelimit-reset-requests", go_duration(reset)));
    }
    let tokens = subjects
        .iter()
        .filter_map(|(l, s)| l.tpm.map(|limit| (limit, s.tokens_left, s.tokens_reset_ms)))
        .min_by_key(|(_, left, _)| *left);
    if let Some((limit, left, reset)) = tokens {
        out.push(("x-ratelimit-limit-tokens", limit.to_string()));
        out.push(("x-ratelimit-remaining-tokens", left.to_string()));
        out.push(("x-ratelimit-reset-tokens", go_duration(reset)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resets_are_go_durations() {
        assert_eq!(go_duration(20), "20ms");
        assert_eq!(go_duration(1000), "1s");
        assert_eq!(go_duration(1500), "1.5s");
        assert_eq!(go_duration(360_000), "6m0s");
        assert_eq!(go_duration(179_560), "2m59.56s");
    }
}
