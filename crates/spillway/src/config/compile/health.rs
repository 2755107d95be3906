//! `health:`: dead marks, the breaker and rate limits.

use super::*;

/// The longest `health.timeouts.total`.
pub(crate) const MAX_TOTAL: Duration = Duration::from_secs(3600);

pub(super) fn compile_health(cx: &mut Ctx, h: RawHealth) -> HealthConfig {
    let r = h.retries.unwrap_or_default();
    let t = h.timeouts.unwrap_or_default();
    let defaults = BreakerConfig {
        window: Duration::from_secs(60),
        consecutive_failures: 5,
        failure_rate: 0.30,
        min_requests: 10,
        open_for: Duration::from_secs(120),
        open_min: Duration::from_secs(10),
    };
    let breaker = compile_breaker(cx, "health.breaker", &h.breaker.unwrap_or_default(), &defaults);
    let total = cx.duration("health.timeouts.total", t.total.as_ref(), Duration::from_secs(120));
    let timeouts = TimeoutConfig {
        connect: cx.duration("health.timeouts.connect", t.connect.as_ref(), Duration::from_secs(2)),
        first_token: cx.duration("health.timeouts.first_token", t.first_token.as_ref(), Duration::from_secs(15)),
        last_model_first_token: cx.duration(
            "health.timeouts.last_model_first_token",
            t.last_model_first_token.as_ref(),
            total,
        ),
        idle: cx.duration("health.timeouts.idle", t.idle.as_ref(), Duration::from_secs(30)),
        total,
    };
    for (name, d) in [
        ("connect", timeouts.connect),
        ("first_token", timeouts.first_token),
        ("last_model_first_token", timeouts.last_model_first_token),
        ("idle", timeouts.idle),
        ("total", timeouts.total),
    ] {
        if d.is_zero() {
            cx.err(format!("health.timeouts.{name}"), "must be greater than 0");
        }
    }
    // `spillway_request_duration_seconds` has buckets up to an hour
    // (`metrics::REQUEST_DURATION_BUCKETS`): a longer request would only
    // show as `+Inf`.
    if timeouts.total > MAX_TOTAL {
        cx.err("health.timeouts.total", "must be at most 1h (the request-duration histogram reaches an hour)");
    }
    let mut on_status = 0u128;
    for (i, status) in r.on_status.iter().flatten().enumerate() {
        match status.checked_sub(500).filter(|bit| *bit < 100) {
            Some(bit) => on_status |= 1u128 << bit,
            None => cx.err(format!("health.retries.on_status[{i}]"), format!("{status} is not a 5xx status")),
        }
    }
    HealthConfig {
        dead_ttl: cx.duration("health.dead_ttl", h.dead_ttl.as_ref(), Duration::from_secs(3600)),
        breaker,
        retries: RetryConfig {
            max: r.max.unwrap_or(1),
            backoff: cx.duration("health.retries.backoff", r.backoff.as_ref(), Duration::from_millis(50)),
            jitter: cx.share("health.retries.jitter", r.jitter, 0.5),
            wait_retry_after_up_to: cx.duration(
                "health.retries.wait_retry_after_up_to",
                r.wait_retry_after_up_to.as_ref(),
                Duration::ZERO,
            ),
            on_status,
        },
        timeouts,
        streams: StreamRules { max_skipped_events: h.streams.and_then(|s| s.max_skipped_events).unwrap_or(3) },
    }
}

/// A `breaker:` block (`health.breaker`, `providers.*.breaker`,
/// `cascades.*.breakers.*`): every field it sets, the rest from `base`.
pub(super) fn compile_breaker(cx: &mut Ctx, path: &str, b: &RawBreaker, base: &BreakerConfig) -> BreakerConfig {
    let breaker = BreakerConfig {
        window: cx.duration(&format!("{path}.window"), b.window.as_ref(), base.window),
        consecutive_failures: b.consecutive_failures.unwrap_or(base.consecutive_failures),
        failure_rate: cx.share(&format!("{path}.failure_rate"), b.failure_rate, base.failure_rate),
        min_requests: b.min_requests.unwrap_or(base.min_requests),
        open_for: cx.duration(&format!("{path}.open_for"), b.open_for.as_ref(), base.open_for),
        open_min: cx.duration(&format!("{path}.open_min"), b.open_min.as_ref(), base.open_min),
    };
    if breaker.consecutive_failures == 0 {
        cx.err(format!("{path}.consecutive_failures"), "must be greater than 0");
    }
    breaker
}
