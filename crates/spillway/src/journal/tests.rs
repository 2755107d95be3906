use super::*;

#[derive(Default)]
struct Keep(Mutex<Vec<Entry>>);

impl Outlet for Keep {
    fn emit(&self, entry: Entry) {
        self.0.lock().unwrap().push(entry);
    }
}

#[tokio::test(start_paused = true)]
async fn a_journal_is_emitted_once_when_its_last_holder_lets_go() {
    let keep = Arc::new(Keep::default());
    let j = Journal::new(keep.clone(), "req_1", "/v1/chat/completions", None, false);
    j.request("chat", "chat", true, "chat");
    let held = j.clone();
    let start = j.since_start(Instant::now());
    tokio::time::advance(Duration::from_millis(40)).await;
    j.attempt(Attempt {
        model: "a/m".into(),
        outcome: AttemptOutcome::Answered,
        start,
        end: j.since_start(Instant::now()),
        ttft: Some(Duration::from_millis(30)),
        ..Attempt::default()
    });
    j.usage(10, 5, Some(0.25));
    j.usage(1, 2, None);
    j.outcome("ok");
    j.prompt(|| Some("secret prompt".into()));
    j.answer("secret answer");
    drop(j);
    assert!(keep.0.lock().unwrap().is_empty(), "still held");
    drop(held);
    let entries = keep.0.lock().unwrap();
    let v = entries[0].to_json();
    assert_eq!(v["outcome"], "answered");
    assert_eq!(v["ttft_ms"], 30.0);
    assert_eq!(v["latency_ms"], 40.0);
    assert_eq!(v["tokens"]["input"], 11);
    assert_eq!(v["cost_usd"], 0.25);
    assert_eq!(v["attempts"][0]["model"], "a/m");
    assert!(v.get("content").is_none(), "no content unless asked");
}

#[test]
fn outcomes_read_as_one_word() {
    let e = |outcome, status| Entry { outcome, status, ..Entry::default() };
    assert_eq!(e(Some("ok"), Some(200)).outcome_word(), "answered");
    assert_eq!(e(Some("handoff"), Some(200)).outcome_word(), "handoff");
    assert_eq!(e(Some("error"), Some(400)).outcome_word(), "rejected");
    assert_eq!(e(None, Some(401)).outcome_word(), "rejected");
    assert_eq!(e(None, Some(503)).outcome_word(), "error");
    assert_eq!(e(Some("error"), Some(503)).outcome_word(), "error");
    assert_eq!(e(None, None).outcome_word(), "disconnected");
}
