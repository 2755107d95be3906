//! Runs a scenario: the real gateway (the same handler `spillway serve`
//! serves, with its background jobs) on a single-threaded runtime whose
//! clock is paused and jumps ahead whenever every task waits, so ten
//! minutes of traffic take as long as the CPU work they cause. Requests go
//! to the handler in-process, no sockets; the mocks' delays, deadlines,
//! dead marks, breakers and outage windows all run on that clock.

/// An alert that went out during the run (`at_s` from its start).
pub use super::marks::AlertRow as AlertSeen;
use super::scenario::{Output, Scenario, Traffic};
use crate::server::AppState;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// What happened to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A model answered.
    Answered {
        /// Its ref (`x-spillway-model`).
        model: String,
        /// Its tier (`x-spillway-tier`).
        tier: String,
    },
    /// Queued for a person (`x-spillway-tier: handoff`).
    Handoff,
    /// An error status, or a stream that failed after it started.
    Failed {
        /// The HTTP status (200 for a stream that broke mid-way).
        status: u16,
        /// The error's `code` (`all_models_failed`, `timeout`, …).
        code: String,
    },
}

/// One request of the run.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Which traffic stream sent it.
    pub traffic: usize,
    /// When, from the start of the run.
    pub sent: Duration,
    /// Until the last byte of the answer.
    pub latency: Duration,
    /// Until its first byte.
    pub first_byte: Duration,
    /// What came back.
    pub outcome: Outcome,
    /// An answer whose content fits the traffic's [`Output`].
    pub valid: bool,
    /// Upstream calls made (`x-spillway-attempts`).
    pub attempts: u32,
    /// Its usage times the answering model's price, USD.
    pub cost_usd: f64,
    /// 1-based position of the answering model in the cascade as it stood
    /// (`x-spillway-rank` when the gateway sends it, else read from the
    /// live plan); 0 when no model answered.
    pub rank: u32,
    /// The answering model costs nothing (a known zero price or `:free`).
    pub free: bool,
    /// The answering model's price is known (free, or a price the config or
    /// its listing gives); a self-hosted model without one is neither free
    /// nor paid, and its answers cost $0 in the report.
    pub priced: bool,
    /// The load profile the answer was served under (`x-spillway-load-profile`).
    pub profile: Option<String>,
    /// Completion tokens of the answer (its usage).
    pub completion_tokens: u64,
    /// A failure before any upstream call: every model was skipped (open
    /// breakers, dead marks, full bulkheads) or the gateway refused the
    /// request itself.
    pub unattempted: bool,
}

/// Everything a run observed.
#[derive(Debug, Clone)]
pub struct Run {
    /// Every request, in the order they were sent.
    pub samples: Vec<Sample>,
    /// Every alert, in order.
    pub alerts: Vec<AlertSeen>,
    /// Wall-clock time the run took.
    pub wall: std::time::Duration,
    /// Per model that answered JSON: `(model ref, [valid as sent, repaired,
    /// invalid])`, from the gateway's normalization counts.
    pub json: Vec<(String, [u64; 3])>,
    /// Every cascade's models in order as the first request found them
    /// (discovered cascades after the start-up discovery round).
    pub cascades: Vec<(String, Vec<String>)>,
    /// Each discovered cascade as discovery built it before the first
    /// request: its models with their reasons, its notes, what it left out.
    pub discovered: Vec<(String, crate::discovery::BuiltCascade)>,
    /// The load each monitored provider read, sampled through the run:
    /// `(when, provider, load 0..1)`.
    pub load: Vec<(Duration, String, f64)>,
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The runtime or the scratch directory could not be made.
    #[error("cannot start the drill: {0}")]
    Io(#[from] std::io::Error),
    /// The gateway could not be built from the config.
    #[error("cannot build the gateway: {0}")]
    Build(String),
}

/// Runs the scenario to the end of its traffic and of every answer.
pub fn run(scenario: &Scenario) -> Result<Run, RunError> {
    let scratch = Scratch::new()?;
    let mut config = scenario.config.clone();
    config.state.data_dir = scratch.0.clone();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build()?;
    // Clippy bans std's `Instant::now` to keep request code on tokio's
    // clock; this is the one place that wants the real one.
    #[allow(clippy::disallowed_methods)]
    let wall = std::time::Instant::now();
    let (samples, alerts, json, (cascades, discovered), load) = runtime.block_on(async move {
        fastrand::seed(scenario.seed);
        let app = crate::app::App::start(config).map_err(|e| RunError::Build(e.to_string()))?;
        let state = app.state.clone();
        let mut tap = state.gateway.load().shared.alerts.tap(4096);
        // As `serve` does on start-up: one discovery round over the
        // listings (mock `listing:`s) before the first request, so a
        // discovered cascade is built, filtered and ranked as it would be.
        if crate::discovery::fetch::provider_count(&state.gateway.load().config) > 0 {
            crate::gateway::refresh::refresh(&state.gateway).await;
        }
        let cascades: Vec<(String, Vec<String>)> = state
            .gateway
            .load()
            .cascades
            .iter()
            .map(|(name, plan)| (name.clone(), plan.targets.iter().map(|t| t.name.clone()).collect()))
            .collect();
        let discovered: Vec<(String, crate::discovery::BuiltCascade)> =
            state.gateway.load().shared.discovery.current().cascades.clone().into_iter().collect();
        let start = Instant::now();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let every = (scenario.step / 20).max(Duration::from_millis(100));
        let sending = async {
            let samples = send_all(&state, scenario, start).await;
            let _ = stop.send(());
            samples
        };
        let (samples, load) = tokio::join!(sending, sample_load(state.clone(), start, every, stopped));
        app.stop().await;
        let gw = state.gateway.load();
        let json: Vec<(String, [u64; 3])> = gw
            .config
            .providers
            .iter()
            .flat_map(|(name, p)| p.models.iter().map(move |m| (name, &m.id)))
            .map(|(name, id)| (format!("{name}/{id}"), crate::cascade::json::counts(&gw.metrics, name, id)))
            .filter(|(_, counts)| counts.iter().sum::<u64>() > 0)
            .collect();
        let mut alerts = Vec::new();
        let start_ms = u64::try_from(epoch_ms(start).as_millis()).unwrap_or(u64::MAX);
        if let Some(rx) = tap.as_mut() {
            while let Ok(m) = rx.try_recv() {
                let at_ms = m.body.get("at_ms").and_then(Value::as_u64).unwrap_or(0);
                alerts.push(AlertSeen {
                    at_s: Duration::from_millis(at_ms.saturating_sub(start_ms)).as_secs_f64(),
                    kind: m.body.get("kind").and_then(Value::as_str).unwrap_or("alert").to_string(),
                    key: m.body.get("key").and_then(Value::as_str).unwrap_or_default().to_string(),
                    opens: m.body.get("opens").and_then(Value::as_bool).unwrap_or(false),
                    resolves: m.body.get("resolves").and_then(Value::as_str).map(str::to_string),
                    digest: m.body.get("digest").and_then(Value::as_bool).unwrap_or(false),
                    // The virtual clock's dates mean nothing to a reader: times from the drill's start.
                    text: super::times::relative_times(&m.text, start_ms),
                });
            }
        }
        Ok::<_, RunError>((samples, alerts, json, (cascades, discovered), load))
    })?;
    Ok(Run { samples, alerts, wall: wall.elapsed(), json, cascades, discovered, load })
}

/// Reads every monitored provider's load `every` so often until `stop`.
async fn sample_load(
    state: Arc<AppState>,
    start: Instant,
    every: Duration,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) -> Vec<(Duration, String, f64)> {
    let mut out = Vec::new();
    if state.gateway.load().load.providers().is_empty() {
        return out;
    }
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = &mut stop => return out,
            _ = tick.tick() => {}
        }
        let gw = state.gateway.load();
        for p in gw.load.providers() {
            if let Some(load) = p.load() {
                out.push((start.elapsed(), p.name().to_owned(), load));
            }
        }
    }
}

/// `start` on the gateway's wall clock (the one alerts are stamped with).
fn epoch_ms(start: Instant) -> Duration {
    let now_ms = crate::health::clock::now_ms();
    Duration::from_millis(now_ms).saturating_sub(start.elapsed())
}

/// Sends every request on schedule and collects what came back.
async fn send_all(state: &Arc<AppState>, scenario: &Scenario, start: Instant) -> Vec<Sample> {
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
    if let Some(user) = super::classes::user_of(t, n) {
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

/// What an answer said.
#[derive(Debug, Default)]
struct Read {
    content: String,
    usage: Option<(u64, u64)>,
    error: Option<String>,
    /// The error says no model was tried (every one was skipped).
    unattempted: bool,
    /// Upstream calls an error names (its attempt list, skips left out).
    tried: u32,
}

fn usage_of(v: &Value) -> Option<(u64, u64)> {
    let u = v.get("usage")?;
    Some((u.get("prompt_tokens")?.as_u64()?, u.get("completion_tokens")?.as_u64()?))
}

fn error_of(v: &Value) -> Option<String> {
    let e = v.get("error")?;
    Some(
        e.get("code")
            .and_then(Value::as_str)
            .or_else(|| e.get("type").and_then(Value::as_str))
            .unwrap_or("error")
            .into(),
    )
}

/// A whole JSON answer or error body.
fn read_whole(bytes: &[u8]) -> Read {
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return Read { error: Some("unreadable_body".into()), ..Read::default() };
    };
    let message = &v["choices"][0]["message"];
    let content = match message.get("content").and_then(Value::as_str) {
        Some(text) => text.to_string(),
        // A tool call counts as content.
        None => message.get("tool_calls").map(Value::to_string).unwrap_or_default(),
    };
    let (unattempted, tried) = v["error"]["message"].as_str().map_or((false, 0), attempts_of);
    Read { content, usage: usage_of(&v), error: error_of(&v), unattempted, tried }
}

/// Reads `all_models_failed`'s message as a client would: `all models of
/// `c` failed: m/a: skipped_open (…); m/b: upstream_error (…)`, or `…: no
/// model was available`. Returns whether no model was tried at all, and
/// how many were (skips — dead marks, open breakers, full bulkheads, lazy
/// or too-small models — are not calls).
fn attempts_of(message: &str) -> (bool, u32) {
    const SKIPS: [&str; 5] = ["skipped_dead", "skipped_open", "saturated", "skipped_lazy", "skipped_context"];
    let Some((_, list)) = message.split_once(" failed: ") else { return (false, 0) };
    if list == "no model was available" {
        return (true, 0);
    }
    let (mut tried, mut skipped) = (0u32, 0u32);
    for entry in list.split("; ") {
        // Model refs have no `: `; details may.
        let reason = entry.split_once(": ").map_or(entry, |(_, r)| r);
        if SKIPS.iter().any(|s| reason.starts_with(s)) {
            skipped += 1;
        } else {
            tried += 1;
        }
    }
    (tried == 0 && skipped > 0, tried)
}

/// An SSE stream: content deltas, the usage chunk, an error event, `[DONE]`.
fn read_stream(bytes: &[u8]) -> Read {
    let text = String::from_utf8_lossy(bytes);
    let mut read = Read::default();
    let mut done = false;
    for data in text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim) {
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(data) else { continue };
        if let Some(code) = error_of(&v) {
            read.error = Some(code);
        }
        let delta = &v["choices"][0]["delta"];
        if let Some(piece) = delta.get("content").and_then(Value::as_str) {
            read.content.push_str(piece);
        }
        if let Some(calls) = delta.get("tool_calls") {
            read.content.push_str(&calls.to_string());
        }
        read.usage = usage_of(&v).or(read.usage);
    }
    if !done && read.error.is_none() {
        read.error = Some("stream_cut".into());
    }
    read
}

/// Whether an answer's content is what the traffic asked for.
fn valid(output: &Output, content: &str, schemas: &crate::normalize::SchemaCache) -> bool {
    match output {
        Output::Text => !content.trim().is_empty(),
        Output::Json => serde_json::from_str::<Value>(content).is_ok_and(|v| v.is_object()),
        // The gateway's own compiled form: the same draft rules and bounds.
        Output::Schema(schema) => serde_json::from_str::<Value>(content)
            .is_ok_and(|v| schemas.get_or_compile(schema).is_ok_and(|s| s.check(&v).is_ok())),
    }
}

/// A scratch `data_dir` (the handoff queue's embedded store), removed at the end.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Self> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("spillway-drill-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Self(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_without_done_is_cut_and_an_error_event_names_its_code() {
        let ok = read_stream(
            b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n",
        );
        assert_eq!((ok.content.as_str(), ok.usage, ok.error), ("Hi", Some((3, 1)), None));
        let cut = read_stream(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n");
        assert_eq!(cut.error.as_deref(), Some("stream_cut"));
        let broken =
            read_stream(b"data: {\"error\":{\"code\":\"upstream_cut\",\"message\":\"x\"}}\n\ndata: [DONE]\n\n");
        assert_eq!(broken.error.as_deref(), Some("upstream_cut"));
    }

    #[test]
    fn an_error_tells_calls_from_skips() {
        let m =
            "all models of `chat` failed: a/x: skipped_open (breaker open); b/y: skipped_dead (provider dead: auth)";
        assert_eq!(attempts_of(m), (true, 0));
        assert_eq!(
            attempts_of("all models of `chat` failed: a/x: upstream_error (HTTP 502: bad); b/y: saturated"),
            (false, 1)
        );
        assert_eq!(attempts_of("all models of `chat` failed: no model was available"), (true, 0));
        assert_eq!(attempts_of("the gateway is at its concurrency limit; retry shortly"), (false, 0));
    }

    #[test]
    fn validity_follows_the_requested_output() {
        let cache = crate::normalize::SchemaCache::default();
        let valid = |o: &Output, c: &str| valid(o, c, &cache);
        assert!(valid(&Output::Text, "hello"));
        assert!(!valid(&Output::Text, "  "));
        assert!(valid(&Output::Json, r#"{"a":1}"#));
        assert!(!valid(&Output::Json, "```json\n{\"a\":1}\n```"));
        assert!(!valid(&Output::Json, "[1]"));
        let schema = json!({"type": "object", "required": ["name"]});
        assert!(valid(&Output::Schema(schema.clone()), r#"{"name":"x"}"#));
        assert!(!valid(&Output::Schema(schema), r#"{"Name":"x"}"#));
        // A draft-07 schema is held to draft-07, as the gateway holds it.
        let zod = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                         "required": ["name"], "additionalProperties": false, "properties": {"name": {"type": "string"}}});
        assert!(!valid(&Output::Schema(zod), r#"{"name":"x","extra":1}"#));
    }

    #[test]
    fn an_error_body_gives_its_code() {
        let r = read_whole(br#"{"error":{"message":"m","type":"t","code":"all_models_failed","param":null}}"#);
        assert_eq!(r.error.as_deref(), Some("all_models_failed"));
        assert_eq!(read_whole(b"garbage").error.as_deref(), Some("unreadable_body"));
    }
}
