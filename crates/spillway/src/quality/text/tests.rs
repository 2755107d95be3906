//! The text judge's verdicts, and its false-positive guards.

use super::*;

fn text(content: &str) -> Answer<'_> {
    Answer { content, ..Answer::default() }
}

const RU: &str = "Расскажи, пожалуйста, как работает кэширование в браузере?";
const RULES: TextRules = TextRules { min_chars: 1 };

#[test]
fn a_russian_prompt_answered_in_english_or_chinese_is_the_wrong_script() {
    let p = PromptFacts::of(RU);
    assert_eq!(p.script, Some(Script::Cyrillic));
    let en = "The browser keeps a copy of each response and reuses it while it is fresh.";
    assert_eq!(judge(&text(en), p, RULES), Signals::of(&[Signal::WrongScript]));
    let zh = "浏览器会保存每个响应的副本，并在其新鲜时重复使用它。这是缓存的基本原理。";
    assert_eq!(judge(&text(zh), p, RULES), Signals::of(&[Signal::WrongScript]));
    let ru = "Браузер хранит копию каждого ответа и использует её, пока она свежая.";
    assert_eq!(judge(&text(ru), p, RULES), Signals::NONE);
    // The reverse: an English prompt answered in Russian.
    let en_prompt = PromptFacts::of("How does browser caching work?");
    assert_eq!(judge(&text(ru), en_prompt, RULES), Signals::of(&[Signal::WrongScript]));
}

#[test]
fn a_code_answer_to_a_russian_prompt_is_not_the_wrong_script() {
    let p = PromptFacts::of("Напиши функцию сложения на Rust");
    let fenced = "Вот она:\n```rust\nfn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n```";
    assert_eq!(judge(&text(fenced), p, RULES), Signals::NONE);
    let bare = "fn add(a: i32, b: i32) -> i32 { a + b }\nfn sub(a: i32, b: i32) -> i32 { a - b }";
    assert_eq!(judge(&text(bare), p, RULES), Signals::NONE);
    // JSON content is not judged for its script either.
    let json = Answer {
        content: r#"{"name": "Ivan", "city": "Moscow", "status": "active"}"#,
        json: true,
        ..Answer::default()
    };
    assert_eq!(judge(&json, p, RULES), Signals::NONE);
    // A few Latin words in a Russian answer are fine.
    let mixed = "Используйте заголовок Cache-Control и директиву max-age для управления сроком.";
    assert_eq!(judge(&text(mixed), p, RULES), Signals::NONE);
}

#[test]
fn a_short_correct_answer_to_a_short_question_is_not_near_empty() {
    let rules = TextRules { min_chars: 20 };
    assert_eq!(judge(&text("4"), PromptFacts::of("What is 2+2?"), rules), Signals::NONE);
    let long = PromptFacts::of(&"Explain in detail how TCP congestion control works. ".repeat(3));
    assert_eq!(judge(&text("Ok."), long, rules), Signals::of(&[Signal::Empty]));
    assert_eq!(judge(&text("  \n"), PromptFacts::of("Hi"), RULES), Signals::of(&[Signal::Empty]));
    // A tool call needs no content.
    let call = Answer { tool_called: true, ..Answer::default() };
    assert_eq!(judge(&call, long, rules), Signals::NONE);
}

#[test]
fn degenerate_repetition_is_found_and_ordinary_text_is_not() {
    let p = PromptFacts::of("Tell me a story");
    let looped = format!("Once upon a time {}", "the cat sat on the mat and ".repeat(8));
    assert_eq!(judge(&text(&looped), p, RULES), Signals::of(&[Signal::Repetition]));
    let stutter = "no ".repeat(30);
    assert!(judge(&text(&stutter), p, RULES).has(Signal::Repetition));
    let cjk = PromptFacts::of("讲个故事");
    assert!(judge(&text(&"好的".repeat(20)), cjk, RULES).has(Signal::Repetition));
    let prose = "Once upon a time a cat sat on a mat. The mat was red, the cat was grey, and the \
                 afternoon was long. Then a dog came by and the cat left the mat to the dog.";
    assert_eq!(judge(&text(prose), p, RULES), Signals::NONE);
    // Repeated lines of code are code, not a loop.
    let code = format!("```\n{}```", "x = x + 1;\n".repeat(30));
    assert_eq!(judge(&text(&code), p, RULES), Signals::NONE);
}

#[test]
fn a_declared_refusal_is_a_signal() {
    let a = Answer { content: "I can't help with that.", refusal: true, ..Answer::default() };
    assert_eq!(judge(&a, PromptFacts::of("Hi"), RULES), Signals::of(&[Signal::Refusal]));
}
