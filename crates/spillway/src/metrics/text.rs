//! The text formats: OpenMetrics as the registry writes it, turned into
//! the Prometheus text format 0.0.4 for scrapers that ask for it.

/// OpenMetrics text (what the registry writes) as the Prometheus text
/// format 0.0.4: a counter's `# HELP`/`# TYPE` name its `_total` samples,
/// and `# UNIT` and `# EOF`, which 0.0.4 does not know, are left out.
pub fn to_prometheus_text(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "].iter().find_map(|p| line.strip_prefix(p).map(|rest| (*p, rest)));
        match meta {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let suffix = if counters.contains(name) && !name.ends_with("_total") { "_total" } else { "" };
                out.push_str(prefix);
                out.push_str(name);
                out.push_str(suffix);
                if !tail.is_empty() {
                    out.push(' ');
                    out.push_str(tail);
                }
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}
