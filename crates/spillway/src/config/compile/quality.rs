//! `cascades.*.quality`: the rule that demotes a model whose answers come
//! back 200 but bad.

use super::*;
use crate::quality::{Signal, Signals};

/// Compiles one `quality:` block; unset fields take [`QualityConfig`]'s defaults.
pub(super) fn compile_quality(cx: &mut Ctx, path: &str, q: RawQuality) -> QualityConfig {
    let d = QualityConfig::default();
    let signals = match q.signals {
        None => d.signals,
        Some(list) => {
            let mut set = Signals::NONE;
            for (i, label) in list.iter().enumerate() {
                match Signal::parse(label) {
                    Some(s) => set.add(s),
                    None => cx.err(
                        format!("{path}.signals[{i}]"),
                        format!("unknown signal `{label}`: expected one of {}", crate::quality::LABELS.join(", ")),
                    ),
                }
            }
            set
        }
    };
    let window = q.window.unwrap_or(d.window);
    if !(1..=1000).contains(&window) {
        cx.err(format!("{path}.window"), "must be between 1 and 1000");
    }
    let min_answers = q.min_answers.unwrap_or(d.min_answers.min(window));
    if min_answers == 0 || min_answers > window {
        cx.err(format!("{path}.min_answers"), "must be between 1 and `window`");
    }
    let probe_every = q.probe_every.unwrap_or(d.probe_every);
    let probe_answers = q.probe_answers.unwrap_or(d.probe_answers);
    for (name, v) in [("probe_every", probe_every), ("probe_answers", probe_answers)] {
        if v == 0 {
            cx.err(format!("{path}.{name}"), "must be at least 1");
        }
    }
    let demote_for = cx.duration(&format!("{path}.demote_for"), q.demote_for.as_ref(), d.demote_for);
    let demote_max = cx.duration(&format!("{path}.demote_max"), q.demote_max.as_ref(), d.demote_max.max(demote_for));
    if demote_for.is_zero() {
        cx.err(format!("{path}.demote_for"), "must be greater than 0");
    }
    if demote_max < demote_for {
        cx.err(format!("{path}.demote_max"), "must be at least `demote_for`");
    }
    QualityConfig {
        window,
        min_answers,
        max_bad_share: cx.share(&format!("{path}.max_bad_share"), q.max_bad_share, d.max_bad_share),
        signals,
        text: crate::quality::text::TextRules { min_chars: q.min_chars.unwrap_or(d.text.min_chars) },
        demote_for,
        demote_max,
        probe_every,
        probe_answers,
    }
}
