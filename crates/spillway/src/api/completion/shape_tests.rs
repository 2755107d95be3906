use super::*;
use proptest::prelude::*;

/// What a check gave, to compare the shape's with the whole check's.
fn seen(raw: Option<RawCompletion>) -> Option<(Vec<u8>, Vec<u8>, Found)> {
    raw.map(|r| (r.body().to_vec(), r.tail().to_vec(), r.found()))
}

/// An OpenAI answer with its changing values given.
fn answer(id: &str, created: &str, content: &str, usage: (&str, &str, &str), fingerprint: &str) -> String {
    let (p, c, t) = usage;
    format!(
        r#"{{"id":{id},"object":"chat.completion","created":{created},"model":"gpt-4o-mini-2024-07-18","choices":[{{"index":0,"message":{{"role":"assistant","content":{content},"refusal":null,"annotations":[]}},"logprobs":null,"finish_reason":"stop"}}],"usage":{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{t},"prompt_tokens_details":{{"cached_tokens":0,"audio_tokens":0}}}},"service_tier":"default","system_fingerprint":{fingerprint}}}"#
    )
}

pub(in crate::api::completion) fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// The first answer makes the shape; the next ones, alike but for their
/// id, `created`, content, counts and fingerprint, are filled from it and
/// give what the whole check gives.
#[test]
fn answers_alike_but_for_their_values_are_filled_from_the_shape() {
    let shapes = AnswerShapes::default();
    let first = Bytes::from(answer(r#""chatcmpl-1""#, "1760000000", r#""Hi""#, ("9", "1", "10"), r#""fp_1""#));
    assert!(shapes.fill(&first).is_none(), "no shape yet");
    assert_eq!(seen(shapes.check(first.clone())), seen(RawCompletion::check(first.clone())));
    let next = [
        answer(r#""chatcmpl-22""#, "1760000123", r#""Hello there, friend.""#, ("12", "5", "17"), r#""fp_1""#),
        answer(r#""c""#, "0", r#""line one\nline \"two\" \u00e9\ud83d\ude00""#, ("0", "0", "0"), r#""fp_2""#),
        answer(r#""x\"y""#, "7", r#""   ""#, ("18446744073709551615", "3", "4"), r#""""#),
        answer(r#""id""#, "7", r#""""#, ("1", "2", "3"), r#""fp""#),
        answer(r#""id""#, "7", r#""Привет, мир""#, ("1", "2", "3"), r#""fp""#),
    ];
    for body in next {
        let body = Bytes::from(body);
        let filled = shapes.fill(&body);
        assert!(filled.is_some(), "not filled: {}", String::from_utf8_lossy(&body));
        assert_eq!(seen(filled), seen(RawCompletion::check(body.clone())), "{}", String::from_utf8_lossy(&body));
    }
}

/// A slot that does not hold a value of its kind, or a body that differs
/// outside its slots, is not filled; the whole check decides, and an
/// answer that passes it becomes the shape.
#[test]
fn a_body_unlike_the_shape_takes_the_whole_check() {
    // A shape that has fitted an answer: the next miss replaces it.
    let fitted = || {
        let shapes = AnswerShapes::default();
        shapes.check(Bytes::from(answer(r#""a""#, "1", r#""Hi""#, ("9", "1", "10"), r#""fp""#)));
        shapes.check(Bytes::from(answer(r#""b""#, "2", r#""Yo""#, ("9", "1", "10"), r#""fp""#)));
        shapes
    };
    let unlike = [
        // Values of another kind in a slot.
        answer("null", "1", r#""Hi""#, ("9", "1", "10"), r#""fp""#),
        answer(r#""a""#, "1.5", r#""Hi""#, ("9", "1", "10"), r#""fp""#),
        answer(r#""a""#, "1", "null", ("9", "1", "10"), r#""fp""#),
        answer(r#""a""#, "1", r#""Hi""#, ("-9", "1", "10"), r#""fp""#),
        answer(r#""a""#, "1", r#""Hi""#, ("9", "1", "18446744073709551616"), r#""fp""#),
        answer(r#""a""#, "1", r#""Hi""#, ("9", "1e2", "10"), r#""fp""#),
        answer(r#""a""#, "1", r#""Hi""#, ("9", "1", "10"), "null"),
        // Broken strings in a slot.
        answer(r#""a""#, "1", "\"a\tb\"", ("9", "1", "10"), r#""fp""#),
        answer(r#""a""#, "1", r#""a\qb""#, ("9", "1", "10"), r#""fp""#),
        answer(r#""a""#, "1", r#""a\ud800""#, ("9", "1", "10"), r#""fp""#),
        answer(r#""a""#, "1", r#""Hi","content":"again""#, ("9", "1", "10"), r#""fp""#),
        // Another structure.
        answer(r#""a""#, "1", r#""Hi""#, ("9", "1", "10"), r#""fp""#).replace("\"stop\"", "\"length\""),
        answer(r#""a""#, "1", r#""Hi""#, ("9", "1", "10"), r#""fp""#).replace("\"stop\"", "\"error\""),
        answer(r#""a""#, "1", r#""Hi""#, ("9", "1", "10"), r#""fp""#)
            .replace("null,\"annotations\"", "\"No.\",\"annotations\""),
        answer(r#""a""#, "1", r#""Hi""#, ("9", "1", "10"), r#""fp""#)
            .replace("\"stop\"}],", "\"stop\"},{\"index\":1}],"),
        answer(r#""a""#, "1", r#""Hi""#, ("9", "1", "10"), r#""fp""#) + " x",
        answer(r#""a""#, "1", r#""Hi""#, ("9", "1", "10"), r#""fp""#).replacen(
            '{',
            "{\"error\":{\"message\":\"x\"},",
            1,
        ),
    ];
    for body in unlike {
        let body = Bytes::from(body);
        let shapes = fitted();
        assert!(shapes.fill(&body).is_none(), "filled: {}", String::from_utf8_lossy(&body));
        let whole = seen(RawCompletion::check(body.clone()));
        assert_eq!(seen(shapes.check(body.clone())), whole, "{}", String::from_utf8_lossy(&body));
        if whole.is_some() {
            assert!(shapes.fill(&body).is_some(), "not the new shape: {}", String::from_utf8_lossy(&body));
        }
    }
}

/// An answer of two choices makes no shape (only one choice's content is
/// a slot); nor does one that is not compact JSON break the fill.
#[test]
fn what_makes_no_shape_and_blanks() {
    let shapes = AnswerShapes::default();
    let two = r#"{"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"A","refusal":null},"logprobs":null,"finish_reason":"stop"},{"index":1,"message":{"role":"assistant","content":"B","refusal":null},"logprobs":null,"finish_reason":"stop"}]}"#;
    assert!(shapes.check(Bytes::from(two)).is_some());
    assert!(shapes.fill(&Bytes::from(two)).is_none(), "two choices made a shape");
    let spaced = " {\n  \"id\" : \"a\" ,\n  \"created\" : 1 ,\n  \"choices\" : [ { \"index\" : 0 , \"message\" : { \"role\" : \"assistant\" , \"content\" : \"A\" , \"refusal\" : null } , \"logprobs\" : null , \"finish_reason\" : \"stop\" } ] ,\n  \"usage\" : { \"prompt_tokens\" : 1 , \"completion_tokens\" : 2 , \"total_tokens\" : 3 }\n}\n";
    let whole = seen(RawCompletion::check(Bytes::from(spaced)));
    assert!(whole.is_some());
    assert_eq!(seen(shapes.check(Bytes::from(spaced))), whole);
    let other = spaced.replace("\"A\"", "\"Bee\"").replace(": 2 ,", ": 20 ,");
    let filled = shapes.fill(&Bytes::from(other.clone()));
    assert!(filled.is_some());
    assert_eq!(seen(filled), seen(RawCompletion::check(Bytes::from(other))));
    // The stamp's entries between the others: the tail is put together.
    let shapes = AnswerShapes::default();
    let mixed = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"A","refusal":null},"logprobs":null,"finish_reason":"stop"}],"id":"a","created":1,"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3},"model":"m","x":[1]}"#;
    shapes.check(Bytes::from(mixed));
    let other = Bytes::from(mixed.replace("\"A\"", "\"Bee\"").replace(":2,", ":20,").replace("\"a\"", "\"b\""));
    let filled = shapes.fill(&other);
    assert_eq!(filled.as_ref().map(|r| r.tail().to_vec()), Some(br#","choices":[{"index":0,"message":{"role":"assistant","content":"Bee","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":20,"total_tokens":3},"x":[1]"#.to_vec()));
    assert_eq!(seen(filled), seen(RawCompletion::check(other)));
}

/// Answers that never fit the last one's shape (their `logprobs` differ
/// each time) make a new shape on one miss in `RETRY` only; once a shape
/// fits, the next miss makes a new one at once.
#[test]
fn answers_that_never_fit_make_a_new_shape_only_now_and_then() {
    let shapes = AnswerShapes::default();
    let with_logprobs =
        |n: u32| {
            Bytes::from(answer(r#""a""#, "1", r#""Hi""#, ("9", "1", "10"), r#""fp""#).replace(
                r#""logprobs":null"#,
                &format!(r#""logprobs":{{"content":[{{"token":"Hi","logprob":-0.{n}}}]}}"#),
            ))
        };
    let mut made = Vec::new();
    for n in 1..=40 {
        let body = with_logprobs(n);
        assert_eq!(seen(shapes.check(body.clone())), seen(RawCompletion::check(body.clone())));
        if shapes.fill(&body).is_some() {
            made.push(n);
        }
    }
    assert_eq!(made, [1, 17, 33]);
    // One that fits: the shape made of answer 33 (its logprobs again).
    let fits = with_logprobs(33);
    assert!(shapes.check(fits).is_some());
    let other = with_logprobs(41);
    shapes.check(other.clone());
    assert!(shapes.fill(&other).is_some(), "a shape that fitted is replaced at the first miss");
}

/// An answer past `MAX_SHAPED` is checked whole and makes no shape (a
/// shape keeps a copy of its answer).
#[test]
fn a_very_long_answer_makes_no_shape() {
    let shapes = AnswerShapes::default();
    let long = "x".repeat(MAX_SHAPED);
    let body = Bytes::from(answer(r#""a""#, "1", &json(&long), ("9", "1", "10"), r#""fp""#));
    assert_eq!(seen(shapes.check(body.clone())), seen(RawCompletion::check(body.clone())));
    assert!(shapes.fill(&body).is_none(), "a long answer made a shape");
    let short = Bytes::from(answer(r#""a""#, "1", r#""Hi""#, ("9", "1", "10"), r#""fp""#));
    shapes.check(short.clone());
    assert!(shapes.fill(&short).is_some());
}

pub(in crate::api::completion) fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            8 => proptest::char::range(' ', '~'),
            1 => Just('"'),
            1 => Just('\\'),
            1 => Just('\n'),
            1 => proptest::char::range('\0', '\u{1f}'),
            2 => proptest::char::any(),
        ],
        0..24,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

/// A value of another kind than a slot's, or a broken one.
pub(in crate::api::completion) fn junk() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_string()),
        Just("18446744073709551616".to_string()),
        Just("-3".to_string()),
        Just("2.5".to_string()),
        Just("[]".to_string()),
        text().prop_map(|t| format!("\"{t}\"")),
    ]
}

/// A string's slot's value: mostly a string.
pub(in crate::api::completion) fn string() -> impl Strategy<Value = String> {
    prop_oneof![8 => text().prop_map(|t| json(&t)), 1 => junk(), 1 => (0u64..9).prop_map(|n| n.to_string())]
}

/// An integer's slot's value: mostly an integer.
pub(in crate::api::completion) fn integer() -> impl Strategy<Value = String> {
    prop_oneof![8 => any::<u64>().prop_map(|n| n.to_string()), 1 => junk(), 1 => text().prop_map(|t| json(&t))]
}

proptest! {
    /// Whatever the values in an answer's slots, and whatever one byte of
    /// it is changed to, the shape's answer is the whole check's.
    #[test]
    fn the_shape_s_answer_is_the_whole_check_s(
        values in proptest::collection::vec((string(), integer(), string(), integer(), integer(), integer(), string()), 1..6),
        damage in proptest::option::of((any::<prop::sample::Index>(), any::<u8>())),
    ) {
        let shapes = AnswerShapes::default();
        shapes.check(Bytes::from(answer(r#""a""#, "1", r#""Hi""#, ("9", "1", "10"), r#""fp""#)));
        for (id, created, content, p, c, t, fp) in values {
            let mut body = answer(&id, &created, &content, (&p, &c, &t), &fp).into_bytes();
            if let Some((at, byte)) = damage {
                let at = at.index(body.len());
                body[at] = byte;
            }
            let body = Bytes::from(body);
            let whole = seen(RawCompletion::check(body.clone()));
            if let Some(filled) = shapes.fill(&body) {
                prop_assert_eq!(Some(seen(Some(filled))), Some(whole.clone()));
            }
            prop_assert_eq!(seen(shapes.check(body)), whole);
        }
    }
}
