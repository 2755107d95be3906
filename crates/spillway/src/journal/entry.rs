//! What a journal holds: one request's record, and its JSON line.

use super::trace::{hex, TraceContext};
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::time::Duration;

/// How an attempt ended (its settlement, `cascade::settle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AttemptOutcome {
    /// A whole answer passed its checks, or a stream ended cleanly.
    #[default]
    Answered,
    /// It failed, before or after its first token.
    Failed,
    /// The client went away or a hedge won: neither.
    Abandoned,
}

impl AttemptOutcome {
    /// The word in the log line and on the span.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Answered => "answered",
            Self::Failed => "failed",
            Self::Abandoned => "abandoned",
        }
    }
}

/// Something that happened during an attempt: a dead mark it set, a
/// breaker transition it caused (span events).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// `dead_mark`, `breaker_opened`, `breaker_closed`, …
    pub name: &'static str,
    /// When, from the request's start.
    pub at: Duration,
    /// Key-values (bounded: a reason, a model, an end time).
    pub attributes: Vec<(&'static str, String)>,
}

/// One attempt: one upstream call.
#[derive(Debug, Clone, Default)]
pub struct Attempt {
    /// The model ref (`provider/model`).
    pub model: String,
    /// The provider's name in the config.
    pub provider: String,
    /// The provider's kind (`openai`, `anthropic`, …).
    pub provider_kind: &'static str,
    /// 1-based position in the cascade.
    pub rank: usize,
    pub outcome: AttemptOutcome,
    /// Why it failed (a bounded label: `rate_limited`, `timeout`, …).
    pub reason: Option<&'static str>,
    /// The failure's text (secrets are masked upstream of here).
    pub detail: Option<String>,
    /// When it started and ended, from the request's start.
    pub start: Duration,
    pub end: Duration,
    /// Time to its first token, from its own start.
    pub ttft: Option<Duration>,
    /// It continued a stream another model broke off, in this mode.
    pub continuation: Option<&'static str>,
    /// The load profile applied to its request.
    pub load_profile: Option<String>,
    /// Its span's id (sent upstream as the `traceparent`'s parent).
    pub span_id: [u8; 8],
    pub events: Vec<Event>,
}

/// Tokens and cost of the answers (a continued stream's parts added up).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    /// `None` when the answering model has no known price.
    pub cost_usd: Option<f64>,
}

/// One request's record.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    pub id: String,
    /// The request's path (`/v1/chat/completions`, `/v1/responses`, …).
    pub entry_point: String,
    /// GenAI operation: `chat`, `embeddings`.
    pub operation: &'static str,
    pub start_unix_ns: u64,
    /// The client key's id, when one is known.
    pub key: Option<String>,
    /// The end user the client named (`user`).
    pub user: Option<String>,
    pub cascade: Option<String>,
    /// The `model` the client sent.
    pub requested_model: Option<String>,
    pub stream: bool,
    /// `ok`, `handoff`, `error` from the request's settlement; none when
    /// it never reached the runner or the client went away.
    pub outcome: Option<&'static str>,
    pub status: Option<u16>,
    pub error: Option<String>,
    pub answered_by: Option<String>,
    pub tier: Option<&'static str>,
    pub rank: Option<usize>,
    pub attempts: Vec<Attempt>,
    pub usage: Option<Usage>,
    pub finish_reasons: Vec<String>,
    pub latency: Duration,
    /// Time to the first token the client got, from the request's start.
    pub ttft: Option<Duration>,
    pub continued: bool,
    pub load_profile: Option<String>,
    pub handoff_id: Option<String>,
    pub escalated: bool,
    pub trace: Option<TraceContext>,
    /// Content, only with `telemetry.capture_content`.
    pub prompt: Option<String>,
    pub answer: Option<String>,
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

impl Entry {
    /// The request's outcome in one word: `answered`, `handoff`, `error`,
    /// `rejected` (a 4xx: the client's request was refused, by Spillway or
    /// by an upstream) or `disconnected` (the client went away first).
    pub fn outcome_word(&self) -> &'static str {
        if self.status.is_some_and(|s| (400..500).contains(&s)) {
            return "rejected";
        }
        match self.outcome {
            Some("ok") => "answered",
            Some(o) => o,
            None if self.status.is_some_and(|s| s >= 500) => "error",
            None => "disconnected",
        }
    }

    /// The request log's line as a tree (tests; the writer serializes
    /// [`Entry::line`] straight into its buffer).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.line(None)).unwrap_or(Value::Null)
    }

    /// The request log's line, `ts` first when given.
    pub fn line<'a>(&'a self, ts: Option<&'a str>) -> Line<'a> {
        let content = (self.prompt.is_some() || self.answer.is_some())
            .then_some(Content { prompt: self.prompt.as_deref(), answer: self.answer.as_deref() });
        Line {
            ts,
            id: &self.id,
            key: self.key.as_deref(),
            user: self.user.as_deref(),
            entry: &self.entry_point,
            cascade: self.cascade.as_deref(),
            model: self.requested_model.as_deref(),
            stream: self.stream,
            outcome: self.outcome_word(),
            status: self.status,
            error: self.error.as_deref(),
            answered_by: self.answered_by.as_deref(),
            tier: self.tier,
            rank: self.rank,
            attempts: Attempts(&self.attempts),
            tokens: self.usage.map(|u| Tokens { input: u.input, output: u.output }),
            cost_usd: self.usage.and_then(|u| u.cost_usd),
            finish_reasons: &self.finish_reasons,
            latency_ms: ms(self.latency),
            ttft_ms: self.ttft.map(ms),
            continued: self.continued,
            load_profile: self.load_profile.as_deref(),
            handoff_id: self.handoff_id.as_deref(),
            escalated: self.escalated,
            trace_id: self.trace.as_ref().map(|t| hex(&t.trace_id)),
            content,
        }
    }
}

/// One request log line, borrowed from its entry and serialized as is
/// (no tree is built on the way to the file).
#[derive(Serialize)]
pub struct Line<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<&'a str>,
    id: &'a str,
    key: Option<&'a str>,
    user: Option<&'a str>,
    entry: &'a str,
    cascade: Option<&'a str>,
    model: Option<&'a str>,
    stream: bool,
    outcome: &'static str,
    status: Option<u16>,
    error: Option<&'a str>,
    answered_by: Option<&'a str>,
    tier: Option<&'static str>,
    rank: Option<usize>,
    attempts: Attempts<'a>,
    tokens: Option<Tokens>,
    cost_usd: Option<f64>,
    finish_reasons: &'a [String],
    latency_ms: f64,
    ttft_ms: Option<f64>,
    continued: bool,
    load_profile: Option<&'a str>,
    handoff_id: Option<&'a str>,
    escalated: bool,
    trace_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Content<'a>>,
}

#[derive(Serialize)]
struct Tokens {
    input: u64,
    output: u64,
}

#[derive(Serialize)]
struct Content<'a> {
    prompt: Option<&'a str>,
    answer: Option<&'a str>,
}

struct Attempts<'a>(&'a [Attempt]);

impl Serialize for Attempts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(AttemptLine))
    }
}

struct AttemptLine<'a>(&'a Attempt);

impl Serialize for AttemptLine<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let a = self.0;
        let mut m = s.serialize_map(Some(12))?;
        m.serialize_entry("model", &a.model)?;
        m.serialize_entry("provider", &a.provider)?;
        m.serialize_entry("rank", &a.rank)?;
        m.serialize_entry("outcome", a.outcome.as_str())?;
        m.serialize_entry("reason", &a.reason)?;
        m.serialize_entry("detail", &a.detail)?;
        m.serialize_entry("start_ms", &ms(a.start))?;
        m.serialize_entry("duration_ms", &ms(a.end.saturating_sub(a.start)))?;
        m.serialize_entry("ttft_ms", &a.ttft.map(ms))?;
        m.serialize_entry("continuation", &a.continuation)?;
        m.serialize_entry("load_profile", &a.load_profile)?;
        m.serialize_entry("events", &Events(&a.events))?;
        m.end()
    }
}

struct Events<'a>(&'a [Event]);

impl Serialize for Events<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|e| e.name))
    }
}
