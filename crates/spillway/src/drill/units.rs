//! How a drill's report writes its numbers: shares and seconds (clock
//! times are `super::times`).

/// `0.987` → `98.7%`; a share that rounds to zero is `0.0%`, never `-0.0%`.
pub fn pct(v: f64) -> String {
    let percent = v * 100.0;
    format!("{:.1}%", if percent.abs() < 0.05 { 0.0 } else { percent })
}

/// Seconds, in ms below one.
pub fn secs(v: f64) -> String {
    if v < 1.0 {
        format!("{:.0} ms", v * 1000.0)
    } else {
        format!("{v:.2} s")
    }
}
