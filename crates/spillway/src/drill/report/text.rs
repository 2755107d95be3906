//! The report as text for a terminal: per cascade the figures, the step
//! table and the pass marks.

use super::*;
use std::fmt::Write as _;

impl Report {
    /// Whether every pass mark passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    /// The report as text for a terminal.
    pub fn text(&self, title: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Drill {title}: {} of traffic, {} requests (virtual time; ran in {:.1} s)",
            clock(self.duration_s),
            self.requests,
            self.wall_s
        );
        for f in &self.faults {
            let _ = writeln!(out, "  fault {}–{}  {}", clock(f.from_s), clock(f.until_s), f.label);
        }
        for c in &self.cascades {
            let _ = writeln!(out, "\n{} — {} requests", c.cascade, c.requests);
            let failed: Vec<String> = c.failed.iter().map(|(code, n)| format!("{code} {n}")).collect();
            let _ = writeln!(
                out,
                "  answered {}   handoff {}   failed {}{}",
                pct(c.success_rate),
                pct(c.handoff_rate),
                pct(c.failed_rate),
                if failed.is_empty() { String::new() } else { format!(" ({})", failed.join(", ")) }
            );
            if c.failed_without_attempt > 0 {
                let _ = writeln!(out, "  failed without an attempt: {}", c.failed_without_attempt);
            }
            let _ = writeln!(
                out,
                "  latency mean {}  p50 {}  p90 {}  p99 {}   first byte mean {}  p99 {}",
                secs(c.latency_s.mean),
                secs(c.latency_s.p50),
                secs(c.latency_s.p90),
                secs(c.latency_s.p99),
                secs(c.first_byte_s.mean),
                secs(c.first_byte_s.p99)
            );
            if let (Some(inside), Some(outside)) = (c.latency_in_faults_s, c.latency_outside_faults_s) {
                let _ = writeln!(out, "  latency mean outside faults {} → inside {}", secs(outside), secs(inside));
            }
            let _ = writeln!(
                out,
                "  attempts/request {:.2}   valid output {}   cost ${:.6} (${:.2} a month)",
                c.attempts_mean,
                c.valid_rate.map_or("—".to_string(), pct),
                c.cost_usd,
                c.cost_per_month_usd
            );
            let unpriced =
                if c.unpriced_share > 0.0 { format!("   unpriced {}", pct(c.unpriced_share)) } else { String::new() };
            let _ = writeln!(
                out,
                "  free {}   paid {}{unpriced}   last resort {}",
                pct(c.free_share),
                pct(c.paid_share),
                pct(c.last_resort_share)
            );
            if let Some(d) = &c.discovered {
                out.push_str(&d.text());
            }
            let ranks: Vec<String> =
                c.ranks.iter().filter(|(_, &v)| v > 0.0).map(|(k, v)| format!("{k} {}", pct(*v))).collect();
            let _ = writeln!(out, "  by rank: {}", ranks.join(", "));
            for (m, row) in &c.models {
                let own = row.latency_own_s.map_or("—".to_string(), secs);
                let _ =
                    writeln!(out, "    {m:<32} {:>6}  mean {}  own {own}", pct(row.share), secs(row.latency_mean_s));
            }
            if c.profiles.len() > 1 || c.profiles.keys().any(|k| k != "none") {
                let rows: Vec<String> = c
                    .profiles
                    .iter()
                    .map(|(k, p)| {
                        format!(
                            "{k} {} answers, {:.0} tokens, {} (first byte p99 {})",
                            p.answers,
                            p.tokens_mean,
                            secs(p.latency_mean_s),
                            secs(p.first_byte_p99_s)
                        )
                    })
                    .collect();
                let _ = writeln!(out, "  by load profile: {}", rows.join("; "));
            }
            for (class, row) in &c.classes {
                let profiles: Vec<String> = row.profiles.iter().map(|(k, v)| format!("{k} {}", pct(*v))).collect();
                let _ = writeln!(
                    out,
                    "  class {class}: {} callers, {:.1} requests each, {} answers of {:.0} tokens mean ({})",
                    row.callers,
                    row.per_caller,
                    row.answers,
                    row.tokens_mean,
                    profiles.join(", ")
                );
            }
            let served: Vec<String> =
                c.served.iter().filter(|(_, &v)| v > 0.0).map(|(k, v)| format!("{k} {}", pct(*v))).collect();
            let _ = writeln!(out, "  served by: {}", served.join(", "));
            if !c.served_in_faults.is_empty() {
                let inside: Vec<String> = c
                    .served_in_faults
                    .iter()
                    .filter(|(_, &v)| v > 0.0)
                    .map(|(k, v)| format!("{k} {}", pct(*v)))
                    .collect();
                let _ = writeln!(out, "  inside fault windows: {}", inside.join(", "));
            }
            let tiers: Vec<String> = c.tiers.iter().map(|(k, v)| format!("{k} {}", pct(*v))).collect();
            let _ = writeln!(out, "  tiers: {}", tiers.join(", "));
            out.push_str(&steps_table(c));
        }
        for (provider, row) in &self.load {
            let cells: Vec<String> = row.iter().map(|v| v.map_or("—".to_string(), |v| format!("{v:.2}"))).collect();
            let _ = writeln!(out, "\nLoad of {provider} per {}: {}", clock(self.step_s), cells.join(" "));
        }
        if !self.json.is_empty() {
            if let (Some(sent), Some(after)) = (self.json_valid_as_sent, self.json_valid_after) {
                let _ = writeln!(
                    out,
                    "\nValid JSON over all models: {} as sent → {} after normalization",
                    pct(sent),
                    pct(after)
                );
            }
            let _ = writeln!(out, "\nJSON answers per model (valid as sent → after normalization):");
            for j in &self.json {
                let _ = writeln!(
                    out,
                    "  {:<28} {} → {}  ({} answers)",
                    j.model,
                    pct(j.valid_as_sent),
                    pct(j.valid_after),
                    j.answers
                );
            }
        }
        if !self.alerts.is_empty() {
            let _ = writeln!(out, "\nAlerts ({}):", self.alerts.len());
            for a in &self.alerts {
                let first = a.text.lines().next().unwrap_or_default();
                let _ = writeln!(out, "  {}  {:<18} {first}", clock(a.at_s), a.kind);
            }
        }
        if !self.checks.is_empty() {
            let _ = writeln!(out, "\nChecks:");
            for c in &self.checks {
                let actual = if c.what.ends_with("(min)") {
                    format!("{:.1} min", c.actual)
                } else if c.what.contains("p99") {
                    secs(c.actual)
                } else if c.what.starts_with("cost") {
                    format!("${:.2}", c.actual)
                } else if c.what.contains("(count)") {
                    format!("{:.2}", c.actual).trim_end_matches('0').trim_end_matches('.').to_string()
                } else {
                    pct(c.actual)
                };
                let mark = if c.passed { "pass" } else { "FAIL" };
                let _ = writeln!(out, "  {mark}  {}: {} (got {actual})", c.cascade, c.what);
            }
        }
        out
    }
}

/// The step-by-step table of one cascade.
fn steps_table(c: &CascadeReport) -> String {
    let keys: Vec<&String> = c.served.keys().collect();
    let width = |k: &str| k.len().max(6);
    let mut out = String::new();
    let _ = write!(out, "\n  {:<8} {:>5} {:>9} {:>9}", "time", "reqs", "answered", "p50");
    for k in &keys {
        let _ = write!(out, "  {:>w$}", k, w = width(k));
    }
    out.push('\n');
    for s in &c.steps {
        let _ = write!(
            out,
            "  {:<8} {:>5} {:>9} {:>9}",
            clock(s.from_s),
            s.requests,
            if s.requests == 0 { "—".to_string() } else { pct(s.success_rate) },
            if s.requests == 0 { "—".to_string() } else { secs(s.p50_s) }
        );
        for k in &keys {
            let v = s.served.get(*k).copied().unwrap_or(0.0);
            let _ = write!(out, "  {:>w$}", if s.requests == 0 { "—".to_string() } else { pct(v) }, w = width(k));
        }
        out.push('\n');
    }
    out
}
