//! The label sets of every family: structs whose values are escaped as
//! they are written ([`label_sets!`]), and the bounded label helpers.

use prometheus_client::encoding::{EncodeLabel, EncodeLabelSet, EncodeLabelValue, LabelSetEncoder, LabelValueEncoder};

/// A label value as both text formats (0.0.4 and OpenMetrics) require it:
/// `\`, `"` and a line feed escaped. Without this a model id such as
/// `x"} 1\nforged 1` would end its label set early and write lines of its own.
struct Escaped<'a>(&'a str);

impl EncodeLabelValue for Escaped<'_> {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        use std::fmt::Write;
        let mut rest = self.0;
        // Copies the runs between special characters in one write each.
        while let Some(at) = rest.find(['\\', '"', '\n']) {
            let (run, tail) = rest.split_at(at);
            encoder.write_str(run)?;
            let mut chars = tail.chars();
            encoder.write_str(match chars.next() {
                Some('\\') => "\\\\",
                Some('"') => "\\\"",
                _ => "\\n",
            })?;
            rest = chars.as_str();
        }
        encoder.write_str(rest)
    }
}

/// `EncodeLabelSet` for label structs, in field order, each value through
/// [`Escaped`]. The derive of prometheus-client would write them raw.
macro_rules! label_sets {
    ($($ty:ident { $($field:ident),+ $(,)? })+) => {$(
        impl EncodeLabelSet for $ty {
            fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
                $( (stringify!($field), Escaped(&self.$field)).encode(encoder.encode_label())?; )+
                Ok(())
            }
        }
    )+};
}

label_sets! {
    RequestLabels { cascade, outcome }
    AttemptLabels { cascade, provider, model, result }
    ServedLabels { cascade, tier, provider, model, rank }
    CascadeLabels { cascade }
    SkippedLabels { cascade, provider }
    ModelLabels { provider, model }
    ProviderLabels { provider }
    LoadProfileLabels { provider, profile }
    CostLabels { cascade, provider, model }
    TokenLabels { provider, model, kind }
    EscalationLabels { from, to, reason }
    ReasonLabels { cascade, provider, model, reason }
    PromptLabels { provider, model, variant, version }
    NormalizeLabels { provider, model, result }
    InFlightLabels { cascade, provider }
    WorkerLabels { worker }
    QualityLabels { cascade, provider, model, signal }
    KeyUserLabels { key, user }
}

/// `key`, `user` of `spillway_key_user_requests_total`: the first
/// [`super::keys::MAX_USERS`] users of a key by name, the rest `other`.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct KeyUserLabels {
    /// Key id.
    pub key: String,
    /// End user (escaped: it is the client's text).
    pub user: String,
}

/// `cascade`, `provider`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct InFlightLabels {
    /// Cascade name.
    pub cascade: String,
    /// Provider name.
    pub provider: String,
}

/// `worker` of `spillway_server_connections`: the serving thread's number,
/// from 1 (as its name, `spillway-wN`).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct WorkerLabels {
    /// The serving thread's number.
    pub worker: String,
}

/// `version`, `commit` of `spillway_build_info`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    /// The crate's version.
    pub version: &'static str,
    /// The git commit it was built from (`SPILLWAY_GIT_COMMIT` at build
    /// time), or `unknown`.
    pub commit: &'static str,
    /// `debug` or `release`.
    pub profile: &'static str,
}

impl BuildLabels {
    /// This build's.
    pub fn current() -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION"),
            commit: option_env!("SPILLWAY_GIT_COMMIT").unwrap_or("unknown"),
            profile: if cfg!(debug_assertions) { "debug" } else { "release" },
        }
    }
}

/// `cascade`, `outcome`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct RequestLabels {
    /// Cascade name (or `direct`).
    pub cascade: String,
    /// `ok`, `handoff`, `error`.
    pub outcome: &'static str,
}

/// `cascade`, `provider`, `model`, `result`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct AttemptLabels {
    /// Cascade name.
    pub cascade: String,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Attempt result label.
    pub result: &'static str,
}

/// `cascade`, `tier`, `provider`, `model`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ServedLabels {
    /// Cascade name.
    pub cascade: String,
    /// Tier.
    pub tier: &'static str,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// 1-based position of the model in its cascade when it answered,
    /// bounded: `1`, `2`, `3`, `4+` (`handoff` for the handoff series).
    pub rank: &'static str,
}

/// The bounded `rank` label of a 1-based cascade position.
pub fn rank_label(rank: usize) -> &'static str {
    match rank {
        0 | 1 => "1",
        2 => "2",
        3 => "3",
        _ => "4+",
    }
}

/// `cascade`, `provider`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct SkippedLabels {
    /// Cascade name.
    pub cascade: String,
    /// Provider name (from the config).
    pub provider: String,
}

/// `cascade`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct CascadeLabels {
    /// Cascade name.
    pub cascade: String,
}

/// `provider`, `model`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ModelLabels {
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
}

/// `provider`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ProviderLabels {
    /// Provider name.
    pub provider: String,
}

/// `provider`, `profile`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct LoadProfileLabels {
    /// Provider name.
    pub provider: String,
    /// Load profile name (from config).
    pub profile: String,
}

/// `cascade`, `provider`, `model`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct CostLabels {
    /// Cascade name.
    pub cascade: String,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
}

/// `provider`, `model`, `kind`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct TokenLabels {
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// `input` or `output`.
    pub kind: &'static str,
}

/// `from`, `to`, `reason`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct EscalationLabels {
    /// Cascade the request asked for.
    pub from: String,
    /// Cascade that served it.
    pub to: String,
    /// `frustrated` or `header`.
    pub reason: &'static str,
}

/// `cascade`, `provider`, `model`, `reason`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ReasonLabels {
    /// Cascade name.
    pub cascade: String,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Failure reason ([`crate::outcome::REASONS`]).
    pub reason: &'static str,
}

/// `cascade`, `from`, `to`, `mode`, `result`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ContinuationLabels {
    pub cascade: String,
    /// The model ref whose stream broke (`-` when not known at that point).
    pub from: String,
    /// The model ref that continued it (`none` when none could).
    pub to: String,
    /// `prefill`, `instruct` or `none`.
    pub mode: &'static str,
    /// `ok` (ended cleanly), `failed` (broke again), `rejected` (refused
    /// before a first token), `none` (no model could continue).
    pub result: &'static str,
}

/// `provider`, `model`, `variant` (the rule's pattern), `version`
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct PromptLabels {
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// The matching rule's pattern.
    pub variant: String,
    /// Its version (`-` when unset).
    pub version: String,
}

/// `provider`, `model`, `result` (`valid`, `repaired`, `invalid`)
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct NormalizeLabels {
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Normalization result.
    pub result: &'static str,
}

/// What a since-start tally of answers counts (see `console.rs`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ServedTally {
    /// Per model ref in its cascade, whatever its rank.
    Model,
    /// Per tier.
    Tier,
    /// Per rank label.
    Rank,
}

/// The key of a since-start tally; never exported, so it needs no encoding.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct TallyKey {
    /// Cascade name.
    pub cascade: String,
    /// What is counted.
    pub what: ServedTally,
    /// The model ref, tier or rank label.
    pub name: String,
}

/// `cascade`, `provider`, `model`, `signal` (a quality signal or `ok`)
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct QualityLabels {
    /// Cascade name.
    pub cascade: String,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// `crate::quality::LABELS` or `ok`.
    pub signal: &'static str,
}
