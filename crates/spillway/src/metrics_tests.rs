use super::*;

/// A model id that, written raw, closes its label set and adds a series.
const FORGING: &str = "x\"} 1\nforged_series 1\n# TYPE forged counter\nback\\slash";

/// Every line of an exposition is a comment the formats define or a sample
/// the load monitor's parser reads, and only `spillway_*` series exist.
fn assert_well_formed(text: &str) {
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let kind = rest.split(' ').next().unwrap_or("");
            assert!(["HELP", "TYPE", "UNIT", "EOF"].contains(&kind), "stray comment: {line:?}");
            continue;
        }
        let samples = crate::load::prometheus::parse(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        for s in samples {
            assert!(s.name.starts_with("spillway_"), "forged series: {line:?}");
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
