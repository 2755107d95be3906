//! The alert dispatcher: one background job per config generation that
//! reads the alert bus and the health registry's events, deduplicates,
//! writes the text, and hands each message to every sink's queue without
//! waiting. The fallback-share rule runs in its own job
//! ([`super::share::ShareJob`]), which may wait on the shared store, and
//! publishes its alerts on the bus.

use super::rule::ShareRule;
use super::share::ShareJob;
use super::sink::{Message, Sink, Worker};
use super::{AlertBus, Event, Outbound};
use crate::config::{AlertsConfig, Secret};
use crate::discovery::DiscoveryEvent;
use crate::discovery::DiscoveryState;
use crate::health::{HealthEvent, HealthRegistry};
use crate::state::{StateEvent, StateStatus};
use crate::supervisor::{BackgroundJob, Supervisor};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

/// The dispatcher job.
pub struct Dispatcher {
    bus: Arc<AlertBus>,
    rx: broadcast::Receiver<Outbound>,
    health: Option<broadcast::Receiver<HealthEvent>>,
    discovery: Option<broadcast::Receiver<DiscoveryEvent>>,
    state: Option<broadcast::Receiver<StateEvent>>,
    sinks: Vec<mpsc::Sender<Message>>,
    handoff_hook: Option<mpsc::Sender<Message>>,
    repeat_after: Duration,
    language: super::Language,
}

/// What one generation's alerting reads: its settings and the shared
/// buses it listens to.
pub struct Wiring<'a> {
    pub config: &'a AlertsConfig,
    /// `handoff.webhook`: told of every queued handoff.
    pub handoff_webhook: Option<&'a Secret>,
    /// The generation's cascades, for the fallback-share rule.
    pub cascades: Vec<String>,
    pub bus: &'a Arc<AlertBus>,
    pub health: &'a HealthRegistry,
    pub discovery: &'a DiscoveryState,
    pub state: &'a Arc<StateStatus>,
}

/// Starts the dispatcher, one worker per sink and the fallback-share job on
/// `supervisor` (one generation's). The subscriptions are taken here, so
/// events published once this returns are seen.
pub fn start(w: Wiring<'_>, supervisor: &Supervisor) {
    let cfg = w.config;
    w.bus.traffic.configure(cfg.fallback_share.map(|(_, d)| d));
    let client = match reqwest::Client::builder().build() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "Cannot build the HTTP client for alerts; alerts are only logged.");
            reqwest::Client::new()
        }
    };
    let mut sinks = Vec::new();
    if let Some((token, chat_id, api_base)) = &cfg.telegram {
        let sink = Sink::Telegram { token: token.clone(), chat_id: chat_id.clone(), api_base: api_base.clone() };
        let (tx, worker) = Worker::new(sink, client.clone());
        supervisor.spawn(worker);
        sinks.push(tx);
    }
    if let Some(url) = &cfg.webhook {
        let (tx, worker) = Worker::new(Sink::Webhook { url: url.clone() }, client.clone());
        supervisor.spawn(worker);
        sinks.push(tx);
    }
    let handoff_hook = w.handoff_webhook.map(|url| {
        let (tx, worker) = Worker::new(Sink::Webhook { url: url.clone() }, client.clone());
        supervisor.spawn(worker);
        tx
    });
    supervisor.spawn(Dispatcher {
        bus: w.bus.clone(),
        rx: w.bus.subscribe(),
        health: Some(w.health.subscribe()),
        discovery: Some(w.discovery.subscribe()),
        state: Some(w.state.subscribe()),
        sinks,
        handoff_hook,
        repeat_after: cfg.repeat_after,
        language: cfg.language,
    });
    if let Some((above, for_)) = cfg.fallback_share {
        supervisor.spawn(ShareJob {
            bus: w.bus.clone(),
            state: w.state.clone(),
            cascades: w.cascades,
            repeat_after: cfg.repeat_after,
            rule: ShareRule::new(above, for_),
        });
    }
}

/// The alert for a health event.
fn from_health(e: HealthEvent) -> Event {
    match e {
        HealthEvent::BreakerOpened { model, reason } => Event::BreakerOpened { model, reason: reason.to_string() },
        HealthEvent::BreakerClosed { model } => Event::BreakerClosed { model },
        HealthEvent::KeyRejected { provider } => Event::KeyRejected { provider },
        HealthEvent::QualityDemoted { model, reason, until_ms } => {
            Event::QualityDemoted { model, reason: reason.label().to_string(), until_ms }
        }
        HealthEvent::QualityRestored { model } => Event::QualityRestored { model },
    }
}

/// The alert for a change of the shared store's link.
fn from_state(e: StateEvent) -> Event {
    match e {
        StateEvent::Degraded { detail } => Event::RedisDegraded { detail },
        StateEvent::Restored { down_ms, node, failed_over_from } => {
            Event::RedisRestored { down_ms, node, failed_over_from }
        }
    }
}

/// The alert for a discovery event, when it is one.
fn from_discovery(e: DiscoveryEvent) -> Option<Event> {
    match e {
        // One message per refresh lists every cascade's diff.
        DiscoveryEvent::RoundChanged { diffs } => {
            Some(Event::CascadesChanged { diffs: diffs.iter().map(ToString::to_string).collect() })
        }
        DiscoveryEvent::PreferredLeftOut { cascade, model, why } => Some(Event::ModelLeftOut { cascade, model, why }),
        DiscoveryEvent::ConfigRejected { errors } => {
            let first = errors.first().cloned().unwrap_or_default();
            Some(Event::ReloadRejected { summary: format!("{} error(s); first: {first}", errors.len()) })
        }
        // Listing failures and thin cascades are logged where they happen.
        _ => None,
    }
}

impl Dispatcher {
    fn emit(&self, event: &Event) {
        let now = crate::health::clock::now_ms();
        if let Some(opener) = event.resolves() {
            self.resolve(&opener, event, now);
            return;
        }
        let first = self.bus.digest.lock().unwrap_or_else(std::sync::PoisonError::into_inner).offer(
            event,
            now,
            self.repeat_after,
        );
        if !first {
            return;
        }
        let opens = event.opens();
        if opens {
            self.bus.open.opened(event.key(), now);
        }
        let text = event.text_in(now, self.language);
        let mut body = json!({"kind": event.kind(), "text": text, "at_ms": now, "key": event.key(), "count": 1});
        if opens {
            body["opens"] = json!(true);
        }
        self.deliver(event.kind(), Message { text, body });
    }

    /// The state `opener` announced has ended: what its digest held, then
    /// the resolved message (see [`super::resolve`]).
    fn resolve(&self, opener: &str, event: &Event, now: u64) {
        let mut digest = self.bus.digest.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(opened_ms) = self.bus.open.close(opener) else {
            // Its alert is only held in a digest (or went out elsewhere):
            // the digest will say it ended.
            digest.ended(opener, now);
            return;
        };
        let held = digest.take_key(opener, now);
        drop(digest);
        if let Some(d) = held {
            // The resolved message right after says it ended.
            self.send_digest(&d, now, false);
        }
        let text = super::text::resolved(event, opened_ms, now, self.language);
        let body = json!({
            "kind": event.kind(), "text": text, "at_ms": now, "key": event.key(), "count": 1,
            "resolves": opener, "opened_ms": opened_ms,
        });
        self.deliver(event.kind(), Message { text, body });
    }

    /// Sends the digests whose window ended.
    fn flush(&self) {
        let now = crate::health::clock::now_ms();
        let due =
            self.bus.digest.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take_due(now, self.repeat_after);
        for d in due {
            self.send_digest(&d, now, true);
        }
    }

    /// One digest, covering its own window: from its opening to `now`. A
    /// state it reports that is still on is open from here: its end will
    /// be a resolved message.
    fn send_digest(&self, d: &super::digest::Due, now: u64, say_end: bool) {
        if d.last.opens() && d.ended_ms.is_none() {
            self.bus.open.opened(d.last.key(), now);
        }
        let window = Duration::from_millis(now.saturating_sub(d.opened_ms));
        let mut text = super::text::digest(&d.last, d.count, window, self.language, now);
        if let Some(ended) = d.ended_ms.filter(|_| say_end && d.last.opens()) {
            text.push_str(&super::text::ended(ended, self.language));
        }
        let body = json!({
            "kind": d.last.kind(), "text": text, "at_ms": now, "key": d.last.key(),
            "count": d.count, "digest": true,
        });
        self.deliver(d.last.kind(), Message { text, body });
    }

    /// When the next digest is due, on tokio's clock.
    fn next_flush(&self) -> Option<tokio::time::Instant> {
        let due =
            self.bus.digest.lock().unwrap_or_else(std::sync::PoisonError::into_inner).next_due(self.repeat_after)?;
        let wait = due.saturating_sub(crate::health::clock::now_ms());
        Some(tokio::time::Instant::now() + Duration::from_millis(wait))
    }

    fn deliver(&self, kind: &'static str, msg: Message) {
        tracing::warn!(alert = kind, "{}", msg.text);
        if let Some(tap) = self.bus.tapped() {
            let _ = tap.try_send(msg.clone());
        }
        self.send(&self.sinks, &msg);
    }

    fn send(&self, sinks: &[mpsc::Sender<Message>], msg: &Message) {
        for tx in sinks {
            if tx.try_send(msg.clone()).is_err() {
                tracing::warn!("An alert sink is backed up; dropping an alert.");
            }
        }
    }

    fn handoff(&self, body: Value) {
        if let Some(tx) = &self.handoff_hook {
            let text = body.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
            self.send(std::slice::from_ref(tx), &Message { text, body });
        }
    }
}

/// The next event of an optional channel; pending forever once it closed.
async fn next_of<T: Clone>(rx: &mut Option<broadcast::Receiver<T>>) -> Option<T> {
    loop {
        let Some(r) = rx.as_mut() else { return std::future::pending().await };
        match r.recv().await {
            Ok(e) => return Some(e),
            Err(RecvError::Lagged(n)) => tracing::warn!(missed = n, "Alert dispatcher fell behind events."),
            Err(RecvError::Closed) => *rx = None,
        }
    }
}

impl BackgroundJob for Dispatcher {
    fn name(&self) -> &'static str {
        "alerts"
    }

    async fn run(mut self, shutdown: CancellationToken) {
        loop {
            let next = self.next_flush();
            let flush = async move {
                match next {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = flush => self.flush(),
                m = self.rx.recv() => match m {
                    Ok(Outbound::Alert(e)) => self.emit(&e),
                    Ok(Outbound::Handoff(body)) => self.handoff(body),
                    Err(RecvError::Lagged(n)) => tracing::warn!(missed = n, "Alert dispatcher fell behind."),
                    Err(RecvError::Closed) => return,
                },
                Some(e) = next_of(&mut self.health) => self.emit(&from_health(e)),
                Some(e) = next_of(&mut self.discovery) => {
                    if let Some(e) = from_discovery(e) {
                        self.emit(&e);
                    }
                }
                Some(e) = next_of(&mut self.state) => self.emit(&from_state(e)),
                () = shutdown.cancelled() => return,
            }
        }
    }
}
