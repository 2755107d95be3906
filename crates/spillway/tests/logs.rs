//! What an operator reads in the log at the default level (`info`, what
//! `spillway serve` logs without `RUST_LOG`): every failed attempt that
//! moves a request on, once, with the model, the reason, the request's id
//! and what happens next — whole and streamed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;

use common::*;

#[tokio::test]
async fn a_failover_is_one_line_at_the_default_level_whole_and_streamed() {
    // The filter `serve` uses when RUST_LOG is unset.
    let logs = Logs::capture("info");
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let yaml = format!(
        "providers:\n{}    models: [{{ id: m }}]\n{}    models: [{{ id: m }}]\n{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, b/m]\n",
        openai_provider("a", &a),
        openai_provider("b", &b),
    );
    let gw = start(&yaml).await;
    b.set_default(Reply::stream(&["fine"]));
    // The 503 first: a 429 would mark `a` dead for the second request.
    let replies = [
        (false, Reply::error(503, "overloaded", "busy")),
        (true, Reply::error(429, "rate_limit_exceeded", "slow down")),
    ];
    for (stream, reply) in replies {
        a.push(reply);
        let id = format!("failover-{stream}");
        let resp = client()
            .post(format!("{}/v1/chat/completions", gw.url))
            .header("x-request-id", &id)
            .json(&chat("chat", stream))
            .send()
            .await
            .unwrap();
        assert_eq!(header(&resp, "x-spillway-model"), "b/m");
        let _ = resp.text().await;
        let text = logs.text();
        let lines: Vec<&str> =
            text.lines().filter(|l| l.contains(&format!("request_id={id}")) && l.contains("Attempt failed")).collect();
        assert_eq!(lines.len(), 1, "one line per failed attempt:\n{text}");
        let line = lines[0];
        assert!(line.contains(" INFO ") || line.contains(" WARN "), "{line}");
        assert!(line.contains("model=a/m") && line.contains("next=\"trying the next model\""), "{line}");
        let reason = if stream { "reason=\"rate_limited\"" } else { "reason=\"upstream_error\"" };
        assert!(line.contains(reason) || line.contains(&reason.replace('"', "")), "{line}");
    }
}
