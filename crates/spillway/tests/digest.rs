//! Alerts a person can live with, on a paused clock: repeated events of one
//! kind per cascade become one digest per `repeat_after` window (the first
//! goes out at once), a breaker that re-opens within the window is reported
//! in the next digest rather than swallowed, and `alerts.language: ru`
//! writes the text in Russian while kinds stay English. The generation's
//! jobs run as `serve` starts them; what the sinks would get is read from
//! the bus's tap.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

use spillway::alerts::sink::Message;
use spillway::alerts::Event;
use spillway::gateway::{Gateway, Shared};
use spillway::supervisor::Supervisor;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn yaml(language: &str) -> String {
    format!(
        "providers:
  p:
    kind: mock
    models: [{{ id: a }}]
cascades:
  chat:
    models: [p/a]
  support:
    models: [p/a]
alerts:
  repeat_after: 10m
  language: {language}
"
    )
}

struct Running {
    gw: Gateway,
    tap: mpsc::Receiver<Message>,
    _jobs: Supervisor,
}

async fn running(language: &str) -> Running {
    let config = spillway::config::load_str(&yaml(language), None, &|_| None).unwrap();
    let gw = Gateway::build(config, &Shared::default()).unwrap();
    let tap = gw.shared.alerts.tap(1024).unwrap();
    let jobs = Supervisor::new(CancellationToken::new());
    gw.start_jobs(&jobs);
    // Let the dispatcher take its subscriptions.
    tokio::time::sleep(Duration::from_millis(1)).await;
    Running { gw, tap, _jobs: jobs }
}

fn drain(rx: &mut mpsc::Receiver<Message>) -> Vec<Message> {
    let mut out = Vec::new();
    while let Ok(m) = rx.try_recv() {
        out.push(m);
    }
    out
}

fn queued(n: usize, cascade: &str) -> Event {
    Event::HandoffQueued { id: format!("h{n}"), cascade: cascade.into(), attempts: 3 }
}

#[tokio::test(start_paused = true)]
async fn handoffs_of_an_outage_become_one_digest_per_window() {
    let mut r = running("en").await;
    let bus = r.gw.shared.alerts.clone();
    // A 38-minute outage: a handoff every 21 s in chat (none at a window's
    // edge), and one in support.
    bus.publish(queued(0, "support"));
    for n in 0..109 {
        bus.publish(queued(n, "chat"));
        tokio::time::sleep(Duration::from_secs(21)).await;
    }
    // And 10 quiet minutes after it.
    tokio::time::sleep(Duration::from_secs(600)).await;
    let sent = drain(&mut r.tap);
    let texts: Vec<&str> = sent.iter().map(|m| m.text.as_str()).collect();
    let chat: Vec<&Message> = sent.iter().filter(|m| m.body["key"] == "handoff_queued:chat").collect();
    // The first at once, then one digest per 10-minute window, the last
    // when the window after the outage ends.
    assert!(chat[0].text.starts_with("Request h0 of cascade chat queued for a person"), "{texts:#?}");
    assert_eq!(chat[0].body["count"], 1);
    let digests: Vec<u64> = chat[1..].iter().map(|m| m.body["count"].as_u64().unwrap()).collect();
    assert_eq!(digests, [28, 29, 28, 23], "{texts:#?}");
    assert_eq!(chat[2].text, "29 request(s) queued for an operator in chat in the last 10 min.");
    assert!(chat[1..].iter().all(|m| m.body["digest"] == true && m.body["kind"] == "handoff_queued"));
    assert_eq!(sent.iter().filter(|m| m.body["key"] == "handoff_queued:support").count(), 1, "per cascade");
    assert_eq!(sent.len(), 6, "109 handoffs are 5 messages, not 109: {texts:#?}");
}

#[tokio::test(start_paused = true)]
async fn a_breaker_that_reopens_within_the_window_is_in_the_next_digest() {
    let mut r = running("en").await;
    let bus = r.gw.shared.alerts.clone();
    let opened = |reason: &str| Event::BreakerOpened { model: "p/a".into(), reason: reason.into() };
    bus.publish(opened("5 consecutive failures"));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let first = drain(&mut r.tap);
    assert_eq!(first.len(), 1);
    assert!(first[0].text.starts_with("Breaker opened for p/a: 5 consecutive failures."), "{}", first[0].text);
    // The probe fails twice within the window: held, not swallowed.
    tokio::time::sleep(Duration::from_secs(120)).await;
    bus.publish(opened("probe failed"));
    tokio::time::sleep(Duration::from_secs(240)).await;
    bus.publish(opened("probe failed"));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(drain(&mut r.tap).is_empty(), "nothing before the window ends");
    tokio::time::sleep(Duration::from_secs(180)).await;
    let digest = drain(&mut r.tap);
    assert_eq!(digest.len(), 1, "{digest:?}");
    assert_eq!(
        digest[0].text,
        "Breaker for p/a re-opened 2 time(s) in the last 10 min (probes failed); last: probe failed."
    );
    assert_eq!(digest[0].body["kind"], "breaker_opened");
}

#[tokio::test(start_paused = true)]
async fn russian_alert_text_with_english_kinds() {
    let mut r = running("ru").await;
    let bus = r.gw.shared.alerts.clone();
    bus.publish(Event::CascadeDead { cascade: "chat".into() });
    bus.publish(queued(1, "chat"));
    bus.publish(queued(2, "chat"));
    bus.publish(queued(3, "chat"));
    tokio::time::sleep(Duration::from_secs(601)).await;
    let sent = drain(&mut r.tap);
    let texts: Vec<&str> = sent.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(sent.len(), 3, "{texts:#?}");
    assert!(texts[0].starts_with("Все модели каскада chat недоступны"), "{texts:#?}");
    assert_eq!(sent[0].body["kind"], "cascade_dead", "kinds stay English");
    assert!(texts[1].starts_with("Запрос h1 каскада chat передан оператору после 3 попыток"), "{texts:#?}");
    assert_eq!(texts[2], "2 запрос(ов) передано оператору в каскаде chat за последние 10 мин.");
    assert_eq!(sent[2].body["kind"], "handoff_queued");
}
