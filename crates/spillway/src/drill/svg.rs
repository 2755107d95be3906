//! The drill's chart: one panel per cascade, a stacked bar per step with
//! the share each model served (handoff in grey, failures in red), fault
//! windows as a band above the bars, and a legend. Plain SVG 1.1 with no
//! scripts or external references, so any browser or image viewer shows it.

use super::report::{clock, secs, CascadeReport, Report};
use std::fmt::Write as _;

const WIDTH: f64 = 960.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const PANEL: f64 = 204.0;
const PLOT: f64 = 120.0;
const TOP: f64 = 40.0;

/// Colours for models in the order they first answered.
const PALETTE: [&str; 8] = ["#2f6fb0", "#3a9d5d", "#e0a030", "#8a5cc2", "#1f9ea8", "#c2607a", "#6b8e23", "#a0522d"];

fn colour(key: &str, i: usize) -> &'static str {
    match key {
        "failed" => "#d13b3b",
        "handoff" => "#9a9a9a",
        _ => PALETTE[i % PALETTE.len()],
    }
}

/// Escapes text for SVG.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Renders the chart.
pub fn render(report: &Report, title: &str) -> String {
    let height = TOP + PANEL * report.cascades.len() as f64 + 8.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="22" font-size="14" font-weight="bold">Drill {}: share of requests served, per {}</text>"#,
        esc(title),
        clock(report.step_s)
    );
    for (i, c) in report.cascades.iter().enumerate() {
        panel(&mut out, report, c, TOP + PANEL * i as f64);
    }
    out.push_str("</svg>\n");
    out
}

fn panel(out: &mut String, report: &Report, c: &CascadeReport, y0: f64) {
    let plot_w = WIDTH - LEFT - RIGHT;
    let top = y0 + 36.0;
    let bottom = top + PLOT;
    let x_of = |s: f64| LEFT + plot_w * (s / report.duration_s.max(f64::MIN_POSITIVE)).clamp(0.0, 1.0);
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="{:.1}" font-size="12" font-weight="bold">{} — answered {:.1}%, p99 {}, {} requests</text>"#,
        y0 + 14.0,
        esc(&c.cascade),
        c.success_rate * 100.0,
        secs(c.latency_s.p99),
        c.requests
    );
    // Fault windows: a band above the bars, one lane per fault so overlaps stay readable.
    let lane = 12.0 / report.faults.len().max(1) as f64;
    for (i, f) in report.faults.iter().enumerate() {
        let (x1, x2) = (x_of(f.from_s), x_of(f.until_s));
        let _ = writeln!(
            out,
            r##"<rect x="{x1:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#d13b3b" opacity="0.45"><title>fault: {}</title></rect>"##,
            top - 15.0 + lane * i as f64,
            (x2 - x1).max(1.0),
            (lane - 1.0).max(1.0),
            esc(&f.label)
        );
    }
    let keys: Vec<&String> = c.served.keys().collect();
    let bar_w = plot_w / c.steps.len().max(1) as f64;
    for s in &c.steps {
        let x = x_of(s.from_s);
        let mut y = bottom;
        for (k, key) in keys.iter().enumerate() {
            let share = s.served.get(*key).copied().unwrap_or(0.0);
            if share <= 0.0 {
                continue;
            }
            let h = PLOT * share;
            y -= h;
            let _ = writeln!(
                out,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{h:.1}" fill="{}"><title>{} {}: {:.1}%</title></rect>"#,
                x + 1.0,
                (bar_w - 2.0).max(0.5),
                colour(key, k),
                clock(s.from_s),
                esc(key),
                share * 100.0
            );
        }
    }
    // Axes: 0/50/100% and a time label every few bars.
    for (share, label) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
        let y = bottom - PLOT * share;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#cccccc" stroke-width="0.5"/><text x="{:.1}" y="{:.1}" text-anchor="end">{label}</text>"##,
            WIDTH - RIGHT,
            LEFT - 4.0,
            y + 4.0
        );
    }
    let every = c.steps.len().div_ceil(12).max(1);
    for s in c.steps.iter().step_by(every) {
        let _ = writeln!(out, r#"<text x="{:.1}" y="{:.1}">{}</text>"#, x_of(s.from_s), bottom + 13.0, clock(s.from_s));
    }
    let mut x = LEFT;
    let legend_y = bottom + 30.0;
    for (k, key) in keys.iter().enumerate() {
        let _ = writeln!(
            out,
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{legend_y:.1}">{}</text>"#,
            legend_y - 9.0,
            colour(key, k),
            x + 14.0,
            esc(key)
        );
        x += 24.0 + 6.5 * key.chars().count() as f64;
    }
    if !report.faults.is_empty() {
        let _ = writeln!(
            out,
            r##"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="#d13b3b" opacity="0.45"/><text x="{:.1}" y="{legend_y:.1}">fault window (above the bars)</text>"##,
            legend_y - 9.0,
            x + 14.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc(r#"a<b & "c">"#), "a&lt;b &amp; &quot;c&quot;&gt;");
    }
}
