//! `health:` (streams, breaker, retries, timeouts) and `discovery:`.

use schemars::JsonSchema;
use serde::Deserialize;

/// `health:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHealth {
    /// How long a dead mark lasts when the upstream gives no reset time (default `1h`).
    pub dead_ttl: Option<String>,
    /// Circuit breaker per model ref.
    pub breaker: Option<RawBreaker>,
    /// Retries of connect errors and resets; of 429s that name a short
    /// `Retry-After` and of listed 5xx statuses only when configured.
    pub retries: Option<RawRetries>,
    /// Deadlines.
    pub timeouts: Option<RawTimeouts>,
    /// What a stream may get wrong before it counts as broken.
    pub streams: Option<RawStreams>,
}

/// `health.streams`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawStreams {
    /// Stream events per attempt that cannot be read (not JSON, broken
    /// format) which are skipped and counted in
    /// `spillway_stream_events_skipped_total`; one more fails the attempt as
    /// a broken body (default 3; 0 fails at the first).
    pub max_skipped_events: Option<u32>,
}

/// `health.breaker`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBreaker {
    /// Rolling window of the failure-rate rule (default `60s`).
    pub window: Option<String>,
    /// Failures in a row that open the breaker (default 5).
    pub consecutive_failures: Option<u32>,
    /// Failure share over the window that opens it (default 0.30).
    pub failure_rate: Option<f64>,
    /// Requests in the window before the rate rule applies (default 10).
    pub min_requests: Option<u32>,
    /// The longest it stays open before one probe (default `120s`).
    pub open_for: Option<String>,
    /// How long the first open lasts (default `10s`); each failed probe
    /// doubles it, up to `open_for` and up to half as long as the model has
    /// been failing; an answered probe resets it.
    pub open_min: Option<String>,
}

/// `health.retries`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRetries {
    /// Retries per attempt (default 1).
    pub max: Option<u32>,
    /// Base backoff between retries (default `50ms`).
    pub backoff: Option<String>,
    /// Random extra backoff as a share of `backoff` (default 0.5; 0 in tests).
    pub jitter: Option<f64>,
    /// A 429 whose `Retry-After` is at most this long is waited out and the
    /// same model retried once, instead of failing over at once with a dead
    /// mark (default `0`: never wait).
    pub wait_retry_after_up_to: Option<String>,
    /// 5xx statuses on which the same model is retried once, after
    /// `backoff`, before failing over (default none: fail over at once).
    pub on_status: Option<Vec<u16>>,
}

/// `health.timeouts`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTimeouts {
    /// TCP/TLS connect (default `2s`).
    pub connect: Option<String>,
    /// Until the first token (default `15s`), streamed or not: a whole answer
    /// is read from the upstream as a stream where its kind can stream.
    pub first_token: Option<String>,
    /// Until the first token of the last model a request can still use —
    /// none after it is alive, fits the request or has its breaker closed —
    /// where failing over has nowhere to go and a slow answer beats an
    /// error (default: `total`; set it to `first_token` to give up there
    /// too).
    pub last_model_first_token: Option<String>,
    /// Longest silence in the middle of a stream (default `30s`).
    pub idle: Option<String>,
    /// Whole request, every attempt included (default `120s`).
    pub total: Option<String>,
}

/// `discovery:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDiscovery {
    /// Refresh period (default `12h`).
    pub interval: Option<String>,
    /// How long built cascades stay cached (default `24h`).
    pub cache_ttl: Option<String>,
}
