//! The words of every alert, in English and Russian (`alerts.language`).
//! Event kinds, keys, model refs and metric names stay as they are in
//! either language: an operator greps for them.

use super::{clock_text, Event, Language};
use crate::discovery::Rejection;
use std::time::Duration;

/// The message for one event seen at `at_ms`.
pub(super) fn render(e: &Event, at_ms: u64, lang: Language) -> String {
    match lang {
        Language::En => english(e, at_ms),
        Language::Ru => russian(e, at_ms),
    }
}

/// The digest of `count` more events like `last` within `window`, sent at `at_ms`.
pub(super) fn digest(last: &Event, count: u64, window: Duration, lang: Language, at_ms: u64) -> String {
    let w = span(window, lang);
    match (last, lang) {
        (Event::HandoffQueued { cascade, .. }, Language::En) => {
            format!("{count} request(s) queued for an operator in {cascade} in the last {w}.")
        }
        (Event::HandoffQueued { cascade, .. }, Language::Ru) => {
            format!("{count} запрос(ов) передано оператору в каскаде {cascade} за последние {w}.")
        }
        (Event::BreakerOpened { model, reason }, Language::En) => {
            format!("Breaker for {model} re-opened {count} time(s) in the last {w} (probes failed); last: {reason}.")
        }
        (Event::BreakerOpened { model, reason }, Language::Ru) => {
            format!("Предохранитель {model} снова разомкнулся {count} раз(а) за последние {w} (пробы не прошли); последняя причина: {reason}.")
        }
        (Event::CascadeDead { cascade }, Language::En) => {
            format!("Every model of cascade {cascade} failed for {count} more request(s) in the last {w}.")
        }
        (Event::CascadeDead { cascade }, Language::Ru) => {
            format!("Все модели каскада {cascade} не ответили ещё на {count} запрос(ов) за последние {w}.")
        }
        (e, Language::En) => {
            format!("{} (repeated {count} time(s) in the last {w})", english(e, at_ms).trim_end_matches('.'))
        }
        (e, Language::Ru) => {
            format!("{} (повторилось {count} раз(а) за последние {w})", russian(e, at_ms).trim_end_matches('.'))
        }
    }
}

/// The resolved message of `e` (a resolving event), whose opening alert
/// went out at `opened_ms`: how long the state lasted, then what ended it.
pub(super) fn resolved(e: &Event, opened_ms: u64, at_ms: u64, lang: Language) -> String {
    let lasted = span(Duration::from_millis(at_ms.saturating_sub(opened_ms)), lang);
    let opened = clock_text(opened_ms);
    match lang {
        Language::En => format!("Resolved after {lasted} (alert of {opened}): {}", english(e, at_ms)),
        Language::Ru => format!("Решено через {lasted} (тревога от {opened}): {}", russian(e, at_ms)),
    }
}

/// Said after a digest whose last state ended before it went out.
pub(super) fn ended(at_ms: u64, lang: Language) -> String {
    match lang {
        Language::En => format!(" Over again since {}.", clock_text(at_ms)),
        Language::Ru => format!(" Снова в норме с {}.", clock_text(at_ms)),
    }
}

/// `38 min`, `45 s`, `2 h 5 min`.
pub(super) fn span(d: Duration, lang: Language) -> String {
    let secs = d.as_secs();
    let (h, m, s) = match lang {
        Language::En => ("h", "min", "s"),
        Language::Ru => ("ч", "мин", "с"),
    };
    match secs {
        0..=119 => format!("{secs} {s}"),
        120..=3599 => format!("{} {m}", secs / 60),
        _ if secs % 3600 / 60 == 0 => format!("{} {h}", secs / 3600),
        _ => format!("{} {h} {} {m}", secs / 3600, secs % 3600 / 60),
    }
}

/// `4.2 s`: an outage's length, to a tenth of a second.
fn seconds(ms: u64) -> String {
    format!("{}.{} s", ms / 1000, ms % 1000 / 100)
}

fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

fn carriers(models: &[(String, f64)]) -> String {
    models.iter().map(|(m, s)| format!("{m} {}", percent(*s))).collect::<Vec<_>>().join(", ")
}

fn english(e: &Event, at_ms: u64) -> String {
    let at = clock_text(at_ms);
    match e {
        Event::CascadeChanged { diff, .. } => format!("Cascade changed: {diff} (at {at})"),
        Event::CascadesChanged { diffs } if diffs.len() == 1 => format!("Cascade changed: {} (at {at})", diffs[0]),
        Event::CascadesChanged { diffs } => {
            format!("Discovery changed {} cascades (at {at}):\n{}", diffs.len(), diffs.join("\n"))
        }
        Event::ModelLeftOut { cascade, model, why } => {
            let fix = why.fix(model.split_once('/').map_or("", |(p, _)| p));
            let fix = fix.map(|f| format!(" — {f}")).unwrap_or_default();
            format!("Cascade {cascade}: preferred {model} is left out: {why}{fix} (since {at}).")
        }
        Event::BreakerOpened { model, reason } => {
            format!("Breaker opened for {model}: {reason}. Traffic goes to the next model since {at}.")
        }
        Event::BreakerClosed { model } => format!("Breaker closed for {model}: it answers again since {at}."),
        Event::QualityDemoted { model, reason, until_ms } => format!(
            "Model {model} demoted for the quality of its answers ({reason}): healthy models go first since {at}; probed after {}.",
            clock_text(*until_ms)
        ),
        Event::QualityRestored { model } => {
            format!("Model {model} is back at its place: its quality probes passed at {at}.")
        }
        Event::KeyRejected { provider } => {
            format!("Provider {provider} rejected its API key (401); all its models are skipped since {at}.")
        }
        Event::CascadeDead { cascade } => {
            format!("Every model of cascade {cascade} failed or is dead; requests get handoff or 503 since {at}.")
        }
        Event::CascadeAlive { cascade } => format!("Cascade {cascade} answers again since {at}."),
        Event::FallbackShareBack { cascade, share, above, since_ms } => format!(
            "Cascade {cascade}: fallback models serve {} of traffic again, under the {} threshold, since {at} \
             (above it since {}).",
            percent(*share),
            percent(*above),
            clock_text(*since_ms)
        ),
        Event::FallbackShare { cascade, share, since_ms, at_ms: seen, models } => {
            let lasted = span(Duration::from_millis(seen.saturating_sub(*since_ms)), Language::En);
            let by = if models.is_empty() { String::new() } else { format!(", carried by {}", carriers(models)) };
            format!(
                "Cascade {cascade}: fallback models (not its first) serve {} of traffic{by}, for {lasted} since {}.",
                percent(*share),
                clock_text(*since_ms)
            )
        }
        Event::HandoffQueued { id, cascade, attempts } => {
            format!("Request {id} of cascade {cascade} queued for a person after {attempts} attempts ({at}).")
        }
        Event::ReloadRejected { summary } => format!("Config reload rejected, the old config stays ({at}): {summary}"),
        Event::RedisDegraded { detail } => format!("Redis unreachable, serving from local state since {at}: {detail}"),
        Event::RedisRestored { down_ms, node, failed_over_from } => {
            let down = seconds(*down_ms);
            match failed_over_from {
                Some(old) => format!(
                    "Redis is back after {down}: failed over from {old} to {node}; sharing state resumed ({at})."
                ),
                None => format!("Redis is back after {down} on {node}; sharing state resumed ({at})."),
            }
        }
        Event::BudgetExhausted { cascade, spent_usd, limit_usd, day } => format!(
            "Cascade {cascade} spent ${spent_usd:.2} of its ${limit_usd:.2} daily budget on {day}; \
             paid models are skipped until 00:00 UTC (since {at})."
        ),
        Event::KeyBudget { key, spent_usd, limit_usd, per, .. } => format!(
            "Key {key} spent ${spent_usd:.2} of its ${limit_usd:.2} budget per {per} ({:.0}%); past it, its requests get 429 insufficient_quota (since {at}).",
            share(*spent_usd, *limit_usd)
        ),
    }
}

/// `spent` as a percentage of `limit`.
fn share(spent: f64, limit: f64) -> f64 {
    if limit > 0.0 {
        spent / limit * 100.0
    } else {
        100.0
    }
}

fn rejection_ru(r: &Rejection) -> String {
    match r {
        Rejection::Inactive => "неактивна в списке моделей".into(),
        Rejection::NoTextOutput => "не выдаёт текст".into(),
        Rejection::ContextUnknown => "контекст неизвестен".into(),
        Rejection::ContextTooSmall { context, min } => format!("контекст {context} < min_context {min}"),
        Rejection::PriceUnknown => "цена неизвестна".into(),
        Rejection::TooExpensive { price, max } => format!("цена ${price}/1M > max_cost_per_1m {max}"),
        Rejection::NotFree => "платная (free_only)".into(),
        Rejection::Excluded { pattern } => format!("id содержит исключённый шаблон `{pattern}`"),
    }
}

fn russian(e: &Event, at_ms: u64) -> String {
    let at = clock_text(at_ms);
    match e {
        Event::CascadeChanged { diff, .. } => format!("Каскад изменился: {diff} ({at})"),
        Event::CascadesChanged { diffs } if diffs.len() == 1 => format!("Каскад изменился: {} ({at})", diffs[0]),
        Event::CascadesChanged { diffs } => {
            format!("Обновление моделей изменило каскады: {} ({at}):\n{}", diffs.len(), diffs.join("\n"))
        }
        Event::ModelLeftOut { cascade, model, why } => {
            let provider = model.split_once('/').map_or("", |(p, _)| p);
            let fix = match why {
                Rejection::PriceUnknown => {
                    format!(" — задайте providers.{provider}.price_per_1m или подсказку в models:")
                }
                Rejection::ContextUnknown => format!(" — задайте context в models: провайдера {provider}"),
                _ => String::new(),
            };
            format!("Каскад {cascade}: предпочтительная модель {model} исключена: {}{fix} (с {at}).", rejection_ru(why))
        }
        Event::BreakerOpened { model, reason } => {
            format!("Предохранитель {model} разомкнут: {reason}. С {at} запросы идут следующей модели.")
        }
        Event::BreakerClosed { model } => format!("Предохранитель {model} замкнут: модель снова отвечает с {at}."),
        Event::QualityDemoted { model, reason, until_ms } => format!(
            "Модель {model} понижена за качество ответов ({reason}): с {at} первыми отвечают исправные модели; проверка после {}.",
            clock_text(*until_ms)
        ),
        Event::QualityRestored { model } => {
            format!("Модель {model} вернулась на своё место: проверки качества прошли в {at}.")
        }
        Event::KeyRejected { provider } => {
            format!("Провайдер {provider} отклонил API-ключ (401); с {at} все его модели пропускаются.")
        }
        Event::CascadeDead { cascade } => {
            format!("Все модели каскада {cascade} недоступны; с {at} запросы уходят оператору или получают 503.")
        }
        Event::CascadeAlive { cascade } => format!("Каскад {cascade} снова отвечает с {at}."),
        Event::FallbackShareBack { cascade, share, above, since_ms } => format!(
            "Каскад {cascade}: резервные модели снова обслуживают {} трафика, ниже порога {}, с {at} \
             (выше порога было с {}).",
            percent(*share),
            percent(*above),
            clock_text(*since_ms)
        ),
        Event::FallbackShare { cascade, share, since_ms, at_ms: seen, models } => {
            let lasted = span(Duration::from_millis(seen.saturating_sub(*since_ms)), Language::Ru);
            let by = if models.is_empty() { String::new() } else { format!(" (несут: {})", carriers(models)) };
            format!(
                "Каскад {cascade}: резервные модели (не первая) обслуживают {} трафика{by} уже {lasted}, с {}.",
                percent(*share),
                clock_text(*since_ms)
            )
        }
        Event::HandoffQueued { id, cascade, attempts } => {
            format!("Запрос {id} каскада {cascade} передан оператору после {attempts} попыток ({at}).")
        }
        Event::ReloadRejected { summary } => format!("Новый конфиг отклонён, работает прежний ({at}): {summary}"),
        Event::RedisDegraded { detail } => {
            format!("Redis недоступен, с {at} работаем на локальном состоянии: {detail}")
        }
        Event::RedisRestored { down_ms, node, failed_over_from } => {
            let down = seconds(*down_ms);
            match failed_over_from {
                Some(old) => format!(
                    "Redis снова доступен через {down}: переключение с {old} на {node}; общее состояние снова делится ({at})."
                ),
                None => format!("Redis снова доступен через {down} на {node}; общее состояние снова делится ({at})."),
            }
        }
        Event::BudgetExhausted { cascade, spent_usd, limit_usd, day } => format!(
            "Каскад {cascade} потратил ${spent_usd:.2} из дневного бюджета ${limit_usd:.2} за {day}; \
             платные модели пропускаются до 00:00 UTC (с {at})."
        ),
        Event::KeyBudget { key, spent_usd, limit_usd, per, .. } => format!(
            "Ключ {key} потратил ${spent_usd:.2} из бюджета ${limit_usd:.2} ({per}, {:.0}%); сверх него запросы получат 429 insufficient_quota (с {at}).",
            share(*spent_usd, *limit_usd)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_as_people_say_them() {
        assert_eq!(span(Duration::from_secs(45), Language::En), "45 s");
        assert_eq!(span(Duration::from_secs(600), Language::En), "10 min");
        assert_eq!(span(Duration::from_secs(38 * 60), Language::Ru), "38 мин");
        assert_eq!(span(Duration::from_secs(7500), Language::En), "2 h 5 min");
        assert_eq!(span(Duration::from_secs(7200), Language::Ru), "2 ч");
    }

    #[test]
    fn russian_alert_text() {
        let e = Event::FallbackShare {
            cascade: "chat".into(),
            share: 0.89,
            since_ms: 0,
            at_ms: 38 * 60_000,
            models: vec![("yandex/yandexgpt".into(), 0.89)],
        };
        assert_eq!(
            e.text_in(0, Language::Ru),
            "Каскад chat: резервные модели (не первая) обслуживают 89% трафика (несут: yandex/yandexgpt 89%) \
             уже 38 мин, с 1970-01-01 00:00:00 UTC."
        );
        assert_eq!(
            e.text(0),
            "Cascade chat: fallback models (not its first) serve 89% of traffic, carried by yandex/yandexgpt 89%, \
             for 38 min since 1970-01-01 00:00:00 UTC."
        );
        let q = Event::HandoffQueued { id: "h1".into(), cascade: "chat".into(), attempts: 3 };
        assert_eq!(
            digest(&q, 12, Duration::from_secs(600), Language::Ru, 0),
            "12 запрос(ов) передано оператору в каскаде chat за последние 10 мин."
        );
        assert_eq!(
            digest(&q, 12, Duration::from_secs(600), Language::En, 0),
            "12 request(s) queued for an operator in chat in the last 10 min."
        );
        let closed = Event::BreakerClosed { model: "p/a".into() };
        assert_eq!(
            digest(&closed, 2, Duration::from_secs(600), Language::En, 1_764_441_000_000),
            "Breaker closed for p/a: it answers again since 2025-11-29 18:30:00 UTC (repeated 2 time(s) in the last 10 min)"
        );
        let left = Event::ModelLeftOut {
            cascade: "free".into(),
            model: "groq/llama-3.3-70b-versatile".into(),
            why: Rejection::PriceUnknown,
        };
        assert!(
            left.text_in(0, Language::Ru).contains("задайте providers.groq.price_per_1m"),
            "{}",
            left.text_in(0, Language::Ru)
        );
        assert!(left.text(0).contains("price unknown — set providers.groq.price_per_1m or a models: hint"));
    }

    #[test]
    fn resolved_messages_say_how_long_it_lasted_in_both_languages() {
        let back = Event::FallbackShareBack { cascade: "support".into(), share: 0.04, above: 0.2, since_ms: 0 };
        let at = 38 * 60_000;
        assert_eq!(
            resolved(&back, 10 * 60_000, at, Language::En),
            "Resolved after 28 min (alert of 1970-01-01 00:10:00 UTC): Cascade support: fallback models serve 4% \
             of traffic again, under the 20% threshold, since 1970-01-01 00:38:00 UTC (above it since \
             1970-01-01 00:00:00 UTC)."
        );
        assert_eq!(
            resolved(&Event::BreakerClosed { model: "gigachat/GigaChat-Pro".into() }, 0, at, Language::Ru),
            "Решено через 38 мин (тревога от 1970-01-01 00:00:00 UTC): Предохранитель gigachat/GigaChat-Pro \
             замкнут: модель снова отвечает с 1970-01-01 00:38:00 UTC."
        );
        assert_eq!(
            resolved(&Event::CascadeAlive { cascade: "chat".into() }, 0, 90_000, Language::En),
            "Resolved after 90 s (alert of 1970-01-01 00:00:00 UTC): Cascade chat answers again since \
             1970-01-01 00:01:30 UTC."
        );
        assert!(resolved(&back, 0, at, Language::Ru).contains("ниже порога 20%"));
    }

    #[test]
    fn a_restored_redis_says_how_long_and_whether_it_failed_over() {
        let back = Event::RedisRestored { down_ms: 4_250, node: "10.0.0.2:6379".into(), failed_over_from: None };
        assert_eq!(
            back.text(0),
            "Redis is back after 4.2 s on 10.0.0.2:6379; sharing state resumed (1970-01-01 00:00:00 UTC)."
        );
        let moved = Event::RedisRestored {
            down_ms: 12_000,
            node: "10.0.0.3:6379".into(),
            failed_over_from: Some("10.0.0.2:6379".into()),
        };
        assert!(moved.text(0).contains("failed over from 10.0.0.2:6379 to 10.0.0.3:6379"), "{}", moved.text(0));
        assert!(moved.text_in(0, Language::Ru).contains("переключение с 10.0.0.2:6379 на 10.0.0.3:6379"));
        assert_eq!(moved.kind(), "redis_restored");
    }
}
