//! The built-in frustration detector behind `escalation: … when: frustrated`
//! (SPEC §8). Runs once per request of a cascade that has such a rule, before
//! the cascade is chosen; a pure function of the request's messages.
//!
//! It reads the last [`TURNS`] `user` messages (string or text-part content;
//! code in ``` fences is skipped, since code is full of `!!`, `???` and
//! UPPER_CASE that say nothing about the user's mood) and looks for:
//!
//! | signal | fires when | weight |
//! |---|---|---|
//! | [`Signal::RepeatedQuestion`] | the latest message nearly repeats an earlier one (≥ 2 content words, stemmed word-set Jaccard ≥ 0.6, function words, greetings and "I asked" ignored) | 0.5 |
//! | [`Signal::NotWorking`] | "doesn't work", "didn't help", "не работает", "не помогло", … | 0.5 after an assistant answer, 0.3 in the opening message |
//! | [`Signal::Useless`] | "useless", "waste of time", "бесполезно", "ерунда", … | 0.5 |
//! | [`Signal::WantsHuman`] | "a real person", "соедините с оператором", … | 0.5 |
//! | [`Signal::Shouting`] | ≥ 12 cased letters, ≥ 70 % of them upper case (Cyrillic too) | 0.35 |
//! | [`Signal::Again`] | "again", "still doesn't", "how many times", "опять", "снова", "сколько можно", … | 0.3 |
//! | [`Signal::Punctuation`] | a run of 3+ `!`/`?`, or a mixed `?!` | 0.2 |
//! | [`Signal::Persistent`] | not-working or useless phrases in 2+ of the turns | 0.3 |
//!
//! A signal found in an older turn counts less (× 0.6 for the previous user
//! turn, × 0.4 for the one before), so a user who complained and then said
//! "thanks, it works now" calms down. Each signal counts once, at its
//! strongest; the score is the sum, capped at 1, and [`THRESHOLD`] (0.5)
//! makes a user frustrated. The weights are chosen so that no weak signal
//! is enough alone: a single `!`, a shouted polite request, a repeated "hello",
//! a first message that reports a bug, or "explain again" stay below it,
//! while any two weak signals, or one strong one, reach it. A "doesn't work"
//! that answers the assistant's answer is strong on its own, because it says
//! the model just failed, which is what escalation is for.

use std::borrow::Cow;

use serde_json::Value;

use super::matcher::matcher;

/// Score at or above which a user counts as frustrated.
pub const THRESHOLD: f64 = 0.5;
/// How many of the latest user messages are read.
pub const TURNS: usize = 3;
/// How much a signal counts by turn, latest first.
const TURN_WEIGHT: [f64; TURNS] = [1.0, 0.6, 0.4];
/// What a "doesn't work" weighs in the first user message, where it states
/// the problem rather than judging an answer.
const OPENING_COMPLAINT_WEIGHT: f64 = 0.3;
/// Longer messages are read as their first and last half of this, so a
/// pasted log costs no more than a short message; complaints sit at the
/// edges of a message.
const MAX_TURN_BYTES: usize = 1024;

/// Something in the messages that suggests frustration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Signal {
    /// The latest message nearly repeats an earlier user message.
    RepeatedQuestion,
    /// "doesn't work", "didn't help", "не работает", …
    NotWorking,
    /// "useless", "waste of time", "бесполезно", …
    Useless,
    /// Asks for a person: "real person", "оператор", …
    WantsHuman,
    /// Mostly upper-case letters.
    Shouting,
    /// "again", "still not", "опять", "снова", …
    Again,
    /// `!!!`, `???`, `?!`.
    Punctuation,
    /// Complaints in more than one of the recent turns.
    Persistent,
}

impl Signal {
    /// Every signal, in the order results list them.
    pub const ALL: [Signal; 8] = [
        Signal::RepeatedQuestion,
        Signal::NotWorking,
        Signal::Useless,
        Signal::WantsHuman,
        Signal::Shouting,
        Signal::Again,
        Signal::Punctuation,
        Signal::Persistent,
    ];

    /// A bounded label for logs and metrics.
    pub fn label(self) -> &'static str {
        match self {
            Signal::RepeatedQuestion => "repeated_question",
            Signal::NotWorking => "not_working",
            Signal::Useless => "useless",
            Signal::WantsHuman => "wants_human",
            Signal::Shouting => "shouting",
            Signal::Again => "again",
            Signal::Punctuation => "punctuation",
            Signal::Persistent => "persistent_complaint",
        }
    }

    fn weight(self) -> f64 {
        match self {
            Signal::RepeatedQuestion | Signal::NotWorking | Signal::Useless | Signal::WantsHuman => 0.5,
            Signal::Shouting => 0.35,
            Signal::Again | Signal::Persistent => 0.3,
            Signal::Punctuation => 0.2,
        }
    }
}

/// The detector's verdict.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Frustration {
    /// `0..=1`; see the module docs for how it adds up.
    pub score: f64,
    /// The signals that fired, in [`Signal::ALL`] order.
    pub signals: Vec<Signal>,
}

impl Frustration {
    /// Whether the score reaches [`THRESHOLD`].
    pub fn is_frustrated(&self) -> bool {
        self.score >= THRESHOLD
    }

    /// Whether `signal` fired.
    pub fn has(&self, signal: Signal) -> bool {
        self.signals.contains(&signal)
    }
}

/// One user turn, prepared once for every check.
struct Turn<'a> {
    /// The text as written (fences dropped, long ones cut), for case and
    /// punctuation.
    text: Cow<'a, str>,
    /// Normalized words separated by single spaces, for phrases and repeats.
    words: String,
    /// An assistant message comes before it: a complaint is about an answer.
    follows_answer: bool,
}

/// Scores the frustration in `messages` (an OpenAI `messages` array).
pub fn detect(messages: &[Value]) -> Frustration {
    let matcher = matcher();
    let first_answer = messages.iter().position(|m| role(m) == Some("assistant"));
    let turns: Vec<Turn<'_>> = messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| role(m) == Some("user"))
        .take(TURNS)
        .map(|(i, m)| {
            let text = prepare(user_text(m));
            let words = normalize(&text);
            Turn { text, words, follows_answer: first_answer.is_some_and(|a| a < i) }
        })
        .collect();

    let mut strength = [0.0f64; Signal::ALL.len()];
    let mut fire = |signal: Signal, w: f64| {
        let s = &mut strength[signal as usize];
        *s = s.max(w);
    };
    let mut complaint_turns = 0;
    let mut tokens: Vec<&str> = Vec::new();
    for (turn, &decay) in turns.iter().zip(TURN_WEIGHT.iter()) {
        tokens.clear();
        tokens.extend(turn.words.split(' ').filter(|w| !w.is_empty()));
        let hits = matcher.scan(&tokens);
        if hits.not_working {
            let w = if turn.follows_answer { Signal::NotWorking.weight() } else { OPENING_COMPLAINT_WEIGHT };
            fire(Signal::NotWorking, w * decay);
        }
        complaint_turns += usize::from(hits.not_working || hits.useless);
        for (signal, hit) in [
            (Signal::Useless, hits.useless),
            (Signal::WantsHuman, hits.wants_human),
            (Signal::Again, hits.again),
            (Signal::Shouting, is_shouting(&turn.text)),
            (Signal::Punctuation, has_heavy_punctuation(&turn.text)),
        ] {
            if hit {
                fire(signal, signal.weight() * decay);
            }
        }
    }
    if complaint_turns >= 2 {
        fire(Signal::Persistent, Signal::Persistent.weight());
    }
    if let Some((latest, earlier)) = turns.split_first() {
        let latest = content_stems(&latest.words);
        if latest.len() >= 2 && earlier.iter().any(|t| is_repeat(&latest, &content_stems(&t.words))) {
            fire(Signal::RepeatedQuestion, Signal::RepeatedQuestion.weight());
        }
    }

    let signals: Vec<Signal> = Signal::ALL.into_iter().filter(|s| strength[*s as usize] > 0.0).collect();
    let score = strength.iter().sum::<f64>().min(1.0);
    Frustration { score, signals }
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

/// String content, or the text parts joined by newlines.
fn user_text(message: &Value) -> Cow<'_, str> {
    match message.get("content") {
        Some(Value::String(s)) => Cow::Borrowed(s),
        Some(Value::Array(parts)) => {
            let texts = parts.iter().filter_map(|p| {
                (p.get("type").and_then(Value::as_str) == Some("text"))
                    .then(|| p.get("text").and_then(Value::as_str))
                    .flatten()
            });
            Cow::Owned(texts.collect::<Vec<_>>().join("\n"))
        }
        _ => Cow::Borrowed(""),
    }
}

/// Drops fenced code and keeps the edges of very long messages.
fn prepare(text: Cow<'_, str>) -> Cow<'_, str> {
    let text = if text.contains("```") {
        // Even-numbered pieces are outside fences; an unclosed fence runs to
        // the end, as Markdown renders it.
        Cow::Owned(text.split("```").step_by(2).collect::<Vec<_>>().join("\n"))
    } else {
        text
    };
    if text.len() <= MAX_TURN_BYTES {
        return text;
    }
    let half = MAX_TURN_BYTES / 2;
    let mut head = half;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    Cow::Owned(format!("{}\n{}", &text[..head], &text[tail..]))
}

/// Lower-cased words separated by single spaces (one allocation for the
/// whole message); `ё` becomes `е` (Russians often skip the dots) and
/// apostrophes vanish so "doesn't", "doesn’t" and "doesnt" agree.
fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_word = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if !in_word && !out.is_empty() {
                out.push(' ');
            }
            in_word = true;
            for l in c.to_lowercase() {
                out.push(if l == 'ё' { 'е' } else { l });
            }
        } else if !matches!(c, '\'' | '’' | 'ʼ' | '`') {
            in_word = false;
        }
    }
    out
}

/// Stemmed topic words: stop words dropped, the rest cut to five letters, a
/// crude stemmer that makes "пароль"/"пароля" and "password"/"passwords"
/// agree. Sorted and deduplicated.
fn content_stems(words: &str) -> Vec<&str> {
    let matcher = matcher();
    let mut stems: Vec<&str> = words
        .split(' ')
        .filter(|w| !w.is_empty() && !matcher.is_stop_word(w))
        .map(|w| w.char_indices().nth(5).map_or(w, |(i, _)| &w[..i]))
        .collect();
    stems.sort_unstable();
    stems.dedup();
    stems
}

/// Near-repeat: Jaccard similarity of the stem sets ≥ 0.6.
fn is_repeat(a: &[&str], b: &[&str]) -> bool {
    let common = a.iter().filter(|s| b.binary_search(s).is_ok()).count();
    let union = a.len() + b.len() - common;
    union > 0 && common as f64 >= 0.6 * union as f64
}

fn is_shouting(text: &str) -> bool {
    let (mut upper, mut cased) = (0usize, 0usize);
    for c in text.chars() {
        if c.is_uppercase() {
            upper += 1;
            cased += 1;
        } else if c.is_lowercase() {
            cased += 1;
        }
    }
    cased >= 12 && upper * 10 >= cased * 7
}

fn has_heavy_punctuation(text: &str) -> bool {
    let (mut run, mut bang, mut ask) = (0, false, false);
    for c in text.chars() {
        match c {
            '!' | '！' => (run, bang) = (run + 1, true),
            '?' | '？' => (run, ask) = (run + 1, true),
            _ => (run, bang, ask) = (0, false, false),
        }
        if run >= 3 || (bang && ask) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use Signal::{NotWorking, Punctuation, Useless};

    /// One case per line: `frustrated? | the signals that fire, exactly |
    /// the conversation`. Turns are separated by ` || `; `S: ` starts a
    /// system message, `A: ` an assistant one, anything else is a user
    /// message, and two user turns in a row get a canned answer in between.
    /// `\n` is a newline.
    const CASES: &str = "
# Controls: not frustrated.
no  | -                                        | How do I reset my password?
no  | -                                        | Как сбросить пароль?
no  | -                                        | Great, that works!
no  | -                                        | Спасибо, всё работает!
no  | -                                        | Hello! || Hello!
no  | -                                        | Hi, how are you? || hi how are you
no  | -                                        | Привет, как дела? || Привет, как дела?
no  | -                                        | Спасибо! || Спасибо!
no  | not_working                              | My script doesn't work: KeyError 'id'
no  | not_working                              | У меня не работает импорт модуля, что делать?
no  | again                                    | What is a monad? || Could you explain that again, more simply?
no  | again                                    | Что такое монада? || Объясни ещё раз, пожалуйста, попроще
no  | -                                        | How do I call the AWS S3 API from NodeJS with JSON?
no  | -                                        | OK USA NATO
no  | -                                        | Are you a human or a bot?
no  | shouting                                 | PLEASE HELP ME WRITE A LETTER TO MY BANK
no  | punctuation                              | Why is it so slow???
no  | -                                        | This may be a stupid question, but what is a closure?
no  | -                                        | Может, глупый вопрос, но как работает GIL?
no  | -                                        | How do I sort a list in Python? || How do I sort a dict in Python by value?
no  | -                                        | Как установить Python на Windows? || Как установить Node.js на Windows?
no  | not_working                              | Fix my regex || It doesn't work || That fixed it, thank you so much!
no  | -                                        | What does this do?\\n```\\nif (!!x) { LOG('DOESNT WORK???') }\\n```
no  | -                                        | Как найти тупой угол треугольника?
no  | -                                        | Explain garbage collection in Go || And in Java?
no  | -                                        | useless || What is 2+2? || And 3+3? || Thanks. What about 4+4?
no  | -                                        | S: USELESS!!! IT DOESN'T WORK || A: Doesn't work? Sorry!!! || Thanks, all good
# Frustrated, English.
yes | repeated_question                        | How do I reset my password? || How do I reset my password?
yes | repeated_question                        | How can I export the report to PDF? || I asked: how can I export the reports to pdf??
yes | not_working,shouting,again               | Set up my VPN || IT STILL DOES NOT WORK
yes | useless                                  | Summarize this article || This is useless.
yes | not_working                              | How do I fix error 500 in nginx? || That doesn’t work.
yes | wants_human                              | I want to talk to a real person
yes | wants_human                              | Can I speak to a human, please
yes | repeated_question,not_working,again,persistent_complaint | Fix my code || Doesn't work || Still doesn't work
yes | again,punctuation                        | What is the price? || Again, what is the price?!
yes | useless,punctuation                      | Book a table || What a waste of time!!!
yes | shouting,punctuation                     | WHY IS NOTHING HAPPENING???
# Frustrated, Russian.
yes | repeated_question                        | Как подключить принтер к ноутбуку? || как подключить принтер к ноутбуку
yes | repeated_question,again                  | Как сбросить пароль? || Я же спрашиваю, как сбросить пароль
yes | not_working,again                        | Настрой роутер || Опять не работает
yes | useless                                  | Переведи текст || Это бесполезно
yes | not_working,shouting                     | Помоги с заказом || ПОЧЕМУ ВЫ НЕ ОТВЕЧАЕТЕ НА МОЙ ВОПРОС
yes | wants_human                              | Соедините меня с оператором
yes | wants_human                              | Дайте мне живого человека
yes | again,punctuation                        | Где мой заказ? || Сколько можно ждать?!
yes | useless,shouting                         | Напиши письмо || ТЫ ВООБЩЕ БЕСПОЛЕЗЕН
yes | not_working                              | Как убрать ошибку? || Не помогло
yes | not_working,again                        | Почини код || Всё ещё не работает
yes | not_working,useless,persistent_complaint | Почини код || Не работает || Всё равно ерунда какая-то
";

    /// `CASES` turn syntax → an OpenAI messages array.
    fn conversation(spec: &str) -> Vec<Value> {
        let mut messages: Vec<Value> = Vec::new();
        for turn in spec.split(" || ") {
            let turn = turn.replace("\\n", "\n");
            let (role, text) = match (turn.strip_prefix("S: "), turn.strip_prefix("A: ")) {
                (Some(t), _) => ("system", t),
                (_, Some(t)) => ("assistant", t),
                _ => ("user", turn.as_str()),
            };
            if role == "user" && messages.last().is_some_and(|m| m["role"] == "user") {
                messages.push(json!({"role": "assistant", "content": "Here is what you can do: …"}));
            }
            messages.push(json!({ "role": role, "content": text }));
        }
        messages
    }

    #[test]
    fn table() {
        let mut count = 0;
        for line in CASES.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let cols: Vec<&str> = line.splitn(3, " | ").map(str::trim).collect();
            let [expect, signals, spec] = cols[..] else { panic!("bad case line: {line}") };
            let got = detect(&conversation(spec));
            let labels: Vec<&str> = got.signals.iter().map(|s| s.label()).collect();
            let want: Vec<&str> = signals.split(',').filter(|s| *s != "-").collect();
            assert_eq!(labels, want, "{line}\n{got:?}");
            assert_eq!(got.is_frustrated(), expect == "yes", "{line}\n{got:?}");
            assert!((0.0..=1.0).contains(&got.score), "{line}");
            count += 1;
        }
        assert!(count >= 30, "{count} cases");
    }

    #[test]
    fn text_parts_are_read_and_other_parts_skipped() {
        let messages = vec![
            json!({"role":"user","content":"Describe the image"}),
            json!({"role":"assistant","content":null,"tool_calls":[]}),
            json!({"role":"user","content":[
                {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},
                {"type":"text","text":"This is useless."}]}),
        ];
        let got = detect(&messages);
        assert_eq!(got.signals, [Useless]);
        assert!(got.is_frustrated());
    }

    #[test]
    fn empty_and_odd_inputs() {
        assert_eq!(detect(&[]), Frustration::default());
        assert!(!detect(&[json!("not a message"), json!({"role":"user","content":7})]).is_frustrated());
        assert!(!detect(&[json!({"role":"user"})]).is_frustrated());
    }

    #[test]
    fn long_messages_are_read_at_both_ends() {
        let log = "log line 42: connection ok\n".repeat(2000);
        let text = format!("Here is my log:\n{log}\nIt STILL doesn't work!!! Useless.");
        let got = detect(&conversation(&format!("help || {text}")));
        assert!(got.has(Useless) && got.has(NotWorking) && got.has(Punctuation), "{got:?}");
        // A multi-byte character right at a cut point must not panic.
        let cyr = format!("a{}", "ж".repeat(5000));
        assert!(!detect(&conversation(&cyr)).is_frustrated());
    }

    #[test]
    fn score_is_capped_and_labels_are_unique() {
        let got = detect(&conversation(
            "Fix it || USELESS, IT DOES NOT WORK AGAIN!!! \
             || USELESS, IT DOES NOT WORK AGAIN!!! I want a real person",
        ));
        assert_eq!(got.score, 1.0);
        let mut labels: Vec<&str> = Signal::ALL.iter().map(|s| s.label()).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), Signal::ALL.len());
        // `detect` indexes its strengths by discriminant, in `ALL` order.
        for (i, s) in Signal::ALL.into_iter().enumerate() {
            assert_eq!(s as usize, i);
        }
    }
}
