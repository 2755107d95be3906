//! The serde-based reader the byte scanner ([`crate::api::lex`]) replaced,
//! kept as the oracle of a differential test: over generated answers and
//! chunks, and the same bytes cut, blanked or corrupted, the scanner
//! either reads what serde reads or sends the body to the general path —
//! and it sends to the general path only what serde refuses too, for the
//! shapes the generator makes.

use super::scan::{check_choices, check_deltas, check_usage, ChoiceCheck, GroqCheck, Top, UsageCheck};
use crate::api::lex::Shape;
use crate::api::tokens::Tokens;
use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

impl<'de: 'a, 'a> Deserialize<'de> for Shape<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Shape<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Shape::Null)
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Shape::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Shape::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Shape::Int(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(u64::try_from(v).map_or(Shape::Other, Shape::Int))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Shape::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Shape::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Shape::Object)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Shape::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Reads the top level of `text` in one pass: the fields the check needs
/// are read as they go by, the rest skipped. An error means "the general
/// path decides": not an object, a key with escapes or given twice, or
/// anything to complete or fix.
pub(super) struct TopSeed<'a> {
    text: &'a str,
    /// A `chat.completion.chunk` (deltas), not a `chat.completion`.
    chunk: bool,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'de> {
    type Value = Top;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Top, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'de> {
    type Value = Top;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a chat.completion object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let general = || A::Error::custom("needs the general path");
        let mut top = Top { keys: Vec::with_capacity(8), ..Top::default() };
        // Keys without escapes are borrowed from the text itself.
        while let Some(key) = map.next_key::<&'de str>()? {
            let seen = |&(at, len, _): &(usize, usize, bool)| {
                len == key.len() && self.text.get(at + 1..at + 1 + len) == Some(key)
            };
            if top.keys.iter().any(seen) {
                return Err(general());
            }
            let start = (key.as_ptr() as usize).wrapping_sub(self.text.as_ptr() as usize).wrapping_sub(1);
            let quoted = start.checked_add(key.len() + 2).and_then(|end| self.text.get(start..end));
            if quoted.is_none_or(|q| q.get(1..=key.len()) != Some(key) || !q.starts_with('"')) {
                return Err(general());
            }
            let keep = match key {
                "id" | "created" | "model" => {
                    map.next_value::<IgnoredAny>()?;
                    false
                }
                "object" => {
                    if map.next_value::<Shape<'_>>()?.as_str() == Some("error") {
                        return Err(general());
                    }
                    false
                }
                "error" => {
                    if !matches!(map.next_value::<Shape<'_>>()?, Shape::Null) {
                        return Err(general());
                    }
                    true
                }
                "x_groq" => {
                    if !matches!(map.next_value::<GroqCheck<'_>>()?.error, Shape::Absent | Shape::Null) {
                        return Err(general());
                    }
                    true
                }
                "choices" if self.chunk => {
                    let choices: Vec<ChoiceCheck<'_>> = map.next_value()?;
                    top.chunk = Some(check_deltas(&choices, self.text).ok_or_else(general)?);
                    true
                }
                "choices" => {
                    let choices: Vec<ChoiceCheck<'_>> = map.next_value()?;
                    top.checked = Some(check_choices(&choices).ok_or_else(general)?);
                    true
                }
                "usage" => {
                    top.usage_key = Some(top.keys.len());
                    match map.next_value::<Option<UsageCheck<'_>>>()? {
                        // `null` stays, and counts as no tokens.
                        None => top.usage = Some(Tokens::default()),
                        Some(u) => {
                            top.usage = Some(check_usage(&u).ok_or_else(general)?);
                            top.usage_counted = true;
                        }
                    }
                    true
                }
                "system_fingerprint" | "service_tier" => {
                    if !map.next_value::<Shape<'_>>()?.is_string_or_null() {
                        return Err(general());
                    }
                    true
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    true
                }
            };
            top.keys.push((start, key.len(), keep));
        }
        Ok(top)
    }
}

/// What serde reads of `text`.
pub(super) fn read(text: &str, chunk: bool) -> Option<Top> {
    let mut de = serde_json::Deserializer::from_str(text);
    let top = TopSeed { text, chunk }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(top)
}

mod tests {
    use super::super::scan;
    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    /// A value of any kind, the odd ones included.
    fn anything() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            Just(json!("x")),
            Just(json!("")),
            Just(json!("es\"c\\aped\n\u{1}\u{e9}\u{1F600}")),
            Just(json!(0)),
            Just(json!(7)),
            Just(json!(-3)),
            Just(json!(1.5)),
            Just(json!(u64::MAX)),
            Just(json!(true)),
            Just(json!([])),
            Just(json!([1, "a", {"b": [null, false]}])),
            Just(json!({})),
            Just(json!({"a": {"b": [1e3, -0.5]}})),
        ]
    }

    /// Usually `good`, sometimes missing, sometimes anything.
    fn field(good: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
        prop_oneof![6 => good.prop_map(Some), 1 => Just(None), 1 => anything().prop_map(Some)]
    }

    fn object(fields: Vec<(&str, Option<Value>)>) -> Value {
        Value::Object(fields.into_iter().filter_map(|(k, v)| Some((k.to_string(), v?))).collect::<Map<_, _>>())
    }

    fn text() -> impl Strategy<Value = Value> {
        prop_oneof![Just(json!("")), Just(json!("  ")), "[a-z \"\\\\\n\u{e9}\u{1F600}]{0,10}".prop_map(Value::from)]
    }

    fn message() -> impl Strategy<Value = Value> {
        (
            field(prop_oneof![Just(json!("assistant")), Just(json!("user"))]),
            field(text()),
            field(prop_oneof![Just(Value::Null), text()]),
            prop_oneof![4 => Just(None), 1 => Just(Some(json!([{"id": "c", "type": "function"}])))],
            field(anything()),
        )
            .prop_map(|(role, content, refusal, tools, extra)| {
                object(vec![
                    ("role", role),
                    ("content", content),
                    ("refusal", refusal),
                    ("tool_calls", tools),
                    ("annotations", extra),
                ])
            })
    }

    fn choice(chunk: bool) -> impl Strategy<Value = Value> {
        (
            field(prop_oneof![Just(json!(0)), Just(json!(1))]),
            field(prop_oneof![Just(json!("stop")), Just(json!("length")), Just(Value::Null), Just(json!("eos"))]),
            field(Just(Value::Null)),
            prop_oneof![6 => message().prop_map(Some), 1 => Just(Some(Value::Null)), 1 => Just(None)],
            field(anything()),
        )
            .prop_map(move |(index, finish, logprobs, message, extra)| {
                object(vec![
                    ("index", index),
                    ("finish_reason", finish),
                    ("logprobs", logprobs),
                    (if chunk { "delta" } else { "message" }, message),
                    ("extra", extra),
                ])
            })
    }

    fn usage() -> impl Strategy<Value = Option<Value>> {
        let n = || prop_oneof![Just(json!(3)), Just(json!(12))];
        (field(n()), field(n()), field(n()), field(Just(json!({"cached_tokens": 0}))))
            .prop_map(|(p, c, t, d)| {
                object(vec![
                    ("prompt_tokens", p),
                    ("completion_tokens", c),
                    ("total_tokens", t),
                    ("prompt_tokens_details", d),
                ])
            })
            .prop_flat_map(|u| field(Just(u)))
    }

    fn body() -> impl Strategy<Value = (bool, Value)> {
        any::<bool>().prop_flat_map(|chunk| {
            (
                proptest::collection::vec(choice(chunk), 0..3),
                usage(),
                field(Just(json!("fp_1"))),
                field(Just(json!({"id": "q"}))),
                field(Just(Value::Null)),
                field(anything()),
                prop_oneof![4 => Just(if chunk { "chat.completion.chunk" } else { "chat.completion" }), 1 => Just("error")],
            )
                .prop_map(move |(choices, usage, fp, groq, error, extra, object_kind)| {
                    let body = object(vec![
                        ("id", Some(json!("chatcmpl-1"))),
                        ("object", Some(json!(object_kind))),
                        ("created", Some(json!(1_760_000_000))),
                        ("model", Some(json!("m"))),
                        ("choices", Some(Value::Array(choices))),
                        ("usage", usage),
                        ("system_fingerprint", fp),
                        ("x_groq", groq),
                        ("error", error),
                        ("zz_extra", extra),
                    ]);
                    (chunk, body)
                })
        })
    }

    /// What is done to the written body: nothing, or one character
    /// inserted, removed or replaced, or the text cut short.
    #[derive(Debug, Clone)]
    enum Change {
        None,
        Insert(usize, char),
        Remove(usize),
        Replace(usize, char),
        Cut(usize),
        /// A member written twice (`"choices":[],` after the `{`).
        Repeat(&'static str),
    }

    fn change() -> impl Strategy<Value = Change> {
        let c = proptest::sample::select(vec![
            '"', '\\', '{', '}', '[', ']', ',', ':', ' ', '0', '9', '-', '.', 'e', 'n', 'u', '\n', '\u{1}', '\u{1f}',
            '\t', 'é',
        ]);
        prop_oneof![
            3 => Just(Change::None),
            2 => (any::<usize>(), c.clone()).prop_map(|(i, c)| Change::Insert(i, c)),
            2 => any::<usize>().prop_map(Change::Remove),
            2 => (any::<usize>(), c).prop_map(|(i, c)| Change::Replace(i, c)),
            1 => any::<usize>().prop_map(Change::Cut),
            1 => proptest::sample::select(vec![
                "\"choices\":[]", "\"usage\":null", "\"id\":1", "\"x\\u0041\":1", "\"created\":-0"
            ])
            .prop_map(Change::Repeat),
        ]
    }

    fn apply(text: &str, change: &Change) -> String {
        let boundary = |i: usize| {
            let mut i = i % (text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        let mut out = text.to_string();
        match change {
            Change::None => {}
            Change::Insert(i, c) => out.insert(boundary(*i), *c),
            Change::Remove(i) | Change::Replace(i, _) => {
                let at = boundary(*i);
                if at < out.len() {
                    out.remove(at);
                    if let Change::Replace(_, c) = change {
                        out.insert(at, *c);
                    }
                }
            }
            Change::Cut(i) => out.truncate(boundary(*i)),
            Change::Repeat(member) => {
                if let Some(at) = out.find('{') {
                    out.insert_str(at + 1, &format!("{member},"));
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// The scanner reads exactly what serde read, accepted or not,
        /// compact or pretty, intact or damaged.
        #[test]
        fn the_scanner_reads_what_serde_read((chunk, body) in body(), pretty in any::<bool>(), change in change()) {
            let written = if pretty { serde_json::to_string_pretty(&body) } else { serde_json::to_string(&body) };
            let text = apply(&written.unwrap(), &change);
            prop_assert_eq!(scan::top(&text, chunk), super::read(&text, chunk), "{}", text);
        }
    }

    #[test]
    fn numbers_keys_and_nesting_read_as_serde_reads_them() {
        let cases = [
            r#"{"usage":{"prompt_tokens":18446744073709551615,"completion_tokens":0,"total_tokens":1}}"#,
            r#"{"usage":{"prompt_tokens":18446744073709551616,"completion_tokens":0,"total_tokens":1}}"#,
            r#"{"usage":{"prompt_tokens":-0,"completion_tokens":0,"total_tokens":1}}"#,
            r#"{"usage":{"prompt_tokens":1e2,"completion_tokens":0,"total_tokens":1}}"#,
            r#"{"usage":{"prompt_tokens":01,"completion_tokens":0,"total_tokens":1}}"#,
            r#"{"usage":{"prompt_tokens":1.,"completion_tokens":0,"total_tokens":1}}"#,
            r#"{"usage":{"prompt_\u0074okens":4,"completion_tokens":0,"total_tokens":1}}"#,
            r#"{"usage":{"prompt_tokens":4,"prompt_tokens":4,"completion_tokens":0,"total_tokens":1}}"#,
            r#"{"usage":{"x":4,"x":5,"prompt_tokens":4,"completion_tokens":0,"total_tokens":1}}"#,
            r#"{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"\ud83d\ude00"}}]}"#,
            r#"{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"\ud83d"}}]}"#,
            r#"{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"a"},"message":null}]}"#,
            r#"{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"a","x":[[[[{}]]]]}}]} "#,
            r#"{"choices":[]} x"#,
            r#"{"choices":[],}"#,
            r#"{"choices":[1,]}"#,
            r#"{"object":nul}"#,
            r#"{"object":true,"x":false,"y":null}"#,
            r#" { } "#,
            r#"{"x_groq":[]}"#,
            r#"{"x_groq":[null,1]}"#,
            r#"{"x_groq":[{"a":1}]}"#,
            r#"{"choices":[[0,"stop",null,["assistant","hi"]]]}"#,
            r#"{"choices":[[0,"stop",null,["assistant","hi",null,null,1]]]}"#,
            r#"{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"a"},"message":null}]}"#,
            r#"{"usage":[1,2,3]}"#,
            "{\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\"message\":{\"role\":\"assistant\",\"content\":\"a\u{1f}\"}}]}",
            "{\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\"message\":{\"role\":\"assistant\",\"content\":\"a\tb\"}}]}",
            "{\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\"message\":{\"role\":\"assistant\",\"content\":\"a\u{7f}b\"}}]}",
        ];
        for text in cases {
            for chunk in [false, true] {
                assert_eq!(scan::top(text, chunk), super::read(text, chunk), "{text}");
            }
        }
        // Skipped values nested deeper than the scanner goes (serde skips
        // them without a limit): the general path decides.
        let deep = format!(r#"{{"x":{}1{}}}"#, "[".repeat(200), "]".repeat(200));
        assert_eq!(scan::top(&deep, false), None);
        assert!(super::read(&deep, false).is_some());
    }
}
