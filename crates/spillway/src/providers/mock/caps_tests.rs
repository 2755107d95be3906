//! The daily caps and the queue of a mock model, on a paused clock.

use super::tests::{call, drain, hello, provider};
use super::*;
use crate::providers::Reply;
use futures_util::StreamExt;

/// Groq's daily request cap: once reached, a 429 whose reset header gives
/// the rest of the day (hours), read back by the gateway's own parser; the
/// next day the model answers again.
#[tokio::test(start_paused = true)]
async fn a_daily_request_cap_answers_429_until_the_day_ends() {
    let p = provider(MockBehavior { requests_per_day: Some(2), ..Default::default() });
    assert!(call(&p, hello(), false).await.is_ok());
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert!(call(&p, hello(), false).await.is_ok());
    tokio::time::advance(Duration::from_secs(20 * 3600)).await;
    let err = call(&p, hello(), false).await.unwrap_err();
    // 21 h into the day: 3 h left.
    assert_eq!(err.failure, Failure::RateLimited { retry_after: Some(Duration::from_secs(3 * 3600)) });
    assert!(err.detail.contains("daily cap of requests"), "{}", err.detail);
    tokio::time::advance(Duration::from_secs(3 * 3600)).await;
    assert!(call(&p, hello(), false).await.is_ok(), "a new day");
}

/// The token cap counts prompt and completion tokens of what was answered.
#[tokio::test(start_paused = true)]
async fn a_daily_token_cap_counts_answered_tokens() {
    let p = provider(MockBehavior { tokens_per_day: Some(150), reply_tokens: Some(100), ..Default::default() });
    assert!(call(&p, hello(), false).await.is_ok());
    assert!(call(&p, hello(), false).await.is_ok(), "100 and some prompt tokens: under 150 before this one");
    let err = call(&p, hello(), true).await.unwrap_err();
    assert!(
        matches!(err.failure, Failure::RateLimited { retry_after: Some(d) } if d == Duration::from_secs(24 * 3600))
    );
    assert!(err.detail.contains("daily cap of tokens"), "{}", err.detail);
}

/// Past `concurrency`, requests wait their turn, first come first served:
/// none is refused, the later first tokens come later, and the speed of
/// those working does not suffer.
#[tokio::test(start_paused = true)]
async fn past_its_concurrency_a_model_queues() {
    let b = MockBehavior {
        first_token: Duration::from_millis(100),
        tokens_per_s: 10.0,
        reply_tokens: Some(11),
        concurrency: Some(2),
        ..Default::default()
    };
    let p = std::sync::Arc::new(provider(b));
    let t = Instant::now();
    let mut firsts = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..5u64 {
        let p = p.clone();
        tasks.spawn(async move {
            let Ok(Reply::Stream(mut s)) = call(&p, hello(), true).await else { panic!("expected a stream") };
            let first = s.next().await.map(|_| Instant::now());
            drain(s).await;
            (i, first)
        });
        tokio::task::yield_now().await;
    }
    while let Some(done) = tasks.join_next().await {
        let (i, first) = done.unwrap();
        firsts.push((i, first.unwrap() - t));
    }
    firsts.sort();
    let ms: Vec<u128> = firsts.iter().map(|(_, d)| d.as_millis()).collect();
    // Each answer holds its place 1.1 s (100 ms, then 10 gaps of 100 ms).
    assert_eq!(ms, [100, 100, 1200, 1200, 2300], "two at a time, in arrival order");
}

/// Whole answers wait their place as streamed ones do.
#[tokio::test(start_paused = true)]
async fn whole_answers_queue_too() {
    let p = provider(MockBehavior { latency: Duration::from_secs(1), concurrency: Some(1), ..Default::default() });
    let t = Instant::now();
    let (a, b) = tokio::join!(call(&p, hello(), false), call(&p, hello(), false));
    assert!(a.is_ok() && b.is_ok());
    assert_eq!(t.elapsed(), Duration::from_secs(2), "one at a time");
}
