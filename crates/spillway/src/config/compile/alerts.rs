//! `alerts:`.

use super::*;

pub(super) fn compile_alerts(cx: &mut Ctx, a: RawAlerts) -> AlertsConfig {
    let telegram = a.telegram.map(|t| {
        let base = t.api_base.unwrap_or_else(|| "https://api.telegram.org".to_string());
        check_url(cx, "alerts.telegram.api_base", &base);
        (Secret::new(t.bot_token), t.chat_id, base.trim_end_matches('/').to_string())
    });
    let webhook = a.webhook.map(|w| {
        check_url(cx, "alerts.webhook.url", &w.url);
        Secret::new(w.url)
    });
    let fallback_share = a.fallback_share.map(|f| {
        let share = cx.share("alerts.fallback_share.above", Some(f.above), 0.2);
        (share, cx.duration("alerts.fallback_share.for", Some(&f.for_), Duration::from_secs(600)))
    });
    let language = match a.language.as_deref() {
        None | Some("en") => AlertLanguage::En,
        Some("ru") => AlertLanguage::Ru,
        Some(other) => {
            cx.err("alerts.language", format!("unknown language `{other}`: expected en or ru"));
            AlertLanguage::En
        }
    };
    AlertsConfig {
        language,
        telegram,
        webhook,
        fallback_share,
        repeat_after: cx.duration("alerts.repeat_after", a.repeat_after.as_ref(), Duration::from_secs(1800)),
    }
}
