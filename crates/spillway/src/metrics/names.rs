//! Metric names, so tests and docs refer to the same strings.

/// Requests by cascade and outcome.
pub const REQUESTS: &str = "spillway_requests";
/// Upstream attempts by result (SPEC §10's set).
pub const ATTEMPTS: &str = "spillway_attempts";
/// Failed attempts and skips by their finer reason.
pub const ATTEMPT_FAILURES: &str = "spillway_attempt_failures";
/// Answers by tier.
pub const SERVED: &str = "spillway_served";
/// Request latency.
pub const REQUEST_DURATION: &str = "spillway_request_duration_seconds";
/// Time to first token.
pub const TTFT: &str = "spillway_ttft_seconds";
/// Breaker state per model.
pub const BREAKER_STATE: &str = "spillway_breaker_state";
/// Dead mark per model.
pub const MODEL_DEAD: &str = "spillway_model_dead";
/// Load of a monitored provider (0..1; NaN while unknown).
pub const LOAD: &str = "spillway_load";
/// 1 for a monitored provider's active load profile, 0 for the others.
pub const LOAD_PROFILE: &str = "spillway_load_profile";
/// 1 while a provider's load source has failed three intervals in a row.
pub const LOAD_STALE: &str = "spillway_load_stale";
/// Spend in USD by cascade and model.
pub const COST: &str = "spillway_cost_usd";
/// Tokens by model and kind.
pub const TOKENS: &str = "spillway_tokens";
/// Answers of models without a known price (cost counted as 0).
pub const UNPRICED: &str = "spillway_unpriced_answers";
/// Open items in the handoff queue.
pub const HANDOFF_QUEUE_DEPTH: &str = "spillway_handoff_queue_depth";
/// Streams continued on another model after breaking mid-answer.
pub const CONTINUATIONS: &str = "spillway_continuations";
/// Stream events an upstream sent that could not be read, skipped.
pub const STREAM_EVENTS_SKIPPED: &str = "spillway_stream_events_skipped";
/// Requests whose client went away before the answer ended.
pub const CLIENT_DISCONNECTS: &str = "spillway_client_disconnects";
/// Connections closed because their client stopped reading.
pub const SLOW_CLIENT_CUTS: &str = "spillway_slow_client_cuts";
/// Requests switched to another cascade by an escalation rule.
pub const ESCALATIONS: &str = "spillway_escalations";
/// JSON answers by normalization result.
pub const NORMALIZE: &str = "spillway_normalize";
/// Attempts by prompt variant and version.
pub const PROMPT_VARIANTS: &str = "spillway_prompt_variants";
/// Upstream attempts in flight by cascade and provider.
pub const IN_FLIGHT: &str = "spillway_in_flight";
/// Open client connections by serving thread.
pub const SERVER_CONNECTIONS: &str = "spillway_server_connections";
/// 1, with the version and build as labels.
pub const BUILD_INFO: &str = "spillway_build_info";
/// Requests of each virtual key: admitted or refused, by limit.
pub const KEY_REQUESTS: &str = "spillway_key_requests";
/// Tokens of each virtual key by kind.
pub const KEY_TOKENS: &str = "spillway_key_tokens";
/// Spend in USD of each virtual key.
pub const KEY_COST: &str = "spillway_key_cost_usd";
/// Admitted requests per end user of a key (top 20 by first use, then `other`).
pub const KEY_USER_REQUESTS: &str = "spillway_key_user_requests";
/// Requests of callers above their fair share sent past a low free quota.
pub const FAIR_SHARE_DIVERSIONS: &str = "spillway_fair_share_diversions";
/// Attempts of light callers sent one load profile lighter (fair degradation).
pub const FAIR_LOAD_RELIEF: &str = "spillway_fair_load_relief";
/// Request log lines and spans dropped because their queue was full.
pub const TELEMETRY_DROPPED: &str = "spillway_telemetry_dropped";
/// Batches of spans the collector did not take (after retries).
pub const TELEMETRY_EXPORT_FAILURES: &str = "spillway_telemetry_export_failures";
/// Judged answers by quality signal (`ok` when none).
pub const QUALITY_ANSWERS: &str = "spillway_quality_answers";
/// 1 while a model is demoted for the quality of its answers.
pub const QUALITY_DEMOTED: &str = "spillway_quality_demoted";
