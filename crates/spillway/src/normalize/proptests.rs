//! Property tests: the normalizer never panics, valid JSON passes
//! unchanged, and normalizing its own output changes nothing.

use proptest::prelude::*;
use serde_json::{json, Value};

use crate::normalize::{normalize, sample, Expected, NormalizeResult, SchemaCache};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e9f64..1e9).prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::String),
        "[{}\\[\\]\"',: a-zа-я]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z_ -]{0,10}|\\PC{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-z_]{1,8}", arb_json(), 0..5).prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// Text that looks like what models produce: JSON-ish characters, prose,
/// fences, typographic quotes.
fn arb_jsonish() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[{}\\[\\]\"',:\\\\ \n\t0-9.eE+\\-#/*`“”‘’«»TtFfNnrulsaoe_а-я]{0,120}",]
}

/// A small mutation model authors make: broken by one of the usual kinds of
/// damage.
fn broken(value: &Value, how: u8, cut: usize) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap();
    match how % 6 {
        0 => format!("```json\n{pretty}\n```"),
        1 => format!("Вот ответ:\n{pretty}\nГотово."),
        2 => pretty.replace('"', "'"),
        3 => {
            // A comma after every last member; pretty output keeps strings on
            // one line, so lines are safe to work on.
            let mut out = String::new();
            for line in pretty.lines() {
                let closes = line.trim_start().starts_with(['}', ']']);
                if closes && !out.ends_with(['{', '[']) {
                    out.push(',');
                }
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(line);
            }
            out
        }
        4 => {
            let mut end = cut % (pretty.len() + 1);
            while !pretty.is_char_boundary(end) {
                end -= 1;
            }
            pretty[..end].to_owned()
        }
        _ => pretty.replace("true", "True").replace("null", "None"),
    }
}

fn expectations() -> Vec<Expected> {
    let cache = SchemaCache::default();
    let schema = json!({"type": "object", "properties": {
        "user_name": {"type": "string"}, "items": {"type": "array", "items": {
            "type": "object", "properties": {"unit_price": {"type": "number"}}}}}});
    vec![
        Expected::Object,
        Expected::Schema { compiled: cache.get_or_compile(&json!({})).unwrap(), strict: false },
        Expected::Schema { compiled: cache.get_or_compile(&schema).unwrap(), strict: true },
    ]
}

/// Schema-shaped values: the keywords clients use, `$ref`s to four
/// definitions that may refer to each other (cycles included), in any
/// draft.
fn arb_schema() -> impl Strategy<Value = Value> {
    let reference = (0..4u8).prop_map(|i| json!({"$ref": format!("#/$defs/d{i}")}));
    let leaf = prop_oneof![
        prop::sample::select(vec!["string", "integer", "number", "boolean", "null", "object", "array"])
            .prop_map(|t| json!({"type": t})),
        Just(json!({"type": ["string", "null"]})),
        Just(json!({"enum": ["a", 1, null]})),
        Just(json!({"const": "x"})),
        (-5i64..5, 0i64..5).prop_map(|(lo, span)| json!({"type": "integer", "minimum": lo, "maximum": lo + span})),
        Just(json!({"type": "string", "pattern": "^[a-z]{2,4}$", "minLength": 1})),
        Just(json!({"type": "string", "format": "date-time"})),
        reference,
        any::<bool>().prop_map(Value::Bool),
    ];
    leaf.prop_recursive(4, 40, 4, |inner| {
        prop_oneof![
            prop::collection::btree_map("[a-z_]{1,6}", inner.clone(), 0..4).prop_map(|props| {
                let required: Vec<Value> = props.keys().take(2).map(|k| json!(k)).collect();
                json!({"type": "object", "properties": props, "required": required})
            }),
            inner.clone().prop_map(|items| json!({"type": "array", "items": items, "minItems": 1})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|b| json!({"anyOf": b})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|b| json!({"allOf": b})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|b| json!({"oneOf": b})),
            inner.prop_map(|n| json!({"not": n})),
        ]
    })
}

fn arb_document() -> impl Strategy<Value = Value> {
    let draft = prop::sample::select(vec![
        None,
        Some("http://json-schema.org/draft-04/schema#"),
        Some("http://json-schema.org/draft-07/schema#"),
        Some("https://json-schema.org/draft/2019-09/schema"),
    ]);
    (arb_schema(), prop::collection::vec(arb_schema(), 4), draft).prop_map(|(root, defs, draft)| {
        let mut doc = match root {
            Value::Object(map) => map,
            other => [("allOf".to_owned(), json!([other]))].into_iter().collect(),
        };
        let defs: serde_json::Map<String, Value> =
            defs.into_iter().enumerate().map(|(i, d)| (format!("d{i}"), d)).collect();
        doc.insert("$defs".into(), Value::Object(defs));
        if let Some(uri) = draft {
            doc.insert("$schema".into(), json!(uri));
        }
        Value::Object(doc)
    })
}

/// Normalizing an answer's output again returns it unchanged, as `Valid`.
fn assert_idempotent(text: &str, expected: &Expected) -> Result<(), TestCaseError> {
    if let Ok(first) = normalize(text, expected) {
        let second = normalize(&first.json, expected);
        let second = second.map_err(|e| TestCaseError::fail(format!("{text:?} -> {first:?} -> {e}")))?;
        prop_assert_eq!(&second.json, &first.json, "input {:?}", text);
        prop_assert_eq!(second.result, NormalizeResult::Valid);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_and_is_idempotent(text in arb_jsonish()) {
        for expected in &expectations() {
            assert_idempotent(&text, expected)?;
        }
    }

    #[test]
    fn valid_json_passes_unchanged(value in arb_json(), object in arb_object(), pretty: bool) {
        let any = &expectations()[1];
        let text = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            value.to_string()
        };
        let n = normalize(&text, any).unwrap();
        prop_assert_eq!(&n.json, &text);
        prop_assert_eq!(n.result, NormalizeResult::Valid);
        prop_assert!(n.fixes.is_empty());
        let text = object.to_string();
        let n = normalize(&text, &Expected::Object).unwrap();
        prop_assert_eq!(&n.json, &text);
        prop_assert_eq!(n.result, NormalizeResult::Valid);
    }

    #[test]
    fn repairing_twice_equals_once(value in arb_object(), how: u8, cut: usize) {
        let text = broken(&value, how, cut);
        for expected in &expectations() {
            assert_idempotent(&text, expected)?;
        }
    }

    #[test]
    fn usual_damage_restores_the_value(value in arb_object(), how in prop::sample::select(vec![0u8, 1, 3])) {
        // Fences, prose and trailing commas lose nothing. (Quote swapping,
        // literal swapping and truncation may touch string contents.)
        let text = broken(&value, how, 0);
        let n = normalize(&text, &Expected::Object).unwrap();
        let got: Value = serde_json::from_str(&n.json).unwrap();
        // Compared through text: serde_json's default float parsing may be
        // one ulp off the value it printed; the number text itself is kept.
        let want: Value = serde_json::from_str(&value.to_string()).unwrap();
        prop_assert_eq!(got, want);
    }
}

proptest! {
    // Each case compiles a schema: fewer of them.
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_schema_walk_ends_and_a_valid_sample_passes_unchanged(schema in arb_document(), answer in arb_jsonish()) {
        // Refused (a cycle, say) or compiled: either way quickly, and what
        // compiled can be sampled and normalized against.
        let doc = schema.clone();
        let compiled = crate::normalize::bounds::tests::within(10, move || SchemaCache::default().get_or_compile(&doc));
        let Ok(compiled) = compiled else { return Ok(()) };
        let expected = Expected::Schema { compiled: compiled.clone(), strict: false };
        let _ = normalize(&answer, &expected);
        let value = sample(&compiled);
        let text = value.to_string();
        if compiled.check(&value).is_ok() {
            let done = normalize(&text, &expected).map_err(|e| TestCaseError::fail(format!("{schema} {text}: {e}")))?;
            prop_assert_eq!(done.result, NormalizeResult::Valid);
            prop_assert_eq!(done.json, text);
        }
    }
}
