//! What judging an answer's quality costs: the prompt's facts (once per
//! request, when it is parsed), the text judge over the final answer, and
//! the window's bookkeeping — everything a cascade with `quality:` adds per
//! answer besides reading the answer's text.
//!
//! `cargo bench -p spillway --bench quality --profile dev --config
//! 'profile.dev.package.spillway.opt-level=3'` prints the median per answer
//! (and the fastest batch's) for a typical answer (794 characters, about
//! 1.4 KB) and a long one (4,764 characters, about 8.6 KB).

#![allow(clippy::disallowed_methods)] // a benchmark times itself with std's clock
#![allow(clippy::unwrap_used)]

#[path = "support/timing.rs"]
mod timing;

use spillway::config::QualityConfig;
use spillway::health::quality::QualityHealth;
use spillway::quality::text::{judge, Answer, PromptFacts, TextRules};
use spillway::quality::Signals;

fn main() {
    let prompt = "Расскажи, пожалуйста, как работает кэширование в браузере и зачем оно нужно?";
    let typical = "Браузер хранит копию каждого ответа сервера и использует её повторно, пока она свежая. \
Сервер управляет этим заголовком Cache-Control: max-age задаёт срок свежести, no-store запрещает хранение. \
Когда срок истёк, браузер переспрашивает сервер с заголовком If-None-Match, и если ничего не изменилось, \
сервер отвечает 304 без тела. Так страницы открываются быстрее, а сервер и сеть нагружены меньше. "
        .repeat(2);
    let long = typical.repeat(6);
    let rule = QualityConfig::default();
    let window = QualityHealth::default();
    let facts = timing::median_ns(2_000, || {
        std::hint::black_box(PromptFacts::of(std::hint::black_box(prompt)));
    });
    let p = PromptFacts::of(prompt);
    let judge_typical = timing::median_ns(2_000, || {
        let a = Answer { content: std::hint::black_box(&typical), ..Answer::default() };
        std::hint::black_box(judge(&a, p, TextRules::default()));
    });
    let judge_long = timing::median_ns(2_000, || {
        let a = Answer { content: std::hint::black_box(&long), ..Answer::default() };
        std::hint::black_box(judge(&a, p, TextRules::default()));
    });
    let record = timing::median_ns(2_000, || {
        std::hint::black_box(window.record(Signals::NONE, &rule, 0));
    });
    let show =
        |what: String, (median, best): (f64, f64)| println!("{what}: {median:.0} ns (fastest batch {best:.0} ns)");
    show(format!("prompt facts ({} chars)", prompt.chars().count()), facts);
    show(format!("text judge, typical answer ({} chars)", typical.chars().count()), judge_typical);
    show(format!("text judge, long answer ({} chars)", long.chars().count()), judge_long);
    show("window record".into(), record);
}
