//! Sending the traffic: every request on its schedule, to the handler
//! in-process, each answer read into a [`Sample`].

use super::read::{read_stream, read_whole, valid};
use super::{Outcome, Sample};
use crate::drill::scenario::{Output, Scenario, Traffic};
use crate::server::AppState;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Sends every request on schedule and collects what came back.
pub(super) async fn send_all(state: &Arc<AppState>, scenario: &Scenario, start: Instant) -> Vec<Sample> {
    // (when, stream, the stream's n-th request)
    let mut schedule: Vec<(Duration, usize, u64)> = Vec::new();
    for (i, t) in scenario.traffic.iter().enumerate() {
        let period = Duration::from_secs_f64(1.0 / t.rps);
        let (mut at, mut n) = (t.from, 0);
        while at < t.until {
            schedule.push((at, i, n));
            at += period;
            n += 1;
        }
    }
    schedule.sort();
    let traffic: Arc<[Traffic]> = scenario.traffic.clone().into();
    let mut running = JoinSet::new();
    let mut samples = Vec::with_capacity(schedule.len());
    for (at, i, n) in schedule {
        let due = start + at;
        loop {
            tokio::select! {
                biased;
                Some(done) = running.join_next(), if !running.is_empty() => samples.extend(done.ok()),
                () = tokio::time::sleep_until(due) => break,
            }
        }
        running.spawn(one(state.clone(), traffic.clone(), (i, n), start));
    }
    while let Some(done) = running.join_next().await {
        samples.extend(done.ok());
    }
    samples.sort_by_key(|s| (s.sent, s.traffic));
    samples
}

/// The request body of a traffic stream's `n`-th request.
fn request_body(t: &Traffic, n: u64) -> Bytes {
    let mut body = json!({
        "model": t.cascade,
        "messages": [{"role": "user", "content": t.prompt}],
    });
    if let Some(user) = crate::drill::classes::user_of(t, n) {
        body["user"] = json!(user);
    }
    if t.stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    if let Some(n) = t.max_tokens {
        body["max_tokens"] = json!(n);
    }
    match &t.output {
        Output::Text => {}
        Output::Json => body["response_format"] = json!({"type": "json_object"}),
        Output::Schema(schema) => {
            body["response_format"] =
                json!({"type": "json_schema", "json_schema": {"name": "drill", "schema": schema, "strict": true}});
        }
    }
    Bytes::from(body.to_string())
}

/// Sends stream `i`'s `n`-th request through the gateway's handler and
/// reads the answer to its end.
async fn one(state: Arc<AppState>, traffic: Arc<[Traffic]>, (i, n): (usize, u64), start: Instant) -> Sample {
    let t = &traffic[i];
    let sent = Instant::now();
    let request = http::Request::builder()
        .method(http::Method::POST)
        .uri("/v1/chat/completions")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(request_body(t, n)));
    let mut sample = Sample {
        traffic: i,
        sent: sent - start,
        latency: Duration::ZERO,
        first_byte: Duration::ZERO,
        outcome: Outcome::Failed { status: 0, code: "not_sent".into() },
        valid: false,
        attempts: 0,
        cost_usd: 0.0,
        rank: 0,
        free: false,
        priced: false,
        profile: None,
        completion_tokens: 0,
        unattempted: false,
    };
    let Ok(request) = request else { return sample };
    let response = crate::server::chat::chat(state.clone(), request).await;
    let (parts, mut body) = response.into_parts();
    let status = parts.status.as_u16();
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let (model, tier) = (header("x-spillway-model"), header("x-spillway-tier"));
    sample.attempts = header("x-spillway-attempts").parse().unwrap_or(0);
    sample.rank = header("x-spillway-rank").parse().unwrap_or(0);
    sample.profile = Some(header("x-spillway-load-profile")).filter(|p| !p.is_empty());
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { break };
        if bytes.is_empty() {
            sample.first_byte = sent.elapsed();
        }
        if let Some(data) = frame.data_ref() {
            bytes.extend_from_slice(data);
        }
    }
    sample.latency = sent.elapsed();
    let read = if t.stream && status == 200 { read_stream(&bytes) } else { read_whole(&bytes) };
    // No upstream call at all: every model skipped, or the gateway itself
    // refused (its concurrency limit, a shutdown, a request it cannot read).
    let refused =
        matches!(read.error.as_deref(), Some("overloaded" | "shutting_down" | "invalid_json" | "invalid_value"));
    if status != 200 && sample.attempts == 0 {
        sample.attempts = read.tried;
    }
    sample.unattempted = status != 200 && sample.attempts == 0 && (read.unattempted || refused);
    sample.outcome = match (&read.error, status) {
        (Some(code), _) => Outcome::Failed { status, code: code.clone() },
        (None, 200) if tier == "handoff" => Outcome::Handoff,
        (None, 200) => Outcome::Answered { model: model.clone(), tier },
        (None, _) => Outcome::Failed { status, code: "unknown".into() },
    };
    if let Outcome::Answered { model, .. } = &sample.outcome {
        let gw = state.gateway.load();
        sample.valid = valid(&t.output, &read.content, &gw.shared.schemas);
        // Where the cascade judges quality, a text answer is valid only when
        // the judge finds it neither empty, in the wrong script nor looping.
        let judged = gw.cascades.get(&t.cascade).is_some_and(|p| p.targets.iter().any(|x| x.quality.is_some()));
        if judged && matches!(t.output, Output::Text) {
            use crate::quality::{text, Signal};
            let answer = text::Answer { content: &read.content, ..text::Answer::default() };
            let found = text::judge(&answer, text::PromptFacts::of(&t.prompt), text::TextRules::default());
            sample.valid &= ![Signal::Empty, Signal::WrongScript, Signal::Repetition].iter().any(|s| found.has(*s));
        }
        sample.free = crate::usage::is_free(&gw.config, &gw.shared.discovery, model);
        sample.completion_tokens = read.usage.map_or(0, |(_, out)| out);
        if sample.rank == 0 {
            let plan = gw.cascades.get(&t.cascade);
            let at = plan.and_then(|p| p.targets.iter().position(|target| target.name == *model));
            sample.rank = at.map_or(1, |i| u32::try_from(i + 1).unwrap_or(u32::MAX));
        }
        let price = crate::usage::price(&gw.config, &gw.shared.discovery, model);
        sample.priced = sample.free || price.is_some();
        if let (Some(p), Some((input, output))) = (price, read.usage) {
            sample.cost_usd = (input as f64 * p.input + output as f64 * p.output) / 1e6;
        }
    }
    sample
}
