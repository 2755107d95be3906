//! Monitors under paused time: hysteresis across ticks, staleness, slow
//! sources, and the in-process probes.

use super::*;
use crate::load::state::test_provider;
use crate::metrics::Metrics;

/// Answers from a script, one per read; the last answer repeats.
struct Script(VecDeque<Result<f64, LoadError>>);

impl Script {
    fn new(answers: Vec<Result<f64, LoadError>>) -> Self {
        Script(answers.into())
    }
}

impl Probe for Script {
    async fn read(&mut self) -> Result<f64, LoadError> {
        match self.0.len() {
            0 => Err(LoadError::NoMetrics),
            1 => self.0.front().cloned().unwrap_or(Err(LoadError::NoMetrics)),
            _ => self.0.pop_front().unwrap_or(Err(LoadError::NoMetrics)),
        }
    }
}

/// Never answers.
struct Silent;

impl Probe for Silent {
    async fn read(&mut self) -> Result<f64, LoadError> {
        std::future::pending().await
    }
}

fn vllm_source() -> LoadSource {
    LoadSource::VllmMetrics { url: "http://127.0.0.1:9/metrics".into() }
}

fn profile_of(load: &ProviderLoad) -> String {
    load.snapshot().profile
}

const SECOND: Duration = Duration::from_secs(1);

/// Starts `probe` with a 1 s interval and moves to just after its first tick.
async fn monitor(load: &Arc<ProviderLoad>, probe: impl Probe) -> Supervisor {
    let sup = Supervisor::new(CancellationToken::new());
    sup.spawn(Monitor::new(load.clone(), SECOND, probe));
    tokio::time::sleep(Duration::from_millis(500)).await;
    sup
}

#[tokio::test(start_paused = true)]
async fn hysteresis_across_ticks() {
    let metrics = Metrics::new();
    let load = test_provider(vllm_source(), &metrics);
    // normal < 0.75 ≤ tired < 0.90 ≤ lazy, hysteresis 0.03.
    let steps = [
        (0.50, "normal"),
        (0.80, "tired"),
        (0.74, "tired"), // not 0.03 under 0.75 yet
        (0.73, "tired"),
        (0.71, "normal"),
        (0.95, "lazy"),
        (0.89, "lazy"), // not 0.03 under 0.90
        (0.86, "tired"),
        (0.60, "normal"),
    ];
    let sup = monitor(&load, Script::new(steps.iter().map(|s| Ok(s.0)).collect())).await;
    for (reading, want) in steps {
        assert_eq!(profile_of(&load), want, "after reading {reading}");
        assert_eq!(load.load(), Some(reading));
        tokio::time::sleep(SECOND).await;
    }
    sup.stop(SECOND).await;
}

#[tokio::test(start_paused = true)]
async fn three_failed_intervals_make_the_load_unknown_and_the_profile_normal() {
    let metrics = Metrics::new();
    let load = test_provider(vllm_source(), &metrics);
    let fail = || Err(LoadError::Fetch("connection refused".into()));
    let script = vec![Ok(0.95), fail(), fail(), fail(), Ok(0.5)];
    let sup = monitor(&load, Script::new(script)).await;
    let mut seen = Vec::new();
    for _ in 0..5 {
        let s = load.snapshot();
        seen.push((s.profile, s.load, s.stale));
        tokio::time::sleep(SECOND).await;
    }
    let lazy = |stale| ("lazy".to_owned(), Some(0.95), stale);
    assert_eq!(
        seen,
        [
            lazy(false),
            lazy(false),
            lazy(false),
            ("normal".to_owned(), None, true),
            ("normal".to_owned(), Some(0.5), false),
        ]
    );
    sup.stop(SECOND).await;
}

#[tokio::test(start_paused = true)]
async fn a_source_that_never_answers_goes_stale() {
    let metrics = Metrics::new();
    let load = test_provider(vllm_source(), &metrics);
    load.publish(Some(0.95), false);
    let sup = monitor(&load, Silent).await;
    // Each read times out after one interval; the next starts one interval
    // later: three failures take about six seconds.
    tokio::time::sleep(6 * SECOND).await;
    let s = load.snapshot();
    assert_eq!((s.profile.as_str(), s.load, s.stale), ("normal", None, true));
    assert!(metrics.render().contains(r#"spillway_load_stale{provider="local"} 1"#));
    sup.stop(SECOND).await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_a_monitor_mid_read() {
    let metrics = Metrics::new();
    let load = test_provider(vllm_source(), &metrics);
    let sup = monitor(&load, Silent).await;
    sup.stop(SECOND).await;
    assert_eq!(Arc::strong_count(&load), 1, "the monitor let go of its state");
}

#[tokio::test(start_paused = true)]
async fn velocity_is_tokens_per_second_over_the_window() {
    let metrics = Metrics::new();
    let load = test_provider(LoadSource::TokenVelocity { capacity: 200.0 }, &metrics);
    let mut probe = VelocityProbe::new(load.clone(), 200.0);
    for _ in 0..3 {
        load.record_tokens(100);
        tokio::time::sleep(SECOND).await;
        assert_eq!(probe.read().await, Ok(0.5));
    }
    // A burst far over capacity saturates; then silence drains the window.
    load.record_tokens(10_000);
    tokio::time::sleep(SECOND).await;
    assert_eq!(probe.read().await, Ok(1.0));
    for _ in 0..VelocityProbe::WINDOW {
        tokio::time::sleep(SECOND).await;
        probe.read().await.unwrap();
    }
    assert_eq!(probe.read().await, Ok(0.0));
}

#[tokio::test]
async fn inflight_counts_the_providers_open_attempts() {
    let yaml =
        "providers:\n  local:\n    kind: mock\n    models: [{ id: m }]\ncascades:\n  c:\n    models: [local/m]\n";
    let config = crate::config::load_str(yaml, None, &|_| None).unwrap();
    let p = Provider::build(config.providers["local"].clone(), &config.health).unwrap();
    let mut probe = InflightProbe { provider: p.clone(), capacity: 4.0 };
    assert_eq!(probe.read().await, Ok(0.0));
    let a = p.try_acquire().unwrap();
    let _b = p.try_acquire().unwrap();
    assert_eq!(probe.read().await, Ok(0.5));
    drop(a);
    assert_eq!(probe.read().await, Ok(0.25));
    assert_eq!(ratio(9.0, 0.0), 1.0);
}
