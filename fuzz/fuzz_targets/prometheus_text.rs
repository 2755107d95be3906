//! Fuzzes both ends of the Prometheus text format: the load monitor's
//! parser (`spillway::load::prometheus`, fed by a vLLM server's `/metrics`)
//! must not panic on any text; and a label value, however hostile, written
//! by the gateway's own `/metrics` (both the 0.0.4 and OpenMetrics pages)
//! must come back from that parser as exactly that value, on well-formed
//! lines, with no series added.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spillway::load::prometheus;
use spillway::metrics::{to_prometheus_text, Metrics};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(samples) = prometheus::parse(text) {
        for s in samples {
            let _ = (s.label("model"), s.value);
        }
    }
    // A label value is short in practice; a long one only slows the run
    // (the page repeats it on every series of the target).
    let value = match text.char_indices().nth(256) {
        Some((cut, _)) => &text[..cut],
        None => text,
    };
    let metrics = Metrics::new();
    metrics.target("fuzz", "p", value).attempt_ok();
    let openmetrics = metrics.render();
    for page in [to_prometheus_text(&openmetrics), openmetrics] {
        let samples = prometheus::parse(&page).unwrap_or_else(|e| panic!("{e}\n{page}"));
        let ours = samples
            .iter()
            .find(|s| s.name == "spillway_attempts_total" && s.label("result") == Some("ok"))
            .expect("the counted series");
        assert_eq!(ours.label("model"), Some(value));
        assert_eq!(ours.value, 1.0);
        assert!(samples.iter().all(|s| s.name.starts_with("spillway_")), "a forged series:\n{page}");
    }
});
