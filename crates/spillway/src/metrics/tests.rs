use super::*;

/// A model id that, written raw, closes its label set and adds a series.
const FORGING: &str = "x\"} 1\nforged_series 1\n# TYPE forged counter\nback\\slash";

/// Every line of an exposition is a comment the formats define or a sample
/// the load monitor's parser reads, and only `spillway_*` and the
/// process's own `process_*` series exist.
fn assert_well_formed(text: &str) {
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let kind = rest.split(' ').next().unwrap_or("");
            assert!(["HELP", "TYPE", "UNIT", "EOF"].contains(&kind), "stray comment: {line:?}");
            continue;
        }
        let samples = crate::load::prometheus::parse(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        for s in samples {
            assert!(s.name.starts_with("spillway_") || s.name.starts_with("process_"), "forged series: {line:?}");
        }
    }
}

#[test]
fn label_values_are_escaped_in_both_formats() {
    let m = Metrics::new();
    let t = m.target("direct", "provider", FORGING);
    t.attempt_ok();
    t.usage.tokens(&m, "provider", FORGING)[0].inc();
    let openmetrics = m.render();
    let text = to_prometheus_text(&openmetrics);
    for page in [&openmetrics, &text] {
        assert_well_formed(page);
        assert!(!page.lines().any(|l| l.starts_with("forged")), "{page}");
    }
    // The value reads back as the model id it was.
    let attempts = crate::load::prometheus::parse(&text)
        .unwrap()
        .into_iter()
        .find(|s| s.name == "spillway_attempts_total" && s.label("result") == Some("ok"))
        .unwrap();
    assert_eq!(attempts.label("model"), Some(FORGING));
    assert_eq!(attempts.value, 1.0);
}

#[test]
fn plain_values_are_written_as_they_are() {
    let m = Metrics::new();
    m.cascade("chat").ok.inc();
    assert!(m.render().contains(r#"spillway_requests_total{cascade="chat",outcome="ok"} 1"#));
}

#[test]
fn build_info_and_process_metrics_are_exported_in_both_formats() {
    let m = Metrics::new();
    let openmetrics = m.render();
    assert!(openmetrics.trim_end().ends_with("# EOF"), "process metrics go before the end marker");
    let text = to_prometheus_text(&openmetrics);
    let samples = crate::load::prometheus::parse(&text).unwrap();
    let info = samples.iter().find(|s| s.name == "spillway_build_info").unwrap();
    assert_eq!(info.value, 1.0);
    assert_eq!(info.label("version"), Some(env!("CARGO_PKG_VERSION")));
    if cfg!(target_os = "linux") {
        for name in ["process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds"] {
            assert!(samples.iter().any(|s| s.name == name), "{name} in:\n{text}");
        }
        assert!(text.contains("# TYPE process_cpu_seconds_total counter"), "{text}");
        assert!(!text.contains("# UNIT"), "0.0.4 has no UNIT lines");
    }
}

#[test]
fn request_duration_buckets_reach_past_the_longest_total_deadline() {
    let longest = crate::config::load_str(
        "providers:\n  m:\n    kind: mock\n    models: [{ id: a }]\nhealth:\n  timeouts: { total: 1h }\ncascades:\n  c:\n    models: [m/a]\n",
        None,
        &|_| None,
    )
    .unwrap()
    .health
    .timeouts
    .total;
    let top = REQUEST_DURATION_BUCKETS.last().copied().unwrap();
    assert!(top >= longest.as_secs_f64(), "{top} < {longest:?}");
    assert!(crate::config::load_str(
        "providers:\n  m:\n    kind: mock\n    models: [{ id: a }]\nhealth:\n  timeouts: { total: 2h }\ncascades:\n  c:\n    models: [m/a]\n",
        None,
        &|_| None
    )
    .unwrap_err()
    .to_string()
    .contains("health.timeouts.total"));
    let m = Metrics::new();
    m.cascade("c").duration.observe(150.0);
    let text = to_prometheus_text(&m.render());
    assert!(text.contains("spillway_request_duration_seconds_bucket{le=\"180.0\",cascade=\"c\"} 1"), "{text}");
    assert!(text.contains("spillway_request_duration_seconds_bucket{le=\"120.0\",cascade=\"c\"} 0"), "{text}");
}
