//! `health:`: dead marks, the breaker and rate limits.

use super::*;

/// The longest `health.timeouts.total`.
pub(crate) const MAX_TOTAL: Duration = Duration::from_secs(3600);

pub(super) fn compile_health(cx: &mut Ctx, h: RawHealth) -> HealthConfig {
    let b = h.breaker.unwrap_or_default();
    let r = h.retries.unwrap_or_default();
    let t = h.timeouts.unwrap_or_default();
    let breaker = BreakerConfig {
        window: cx.duration("health.breaker.window", b.window.as_ref(), Duration::from_secs(60)),
        consecutive_failures: b.consecutive_failures.unwrap_or(5),
        failure_rate: cx.share("health.breaker.failure_rate", b.failure_rate, 0.30),
        min_requests: b.min_requests.unwrap_or(10),
        open_for: cx.duration("health.breaker.open_for", b.open_for.as_ref(), Duration::from_secs(120)),
        open_min: cx.duration("health.breaker.open_min", b.open_min.as_ref(), Duration::from_secs(10)),
    };
    if breaker.consecutive_failures == 0 {
        cx.err("health.breaker.consecutive_failures", "must be greater than 0");
    }
    let timeouts = TimeoutConfig {
        connect: cx.duration("health.timeouts.connect", t.connect.as_ref(), Duration::from_secs(2)),
        first_token: cx.duration("health.timeouts.first_token", t.first_token.as_ref(), Duration::from_secs(15)),
        idle: cx.duration("health.timeouts.idle", t.idle.as_ref(), Duration::from_secs(30)),
        total: cx.duration("health.timeouts.total", t.total.as_ref(), Duration::from_secs(120)),
    };
    for (name, d) in [
        ("connect", timeouts.connect),
        ("first_token", timeouts.first_token),
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
    HealthConfig {
        dead_ttl: cx.duration("health.dead_ttl", h.dead_ttl.as_ref(), Duration::from_secs(3600)),
        breaker,
        retries: RetryConfig {
            max: r.max.unwrap_or(1),
            backoff: cx.duration("health.retries.backoff", r.backoff.as_ref(), Duration::from_millis(50)),
            jitter: cx.share("health.retries.jitter", r.jitter, 0.5),
        },
        timeouts,
    }
}
