//! A provider's `load:` section: the source, thresholds and profiles.

use super::*;

pub(super) fn compile_load(cx: &mut Ctx, path: &str, l: RawLoad) -> LoadConfig {
    let capacity = |cx: &mut Ctx| match l.capacity {
        Some(c) if c > 0.0 => c,
        _ => {
            cx.err(format!("{path}.capacity"), format!("source `{}` needs a positive `capacity`", l.source));
            1.0
        }
    };
    let source = match l.source.as_str() {
        "vllm_metrics" => match &l.url {
            Some(u) => {
                check_url(cx, &format!("{path}.url"), u);
                LoadSource::VllmMetrics { url: u.clone() }
            }
            None => {
                cx.err(format!("{path}.url"), "source `vllm_metrics` needs `url`");
                LoadSource::Emulated
            }
        },
        "nvml" => LoadSource::Nvml { devices: l.devices.clone().unwrap_or_else(|| vec![0]) },
        "inflight" => LoadSource::Inflight { capacity: capacity(cx) },
        "token_velocity" => LoadSource::TokenVelocity { capacity: capacity(cx) },
        "emulated" => LoadSource::Emulated,
        other => {
            cx.err(
                format!("{path}.source"),
                format!("unknown source `{other}`: expected vllm_metrics, nvml, inflight, token_velocity or emulated"),
            );
            LoadSource::Emulated
        }
    };
    if l.profiles.is_empty() {
        cx.err(format!("{path}.profiles"), "at least one profile is required");
    }
    let last = l.profiles.len().saturating_sub(1);
    let mut previous = f64::NEG_INFINITY;
    let mut profiles = Vec::new();
    for (i, p) in l.profiles.into_iter().enumerate() {
        let ppath = format!("{path}.profiles[{i}]");
        match (p.below, i == last) {
            (Some(_), true) => {
                cx.err(format!("{ppath}.below"), "the last profile takes no `below` (it applies above all others)")
            }
            (None, false) => cx.err(format!("{ppath}.below"), "required on every profile but the last"),
            (Some(b), false) => {
                if !(0.0..=1.0).contains(&b) {
                    cx.err(format!("{ppath}.below"), format!("expected a load between 0 and 1, got {b}"));
                } else if b <= previous {
                    cx.err(format!("{ppath}.below"), "thresholds must increase from one profile to the next");
                }
                previous = b;
            }
            (None, true) => {}
        }
        if let Some(f) = p.max_tokens_factor {
            if !(f > 0.0 && f <= 1.0) {
                cx.err(format!("{ppath}.max_tokens_factor"), format!("expected a factor in (0, 1], got {f}"));
            }
        }
        profiles.push(LoadProfile {
            name: p.name,
            below: p.below,
            system_prompt: p.system_prompt,
            max_tokens_factor: p.max_tokens_factor,
        });
    }
    let hysteresis = l.hysteresis.unwrap_or(0.03);
    if !(0.0..0.5).contains(&hysteresis) {
        cx.err(format!("{path}.hysteresis"), format!("expected a margin between 0 and 0.5, got {hysteresis}"));
    }
    LoadConfig {
        source,
        interval: cx.duration(&format!("{path}.interval"), l.interval.as_ref(), Duration::from_secs(1)),
        profiles,
        hysteresis,
    }
}
