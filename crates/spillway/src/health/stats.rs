//! TTFT statistics: how many samples a model keeps and how they are read.
//! Shared by the local health view and every state store backend.

/// TTFT samples kept per model (locally and in the shared store); its
/// statistic is their median (SPEC §4: `speed_first` ranks by the measured
/// median time to first token).
pub const TTFT_WINDOW: usize = 32;

/// The median of `samples` (the mean of the middle two for an even count).
pub fn median(samples: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = samples.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[mid] } else { (v[mid - 1] + v[mid]) / 2.0 })
}
