//! What judging an answer's quality costs: the prompt's facts (once per
//! request, when it is parsed), the text judge over the final answer, and
//! the window's bookkeeping — everything a cascade with `quality:` adds per
//! answer besides reading the answer's text.
//!
//! `cargo bench -p spillway --bench quality` prints the median per answer
//! for a typical answer (about 600 characters) and a long one (8 KB).

#![allow(clippy::disallowed_methods)] // a benchmark times itself with std's clock
#![allow(clippy::unwrap_used)]

use spillway::config::QualityConfig;
use spillway::health::quality::QualityHealth;
use spillway::quality::text::{judge, Answer, PromptFacts, TextRules};
use spillway::quality::Signals;
use std::time::Instant;

fn median_ns(mut f: impl FnMut()) -> f64 {
    let batch = 2_000u32;
    let mut samples = Vec::new();
    for _ in 0..100 {
        let started = Instant::now();
        for _ in 0..batch {
            f();
        }
        samples.push(started.elapsed().as_nanos() as f64 / f64::from(batch));
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

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
    let facts = median_ns(|| {
        std::hint::black_box(PromptFacts::of(std::hint::black_box(prompt)));
    });
    let p = PromptFacts::of(prompt);
    let judge_typical = median_ns(|| {
        let a = Answer { content: std::hint::black_box(&typical), ..Answer::default() };
        std::hint::black_box(judge(&a, p, TextRules::default()));
    });
    let judge_long = median_ns(|| {
        let a = Answer { content: std::hint::black_box(&long), ..Answer::default() };
        std::hint::black_box(judge(&a, p, TextRules::default()));
    });
    let record = median_ns(|| {
        std::hint::black_box(window.record(Signals::NONE, &rule, 0));
    });
    println!("prompt facts ({} chars): {facts:.0} ns", prompt.chars().count());
    println!("text judge, typical answer ({} chars): {judge_typical:.0} ns", typical.chars().count());
    println!("text judge, long answer ({} chars): {judge_long:.0} ns", long.chars().count());
    println!("window record: {record:.0} ns");
}
