//! Starting a run: the gateway built from the scenario's config on a
//! paused single-threaded runtime, a scratch data directory, the load
//! sampler, and the wait for every answer.

use super::send::send_all;
use super::{AlertSeen, Run};
use crate::drill::scenario::Scenario;
use crate::server::AppState;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

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
                    text: crate::drill::times::relative_times(&m.text, start_ms),
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
