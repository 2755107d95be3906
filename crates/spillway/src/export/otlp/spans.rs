//! A finished request's spans, named and attributed after the
//! OpenTelemetry GenAI semantic conventions.
//!
//! The request is one `SERVER` span (`chat <model the client asked
//! for>`), a child of the client's span when it sent a `traceparent`.
//! Each upstream call is a `CLIENT` span under it (`chat <model ref>`),
//! with the provider, the model, why it failed, its time to first token,
//! the continuation mode and load profile; a continuation links to the
//! attempt whose stream it took over. The dead marks and breaker
//! transitions an attempt's settlement caused are events of its span.
//! Prompts and answers are attributes only with `capture_content`.

use super::proto::{Attribute, Code, Kind, Span, SpanEvent, SpanLink, Value};
use crate::journal::{Attempt, AttemptOutcome, Entry, TraceContext};
use std::time::Duration;

/// `gen_ai.provider.name` of a provider kind (semconv's values where it
/// has one; the kind's own name otherwise).
pub fn provider_name(kind: &str) -> &str {
    match kind {
        "azure" => "azure.ai.openai",
        "gemini" => "gcp.gemini",
        "bedrock" => "aws.bedrock",
        "" => "spillway",
        other => other,
    }
}

fn at(entry: &Entry, offset: Duration) -> u64 {
    entry.start_unix_ns.saturating_add(u64::try_from(offset.as_nanos()).unwrap_or(u64::MAX))
}

fn secs(d: Duration) -> Value {
    Value::Double(d.as_secs_f64())
}

fn int(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// The request's span and one per attempt; none when it is not sampled.
pub fn of(entry: &Entry) -> Vec<Span> {
    let Some(trace) = entry.trace.as_ref().filter(|t| t.sampled) else { return Vec::new() };
    let mut spans = Vec::with_capacity(1 + entry.attempts.len());
    spans.push(request_span(entry, trace));
    let mut previous: Option<&Attempt> = None;
    for a in &entry.attempts {
        spans.push(attempt_span(entry, trace, a, previous.filter(|_| a.continuation.is_some())));
        previous = Some(a);
    }
    spans
}

fn request_span(entry: &Entry, trace: &TraceContext) -> Span {
    let op = if entry.operation.is_empty() { "chat" } else { entry.operation };
    let requested = entry.requested_model.as_deref().unwrap_or("");
    let mut attrs: Vec<Attribute> = vec![
        ("gen_ai.operation.name", op.into()),
        ("gen_ai.request.model", requested.into()),
        ("spillway.request_id", entry.id.as_str().into()),
        ("spillway.entry_point", entry.entry_point.as_str().into()),
        ("spillway.outcome", entry.outcome_word().into()),
        ("spillway.attempts", int(entry.attempts.len() as u64)),
    ];
    let answered = entry.attempts.iter().rev().find(|a| a.outcome == AttemptOutcome::Answered);
    attrs.push(("gen_ai.provider.name", provider_name(answered.map_or("", |a| a.provider_kind)).into()));
    if let Some(c) = &entry.cascade {
        attrs.push(("spillway.cascade", c.as_str().into()));
    }
    if entry.stream {
        attrs.push(("gen_ai.request.stream", true.into()));
    }
    if let Some(m) = &entry.answered_by {
        attrs.push(("gen_ai.response.model", m.as_str().into()));
    }
    if let Some(u) = entry.usage {
        attrs.push(("gen_ai.usage.input_tokens", int(u.input)));
        attrs.push(("gen_ai.usage.output_tokens", int(u.output)));
        if let Some(c) = u.cost_usd {
            attrs.push(("spillway.cost_usd", c.into()));
        }
    }
    if !entry.finish_reasons.is_empty() {
        attrs.push(("gen_ai.response.finish_reasons", Value::StrArray(entry.finish_reasons.clone())));
    }
    if let Some(t) = entry.ttft {
        attrs.push(("gen_ai.response.time_to_first_chunk", secs(t)));
    }
    if let Some(s) = entry.status {
        attrs.push(("http.response.status_code", i64::from(s).into()));
    }
    if entry.continued {
        attrs.push(("spillway.continued", true.into()));
    }
    if let Some(p) = &entry.load_profile {
        attrs.push(("spillway.load_profile", p.as_str().into()));
    }
    if let Some(h) = &entry.handoff_id {
        attrs.push(("spillway.handoff_id", h.as_str().into()));
    }
    if let Some(u) = &entry.user {
        attrs.push(("spillway.user", u.as_str().into()));
    }
    if let Some(p) = &entry.prompt {
        attrs.push(("gen_ai.input.messages", p.as_str().into()));
    }
    if let Some(a) = &entry.answer {
        attrs.push(("gen_ai.output.messages", a.as_str().into()));
    }
    let failed = matches!(entry.outcome_word(), "error" | "rejected");
    if failed {
        attrs.push(("error.type", error_type(entry).into()));
    }
    Span {
        trace_id: trace.trace_id,
        span_id: trace.span_id,
        trace_state: trace.tracestate.clone(),
        parent_span_id: trace.parent_span_id,
        name: format!("{op} {requested}").trim_end().to_string(),
        kind: Kind::Server,
        start_unix_ns: entry.start_unix_ns,
        end_unix_ns: at(entry, entry.latency),
        attributes: attrs,
        events: Vec::new(),
        links: Vec::new(),
        status: if failed { Code::Error } else { Code::Unset },
        status_message: entry.error.clone(),
    }
}

/// `error.type` of a failed request: the last attempt's reason, else the
/// HTTP status.
fn error_type(entry: &Entry) -> String {
    entry
        .attempts
        .iter()
        .rev()
        .find_map(|a| a.reason)
        .map(str::to_string)
        .or_else(|| entry.status.map(|s| s.to_string()))
        .unwrap_or_else(|| "_OTHER".to_string())
}

fn attempt_span(entry: &Entry, trace: &TraceContext, a: &Attempt, continues: Option<&Attempt>) -> Span {
    let model_id = a.model.split_once('/').map_or(a.model.as_str(), |(_, m)| m);
    let op = if entry.operation.is_empty() { "chat" } else { entry.operation };
    let mut attrs: Vec<Attribute> = vec![
        ("gen_ai.operation.name", op.into()),
        ("gen_ai.provider.name", provider_name(a.provider_kind).into()),
        ("gen_ai.request.model", model_id.into()),
        ("spillway.model_ref", a.model.as_str().into()),
        ("spillway.provider", a.provider.as_str().into()),
        ("spillway.rank", int(a.rank as u64)),
        ("spillway.attempt.outcome", a.outcome.as_str().into()),
    ];
    if a.outcome == AttemptOutcome::Answered {
        attrs.push(("gen_ai.response.model", model_id.into()));
    }
    if let Some(r) = a.reason {
        attrs.push(("error.type", r.into()));
        attrs.push(("spillway.failure.reason", r.into()));
    }
    if let Some(t) = a.ttft {
        attrs.push(("gen_ai.response.time_to_first_chunk", secs(t)));
    }
    if let Some(m) = a.continuation {
        attrs.push(("spillway.continuation.mode", m.into()));
    }
    if let Some(p) = &a.load_profile {
        attrs.push(("spillway.load_profile", p.as_str().into()));
    }
    let events = a
        .events
        .iter()
        .map(|e| SpanEvent {
            time_unix_ns: at(entry, e.at),
            name: e.name,
            attributes: e.attributes.iter().map(|(k, v)| (*k, Value::Str(v.clone()))).collect(),
        })
        .collect();
    let links = continues
        .map(|p| SpanLink { span_id: p.span_id, attributes: vec![("spillway.link", "continues".into())] })
        .into_iter()
        .collect();
    Span {
        trace_id: trace.trace_id,
        span_id: a.span_id,
        trace_state: trace.tracestate.clone(),
        parent_span_id: Some(trace.span_id),
        name: format!("{op} {}", a.model),
        kind: Kind::Client,
        start_unix_ns: at(entry, a.start),
        end_unix_ns: at(entry, a.end),
        attributes: attrs,
        events,
        links,
        status: if a.outcome == AttemptOutcome::Failed { Code::Error } else { Code::Unset },
        status_message: a.detail.clone(),
    }
}
