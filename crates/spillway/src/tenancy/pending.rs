//! An admission sent to Redis whose answer never came back to the request:
//! a client that leaves while the admission script is on its way drops the
//! request's future, but Redis still runs the script and records a lease
//! that no [`super::Tab`] will settle. Held across that call, [`Pending`]
//! settles the reservation with nothing used if it is dropped before the
//! answer arrives (Redis runs the two scripts in the order they were sent,
//! so the lease is found and removed; an admission that was never sent
//! leaves nothing, and the settlement adds nothing). An admission that
//! failed (Redis unreachable or past its deadline) is released the same
//! way, in case the script ran after all.

use super::redis::RedisTallies;
use super::Settlement;
use std::sync::Arc;

/// See the module docs; [`Pending::answered`] disarms it.
pub(super) struct Pending {
    armed: Option<(Arc<RedisTallies>, Settlement)>,
}

impl Pending {
    /// Armed for the reservation `s` (its usage: nothing) in `redis`.
    pub(super) fn new(redis: Arc<RedisTallies>, s: Settlement) -> Self {
        Self { armed: Some((redis, s)) }
    }

    /// The admission's answer arrived: a [`super::Tab`] or a refusal takes
    /// over.
    pub(super) fn answered(mut self) {
        self.armed = None;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some((redis, s)) = self.armed.take() else { return };
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        tracing::debug!(key = %s.key_id, "A request left during its admission; its reservation is released.");
        // One short script that must outlive the request it releases.
        #[allow(clippy::disallowed_methods)]
        rt.spawn(async move {
            if let Err(e) = redis.settle(&s).await {
                tracing::debug!(error = %e, key = %s.key_id, "Cannot release a reservation in Redis; its lease ends it.");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenancy::tally::{Ask, Rules, Used};

    /// The test Redis, or `None` to skip — except under `CI=true`.
    fn test_redis(prefix: &str) -> Option<Arc<RedisTallies>> {
        let url = std::env::var("SPILLWAY_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into());
        match RedisTallies::new(&url, prefix) {
            Ok(r) => Some(Arc::new(r)),
            Err(e) if std::env::var("CI").as_deref() == Ok("true") => panic!("Redis unreachable under CI: {e}"),
            Err(e) => {
                eprintln!("skipping: no Redis ({e})");
                None
            }
        }
    }

    async fn in_flight(redis: &RedisTallies, id: &str, now: u64) -> Option<u64> {
        match redis.usage(id, now, 0).await {
            Ok((usage, _)) => Some(usage.in_flight),
            Err(e) if std::env::var("CI").as_deref() == Ok("true") => panic!("Redis unreachable under CI: {e}"),
            Err(_) => None,
        }
    }

    /// A lease the admission script recorded for a request that left before
    /// hearing back is released when the guard drops armed; a guard that
    /// was answered leaves the lease to its tab.
    #[tokio::test]
    async fn a_reservation_nobody_heard_back_from_is_released() {
        let prefix = format!("spillway-test:{:016x}:", fastrand::u64(..));
        let Some(redis) = test_redis(&prefix) else { return };
        let now = crate::health::clock::now_ms();
        let rules = Rules { parallel: 2, budget_micro: u64::MAX, ..Rules::default() };
        let ask = Ask { now_ms: now, tokens: 10, usd_micro: 0, lease_ms: 600_000 };
        let settlement = |rid: &str| Settlement {
            key_id: "k".into(),
            user: None,
            rid: rid.into(),
            now_ms: now,
            periods: (0, 0),
            used: Used::default(),
        };
        for rid in ["left", "kept"] {
            // The script ran: its lease is in Redis.
            let Ok(_) = redis.admit("k", None, &rules, &ask, rid).await else {
                assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "Redis unreachable under CI");
                return;
            };
        }
        assert_eq!(in_flight(&redis, "k", now).await, Some(2));
        Pending::new(redis.clone(), settlement("kept")).answered();
        drop(Pending::new(redis.clone(), settlement("left")));
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while in_flight(&redis, "k", now).await != Some(1) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(in_flight(&redis, "k", now).await, Some(1), "the left request's lease is gone, the kept one stays");
        let _ = redis.settle(&settlement("kept")).await;
    }
}
