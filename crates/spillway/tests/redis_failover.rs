//! A Sentinel failover under load: two `spillway serve` processes share
//! state through `redis+sentinel://` (a master, a replica, three
//! Sentinels, all started here), the master is killed with `kill -9` while
//! both serve requests streamed and whole, and:
//!
//! - no request fails (the request path never waits on Redis);
//! - both instances reconnect to the promoted master by themselves, and
//!   log and alert the failover with the old and new addresses;
//! - what was shared before (a dead mark, a handoff item) is there on the
//!   promoted master — a third instance started after reads it — and new
//!   sharing (a breaker opened by failures split over both, handoff items
//!   queued on one and listed on the other) works on it.
//!
//! It prints the figures the README quotes: requests during the failover,
//! lost, seconds until both instances share again.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod redis_support;

use redis_support::instance::*;
use redis_support::sentinel::Sentinels;
use redis_support::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use test_upstreams::{FakeUpstream, Reply};

/// Two cascades beside `c` (every upstream, up1 answering): `h`, whose one
/// model always fails, so requests are handed off; `s`, which streams.
const EXTRA: &str = "  h:\n    models: [up2/m]\n    handoff: true\n  s:\n    models: [up3/m]\n";

/// Counts of the load: sent, answered 200, anything else.
#[derive(Default)]
struct Load {
    sent: AtomicU64,
    ok: AtomicU64,
    failed: AtomicU64,
}

/// Sends chat requests to `url` until `stop`, alternating streamed (to `s`)
/// and whole (to `c`).
async fn load(url: String, load: Arc<Load>, stop: Arc<AtomicBool>) {
    let mut stream = false;
    while !stop.load(Ordering::Relaxed) {
        stream = !stream;
        let model = if stream { "s" } else { "c" };
        let body =
            serde_json::json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "Hi"}]});
        load.sent.fetch_add(1, Ordering::Relaxed);
        let answered = match client().post(format!("{url}/v1/chat/completions")).json(&body).send().await {
            Ok(r) if r.status() == 200 => {
                let text = r.text().await.unwrap_or_default();
                // A stream counts once its end arrived; a whole answer once read.
                !stream || text.contains("[DONE]")
            }
            _ => false,
        };
        let counter = if answered { &load.ok } else { &load.failed };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

async fn handoff_ids(inst: &Instance) -> Vec<String> {
    let v = inst.admin("/admin/handoff?status=open").await;
    v["data"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_string()).collect()
}

async fn handoff(inst: &Instance) -> String {
    let body = serde_json::json!({"model": "h", "messages": [{"role": "user", "content": "Help"}]});
    let r = client().post(format!("{}/v1/chat/completions", inst.url)).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    r.headers()["x-spillway-handoff-id"].to_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sentinel_failover_under_load_loses_no_request_and_state_carries_over() {
    let Some(mut set) = Sentinels::start().await else {
        unavailable("a_sentinel_failover_under_load (needs redis-server and redis-sentinel)");
        return;
    };
    let (up0, up1, up2, up3, hook) = (
        FakeUpstream::start().await,
        FakeUpstream::start().await,
        FakeUpstream::start().await,
        FakeUpstream::start().await,
        FakeUpstream::start_at("/hook").await,
    );
    up2.set_default(Reply::error(503, "server_error", "down"));
    up3.set_default(Reply::stream(&["from ", "up3"]));
    let (url, prefix, hook_url) = (set.url(), unique_prefix("failover"), format!("{}/hook", hook.origin()));
    let ups = [&up0, &up1, &up2, &up3];
    let a = start_with("a", &url, &prefix, &ups, &hook_url, EXTRA).await;
    let b = start_with("b", &url, &prefix, &ups, &hook_url, EXTRA).await;

    // Shared before the failover: a dead mark (A's 429) and a handoff item.
    up0.push(Reply::error(429, "rate_limit_exceeded", "slow down").header("retry-after", "600"));
    assert_eq!(a.chat().await, (200, "up1/m".to_string()));
    let before = handoff(&a).await;
    let seen = poll(Duration::from_secs(2), || async {
        (b.model_state("up0/m").await["dead"]["reason"] == "rate_limited").then_some(())
    })
    .await;
    assert!(seen.is_some(), "B heard of A's mark:\n{}", b.log());
    // Both writes reach the replica before the master dies (replication is asynchronous).
    let mut master = raw(&url).await;
    let replicas: i64 = redis::cmd("WAIT").arg(1).arg(2000).query_async(&mut master).await.unwrap();
    assert_eq!(replicas, 1);

    let (stats, stop) = (Arc::new(Load::default()), Arc::new(AtomicBool::new(false)));
    let workers: Vec<_> =
        [&a, &b, &a, &b].iter().map(|inst| tokio::spawn(load(inst.url.clone(), stats.clone(), stop.clone()))).collect();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let old = set.first_master();
    let sent_at_kill = stats.sent.load(Ordering::Relaxed);
    let killed = tokio::time::Instant::now();
    set.kill_master();
    for inst in [&a, &b] {
        let degraded = poll(Duration::from_secs(5), || async {
            (inst.readyz().await.1["state"]["degraded"] == true).then_some(())
        });
        assert!(degraded.await.is_some(), "the outage is seen:\n{}", inst.log());
    }
    for inst in [&a, &b] {
        let back = poll(Duration::from_secs(30), || async {
            (inst.readyz().await.1["state"]["degraded"] == false).then_some(())
        });
        assert!(back.await.is_some(), "reconnected to the promoted master:\n{}", inst.log());
    }
    let recovered = killed.elapsed();
    let during = stats.sent.load(Ordering::Relaxed) - sent_at_kill;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    let new = set.master().await.unwrap();
    assert_ne!(new, old, "the Sentinels promoted the replica");
    let (sent, ok, lost) =
        (stats.sent.load(Ordering::Relaxed), stats.ok.load(Ordering::Relaxed), stats.failed.load(Ordering::Relaxed));
    eprintln!(
        "Sentinel failover: {sent} requests under load, {during} during the failover, lost {lost}, \
         both instances sharing again {:.1} s after kill -9 of the master",
        recovered.as_secs_f64()
    );
    assert_eq!((lost, ok), (0, sent), "no request lost");

    // Logged and alerted, with the old and the new master.
    for inst in [&a, &b] {
        assert!(inst.log().contains("Redis failed over"), "the failover is logged:\n{}", inst.log());
    }
    let text = format!("failed over from {old} to {new}");
    let alerted =
        hook.wait_for(Duration::from_secs(5), |h| h.requests().iter().any(|r| r.to_string().contains(&text))).await;
    assert!(alerted, "a redis_restored alert names the failover: {:?}", hook.requests());

    // What was shared before is on the promoted master: a new instance reads it.
    let c = start_with("c", &url, &prefix, &ups, &hook_url, EXTRA).await;
    let dead = poll(Duration::from_secs(2), || async {
        (c.model_state("up0/m").await["dead"]["reason"] == "rate_limited").then_some(())
    })
    .await;
    assert!(dead.is_some(), "the dead mark survived the failover:\n{}", c.log());
    assert!(handoff_ids(&c).await.contains(&before), "the handoff item survived the failover");

    // New sharing works on it: failures split over A and B open one breaker
    // (3 + 2; 5 in a row trip it), and their handoff items are one queue.
    let mut queued = Vec::new();
    for inst in [&a, &b, &a, &b, &a] {
        queued.push(handoff(inst).await);
    }
    for inst in [&a, &b, &c] {
        let open = poll(Duration::from_secs(2), || async {
            (inst.model_state("up2/m").await["breaker"]["state"] == "open").then_some(())
        });
        assert!(open.await.is_some(), "the shared breaker opened everywhere:\n{}", inst.log());
    }
    // An instance whose queue connection still pointed at the old master
    // spools its first items (nothing is lost) and drains them shortly.
    let all = poll(Duration::from_secs(10), || async {
        let listed = handoff_ids(&b).await;
        queued.iter().chain([&before]).all(|id| listed.contains(id)).then_some(())
    })
    .await;
    assert!(all.is_some(), "every item is in the shared queue: {:?} of {queued:?}", handoff_ids(&b).await);
}

fn handoff_item(id: &str) -> spillway::handoff::Item {
    serde_json::from_value(serde_json::json!({
        "id": id, "status": "open", "cascade": "h", "client_key_id": null, "messages": [],
        "attempts": [], "created_ms": 1, "answer": null, "answered_ms": null
    }))
    .unwrap()
}

/// A planned failover (`SENTINEL FAILOVER`): the old master is demoted
/// while alive, so a connection to it can stay open and have its writes
/// refused as `READONLY`; the store must move to the new master all the
/// same, and sharing between two stores resume there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_failover_moves_both_stores_to_the_new_master() {
    use spillway::handoff::Queue;
    use spillway::health::clock::now_ms;
    use spillway::state::redis::RedisStore;
    use spillway::state::{LinkState, StateChange, StateStore, StoredMark};
    let Some(set) = Sentinels::start().await else {
        unavailable("a_planned_failover_moves_both_stores (needs redis-server and redis-sentinel)");
        return;
    };
    let sup = spillway::supervisor::Supervisor::new(tokio_util::sync::CancellationToken::new());
    let prefix = unique_prefix("planned");
    let mut stores = Vec::new();
    for _ in 0..2 {
        let (store, link) = RedisStore::new(&set.url(), &prefix).unwrap();
        sup.spawn(link);
        let mut up = store.link().unwrap();
        tokio::time::timeout(Duration::from_secs(5), up.wait_for(|s| *s == LinkState::Up)).await.unwrap().unwrap();
        stores.push(store);
    }
    let old = set.first_master();
    assert_eq!(stores[0].node(), Some(old.clone()));
    // The handoff queue too: its connection is made before the failover.
    let queue = spillway::handoff::redis::RedisQueue::connect(&set.url(), &prefix).await.unwrap();
    queue.push(handoff_item("ho_before")).await.unwrap();
    let started = tokio::time::Instant::now();
    set.failover().await;
    let moved = poll(Duration::from_secs(30), || async { set.master().await.filter(|m| *m != old) }).await;
    let new = moved.expect("the Sentinels promoted the replica");
    // Marks made by A reach B once both are on the new master.
    let mut heard = stores[1].subscribe();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let shared = 'retry: loop {
        assert!(tokio::time::Instant::now() < deadline, "sharing did not resume after a planned failover");
        let now = now_ms();
        let mark = StoredMark { until_ms: now + 60_000, reason: "rate_limited".into() };
        if stores[0].mark_dead("p/after-failover", mark, now).await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        loop {
            match tokio::time::timeout(Duration::from_millis(200), heard.recv()).await {
                Ok(Ok(StateChange::Dead { key, .. })) if key == "p/after-failover" => break 'retry true,
                Ok(Ok(_)) => {}
                _ => continue 'retry,
            }
        }
    };
    assert!(shared);
    // B only reads: its probe (ROLE, every second) finds its server demoted.
    let followed = poll(Duration::from_secs(10), || async {
        stores.iter().all(|s| s.node().as_deref() == Some(new.as_str())).then_some(())
    })
    .await;
    let nodes: Vec<_> = stores.iter().map(|s| s.node()).collect();
    assert!(followed.is_some(), "every store follows the promoted master {new}: {nodes:?}");
    eprintln!(
        "Planned Sentinel failover: both stores on the new master {:.1} s after SENTINEL FAILOVER",
        started.elapsed().as_secs_f64()
    );
    // An item queued now lands on the new master (a queue that stayed on
    // the old one would write where the demotion discards it), and the one
    // queued before is there.
    let queued = poll(Duration::from_secs(5), || async { queue.push(handoff_item("ho_after")).await.ok() }).await;
    assert!(queued.is_some(), "the queue accepts items after the failover");
    let fresh = spillway::handoff::redis::RedisQueue::connect(&set.url(), &prefix).await.unwrap();
    for id in ["ho_before", "ho_after"] {
        assert!(fresh.get(id).await.unwrap().is_some(), "{id} is on the promoted master");
    }
    sup.stop(Duration::from_secs(2)).await;
}
