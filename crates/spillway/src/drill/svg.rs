//! The drill's chart: one panel per cascade, a stacked bar per step with
//! the requests each model served (its height is the step's volume;
//! handoff in grey, failures in red), the mean latency as a line on its
//! own scale, fault windows shaded and labelled in the image, and a legend. Plain SVG 1.1 with no
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
        r#"<text x="{LEFT}" y="22" font-size="14" font-weight="bold">Drill {}: requests served, per {}</text>"#,
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
        r#"<text x="{LEFT}" y="{:.1}" font-size="12" font-weight="bold">{} — answered {:.1}%, latency mean {} p99 {}, {} requests</text>"#,
        y0 + 14.0,
        esc(&c.cascade),
        c.success_rate * 100.0,
        secs(c.latency_s.mean),
        secs(c.latency_s.p99),
        c.requests
    );
    // Fault windows: shaded over the plot, each labelled in its own lane above it.
    let lane = 12.0 / report.faults.len().max(1) as f64;
    for (i, f) in report.faults.iter().enumerate() {
        let (x1, x2) = (x_of(f.from_s), x_of(f.until_s));
        let _ = writeln!(
            out,
            r##"<rect x="{x1:.1}" y="{top:.1}" width="{:.1}" height="{PLOT:.1}" fill="#d13b3b" opacity="0.08"/>"##,
            (x2 - x1).max(1.0)
        );
        let lane_y = top - 15.0 + lane * i as f64;
        let _ = writeln!(
            out,
            r##"<rect x="{x1:.1}" y="{lane_y:.1}" width="{:.1}" height="{:.1}" fill="#d13b3b" opacity="0.45"><title>fault: {}</title></rect><text x="{:.1}" y="{:.1}" font-size="{:.1}" fill="#8b1a1a">{}</text>"##,
            (x2 - x1).max(1.0),
            (lane - 1.0).max(1.0),
            esc(&f.label),
            x1 + 2.0,
            lane_y + (lane - 1.0).clamp(1.0, 10.0) - 1.0,
            (lane - 1.0).clamp(6.0, 10.0),
            esc(&f.label)
        );
    }
    // Bars: requests per step (volume), stacked by who served them.
    let keys: Vec<&String> = c.served.keys().collect();
    let bar_w = plot_w / c.steps.len().max(1) as f64;
    let most = c.steps.iter().map(|s| s.requests).max().unwrap_or(0).max(1) as f64;
    for s in &c.steps {
        let x = x_of(s.from_s);
        let mut y = bottom;
        for (k, key) in keys.iter().enumerate() {
            let share = s.served.get(*key).copied().unwrap_or(0.0);
            if share <= 0.0 {
                continue;
            }
            let n = share * s.requests as f64;
            let h = PLOT * n / most;
            y -= h;
            let _ = writeln!(
                out,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{h:.1}" fill="{}"><title>{} {}: {:.0} requests ({:.1}%)</title></rect>"#,
                x + 1.0,
                (bar_w - 2.0).max(0.5),
                colour(key, k),
                clock(s.from_s),
                esc(key),
                n,
                share * 100.0
            );
        }
    }
    // Left axis: requests per step.
    for (frac, label) in [(0.0, "0".to_string()), (0.5, format!("{:.0}", most / 2.0)), (1.0, format!("{most:.0}"))] {
        let y = bottom - PLOT * frac;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#cccccc" stroke-width="0.5"/><text x="{:.1}" y="{:.1}" text-anchor="end">{label}</text>"##,
            WIDTH - RIGHT,
            LEFT - 4.0,
            y + 4.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" transform="rotate(-90 {:.1} {:.1})" text-anchor="middle" font-size="9">requests per {}</text>"#,
        LEFT - 34.0,
        top + PLOT / 2.0,
        LEFT - 34.0,
        top + PLOT / 2.0,
        clock(report.step_s)
    );
    // Latency: the mean per step as a line, on its own scale (right axis).
    let slowest = c.steps.iter().map(|s| s.mean_s).fold(0.0, f64::max);
    if slowest > 0.0 {
        let points: Vec<String> = c
            .steps
            .iter()
            .filter(|s| s.requests > 0)
            .map(|s| format!("{:.1},{:.1}", x_of(s.from_s) + bar_w / 2.0, bottom - PLOT * s.mean_s / slowest))
            .collect();
        let _ = writeln!(
            out,
            r##"<polyline points="{}" fill="none" stroke="#111111" stroke-width="1.5"><title>mean latency per step</title></polyline>"##,
            points.join(" ")
        );
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="9" fill="#111111">latency {}</text>"##,
            WIDTH - RIGHT,
            top - 2.0,
            secs(slowest)
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
    let _ = writeln!(
        out,
        r##"<line x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#111111" stroke-width="1.5"/><text x="{:.1}" y="{legend_y:.1}">mean latency</text>"##,
        legend_y - 4.0,
        x + 12.0,
        legend_y - 4.0,
        x + 16.0
    );
    x += 100.0;
    if !report.faults.is_empty() {
        let _ = writeln!(
            out,
            r##"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="#d13b3b" opacity="0.45"/><text x="{:.1}" y="{legend_y:.1}">fault window</text>"##,
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
