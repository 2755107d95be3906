//! `kind: mock` — in-process providers for demos, tests and drills (SPEC §11).
//!
//! Each model follows its configured behaviour: latency, time to first
//! token, time per token, injected errors, a per-minute rate limit with
//! `Retry-After`, empty replies, damaged JSON, hangs and outage windows. It
//! produces the same [`Reply`] and [`AttemptError`] values a real upstream's
//! adapter would, so the runner cannot tell the difference. All timing uses
//! tokio's clock, so tests (and `spillway drill`) can pause time.
//!
//! What a mock answers is worked out in [`answer`] (text of a length that
//! follows `max_tokens` and load profiles, JSON valid against the request's
//! schema and then damaged as configured, tool calls); [`wire`] turns it into
//! a completion or a paced stream. A mock also behaves like a server that
//! saturates: with more than `saturate_at` requests in flight to its
//! provider, every token is slower (see [`Pace`]). Beyond the per-minute
//! rate, a model may have Groq's daily caps and a vLLM-like queue
//! ([`caps`]).

mod answer;
mod caps;
mod wire;

#[cfg(test)]
mod caps_tests;
#[cfg(test)]
mod tests;

use super::{AttemptRequest, Reply};
use crate::config::{MockBehavior, ProviderConfig};
use crate::normalize::SchemaCache;
use crate::outcome::{AttemptError, Failure};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Compiled schemas a mock keeps (for its JSON answers and tool arguments).
const SCHEMA_CACHE: usize = 64;

/// A mock provider.
#[derive(Debug)]
pub struct MockProvider {
    models: HashMap<String, MockBehavior>,
    started: Instant,
    /// Request times per model in the last minute, for `rate_limit_per_min`.
    /// A std mutex: held for a few instructions, never across an await.
    window: Mutex<HashMap<String, VecDeque<Instant>>>,
    /// Requests in flight to this provider (all its models), for
    /// `saturate_at`. Shared with the streams still being sent.
    in_flight: Arc<AtomicU64>,
    /// The provider's load profiles as `(system_prompt, max_tokens_factor)`,
    /// heaviest first: a request that carries one of these prompts gets an
    /// answer shortened by its factor, as a model told "answer briefly" would.
    profiles: Vec<(String, f64)>,
    /// The schemas of requests the mock answers (its own cache: the gateway's
    /// belongs to the request path).
    schemas: SchemaCache,
    /// Requests and tokens per model today, for the daily caps.
    daily: caps::Daily,
    /// The queue of each model with a `concurrency`.
    queues: caps::Queues,
}

impl MockProvider {
    /// Builds it from the provider's static models (and its load profiles).
    pub fn new(config: &ProviderConfig) -> Self {
        let mut models: HashMap<String, MockBehavior> =
            config.models.iter().map(|m| (m.id.clone(), m.behavior.clone().unwrap_or_default())).collect();
        // Listed models without a `models:` entry answer as a default mock does.
        for m in config.listing.iter().flatten() {
            models.entry(m.id.clone()).or_insert_with(|| MockBehavior { error_status: 503, ..MockBehavior::default() });
        }
        let profiles = config
            .load
            .iter()
            .flat_map(|l| l.profiles.iter().rev())
            .filter_map(|p| {
                let prompt = p.system_prompt.as_deref().filter(|s| !s.is_empty())?;
                Some((prompt.to_owned(), p.max_tokens_factor.filter(|f| f.is_finite() && *f > 0.0).unwrap_or(1.0)))
            })
            .collect();
        Self {
            models,
            started: Instant::now(),
            window: Mutex::new(HashMap::new()),
            in_flight: Arc::new(AtomicU64::new(0)),
            profiles,
            schemas: SchemaCache::new(SCHEMA_CACHE),
            daily: caps::Daily::default(),
            queues: caps::Queues::default(),
        }
    }

    /// Answers one attempt.
    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let Some(b) = self.models.get(req.model_id) else {
            return Err(AttemptError::new(Failure::NotFound, format!("mock has no model `{}`", req.model_id)));
        };
        let mut guard = InFlight::enter(&self.in_flight);
        let elapsed = self.started.elapsed();
        for o in &b.outages {
            if elapsed >= o.start && elapsed < o.start + o.duration {
                if o.status == 0 {
                    std::future::pending::<()>().await;
                }
                return Err(AttemptError::new(classify(o.status), format!("HTTP {} (mock outage)", o.status)));
            }
        }
        if b.hang {
            std::future::pending::<()>().await;
        }
        if let Some(limit) = b.rate_limit_per_min {
            match self.take_rate_slot(req.model_id, limit) {
                Err(wait) => {
                    return Err(AttemptError::new(
                        Failure::RateLimited { retry_after: Some(wait) },
                        format!("HTTP 429 (mock limit of {limit}/min)"),
                    ));
                }
                // What `x-ratelimit-remaining-requests` over `-limit-requests` would say.
                Ok(left) => req.hints.set_quota_left(Some(f64::from(left) / f64::from(limit.max(1)))),
            }
        }
        if let Some(capped) = self.daily.take(req.model_id, b, elapsed) {
            return Err(capped);
        }
        if b.error_rate > 0.0 && fastrand::f64() < b.error_rate {
            tokio::time::sleep(b.latency).await;
            return Err(AttemptError::new(
                classify(b.error_status),
                format!("HTTP {} (mock injected)", b.error_status),
            ));
        }
        // Past `concurrency`, wait for a place; those working share the speed.
        guard.place = self.queues.enter(req.model_id, b).await;
        let working = b.concurrency.map_or(guard.count(), |c| guard.count().min(u64::from(c)));
        let pace = Pace::of(b, working);
        let cx = answer::Cx {
            model: req.model_id,
            behavior: b,
            body: &req.body,
            schemas: &self.schemas,
            elapsed: self.started.elapsed(),
        };
        let answer = answer::answer(&cx, self.profile_factor(&req.body));
        self.daily.spend(req.model_id, b, u64::from(answer.prompt_tokens) + u64::from(answer.completion_tokens()));
        if !req.stream {
            tokio::time::sleep(pace.before_first + pace.per_token * answer.completion_tokens().saturating_sub(1)).await;
            return Ok(wire::complete(&answer));
        }
        let cut = b.cut_rate > 0.0 && fastrand::f64() < b.cut_rate;
        Ok(Reply::Stream(wire::stream(answer, pace, req.include_usage, guard, cut)))
    }

    /// The factor of the heaviest load profile whose prompt the request's
    /// system messages carry; 1 when none does.
    fn profile_factor(&self, body: &serde_json::Map<String, serde_json::Value>) -> f64 {
        if self.profiles.is_empty() {
            return 1.0;
        }
        let system = answer::system_text(body);
        self.profiles.iter().find(|(prompt, _)| system.contains(prompt.as_str())).map_or(1.0, |(_, f)| *f)
    }

    /// Counts a request against the model's per-minute limit: the requests
    /// left in the minute after it, or `Err(wait)` when the limit is reached.
    fn take_rate_slot(&self, model: &str, limit: u32) -> Result<u32, Duration> {
        let now = Instant::now();
        let minute = Duration::from_secs(60);
        let Ok(mut window) = self.window.lock() else {
            return Ok(limit);
        };
        let times = window.entry(model.to_string()).or_default();
        while times.front().is_some_and(|t| now.duration_since(*t) >= minute) {
            times.pop_front();
        }
        if times.len() >= limit as usize {
            let oldest = times.front().copied().unwrap_or(now);
            return Err(minute.saturating_sub(now.duration_since(oldest)).max(Duration::from_secs(1)));
        }
        times.push_back(now);
        Ok(limit.saturating_sub(u32::try_from(times.len()).unwrap_or(u32::MAX)))
    }
}

/// One request in flight, counted until the answer is sent or dropped
/// (a stream carries it to its end), with its place in the model's queue.
#[derive(Debug)]
struct InFlight {
    count: Arc<AtomicU64>,
    /// How many were in flight, this one included, when it came in.
    at_entry: u64,
    /// Its place among the `concurrency` the model works on, once it has one.
    place: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl InFlight {
    fn enter(count: &Arc<AtomicU64>) -> Self {
        let at_entry = count.fetch_add(1, Ordering::AcqRel) + 1;
        Self { count: Arc::clone(count), at_entry, place: None }
    }

    fn count(&self) -> u64 {
        self.at_entry
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// When a call's tokens come.
#[derive(Clone, Copy, Debug)]
struct Pace {
    /// Until the first token (non-stream: before the whole answer starts).
    before_first: Duration,
    /// Each further token (`1 / tokens_per_s`; none when unset).
    per_token: Duration,
}

impl Pace {
    /// `latency` + `first_token`, and the time per token; with more than
    /// `saturate_at` requests in flight, `first_token` and each token take
    /// `in_flight / saturate_at` times as long — up to `saturate_at` the
    /// server batches requests for free, past it they share its throughput.
    /// The count at the request's arrival holds for its whole answer.
    fn of(b: &MockBehavior, in_flight: u64) -> Self {
        let slow = match b.saturate_at {
            Some(at) if at > 0 && in_flight > u64::from(at) => in_flight as f64 / f64::from(at),
            _ => 1.0,
        };
        let per_token =
            if b.tokens_per_s > 0.0 { Duration::from_secs_f64(slow / b.tokens_per_s) } else { Duration::ZERO };
        Pace { before_first: b.latency + b.first_token.mul_f64(slow), per_token }
    }
}

fn classify(status: u16) -> Failure {
    super::classify_openai_error(status, None, b"")
}
