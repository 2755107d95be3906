//! Differential property tests of the pass-through: for generated answers
//! and chunks shaped like what upstreams send — fields present, missing,
//! null or of the wrong type, extra fields — whenever the one-pass check
//! accepts a body, the client gets what the `Value` path would give and the
//! runner reads the same facts; and the check never panics.

use super::completion::{ChunkShape, Completion, RawChunk, RawCompletion, Tokens};
use super::wire::{self, Stamp};
use bytes::Bytes;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// A field that is usually right, sometimes missing, null or odd.
fn field(good: Value) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        14 => Just(Some(good)),
        1 => Just(None),
        1 => Just(Some(Value::Null)),
        1 => prop_oneof![Just(json!(7)), Just(json!("x")), Just(json!([])), Just(json!({"a": 1})), Just(json!(1.5))]
            .prop_map(Some),
    ]
}

fn object(fields: Vec<(&'static str, Option<Value>)>) -> Value {
    Value::Object(fields.into_iter().filter_map(|(k, v)| v.map(|v| (k.to_string(), v))).collect::<Map<_, _>>())
}

fn text() -> impl Strategy<Value = Value> {
    prop_oneof![Just(json!("")), Just(json!(" \n")), "[a-z \"\\\\\n\u{e9}]{0,12}".prop_map(Value::from)]
}

fn finish() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("stop")),
        Just(json!("length")),
        Just(json!("tool_calls")),
        Just(json!("error")),
        Just(json!("eos"))
    ]
}

fn usage() -> impl Strategy<Value = Option<Value>> {
    (field(json!(9)), field(json!(4)), field(json!(13)), field(json!({"cached_tokens": 0}))).prop_flat_map(
        |(p, c, t, d)| {
            field(object(vec![
                ("prompt_tokens", p),
                ("completion_tokens", c),
                ("total_tokens", t),
                ("prompt_tokens_details", d),
            ]))
        },
    )
}

fn extras() -> impl Strategy<Value = Vec<(&'static str, Option<Value>)>> {
    (
        field(json!("fp_1")),
        field(json!({"id": "q", "error": null})),
        field(json!({"keep": [1, "two"]})),
        field(Value::Null),
    )
        .prop_map(|(fp, groq, vendor, err)| {
            vec![("system_fingerprint", fp), ("x_groq", groq), ("x_vendor", vendor), ("error", err)]
        })
}

fn completion() -> impl Strategy<Value = Value> {
    let choice = (
        field(json!(0)),
        field(json!("assistant")),
        field(json!("hi")),
        text(),
        field(Value::Null),
        field(Value::Null),
    )
        .prop_flat_map(|(index, role, _, content, refusal, logprobs)| {
            (finish(), any::<bool>()).prop_map(move |(finish, tools)| {
                let mut message =
                    vec![("role", role.clone()), ("content", Some(content.clone())), ("refusal", refusal.clone())];
                if tools {
                    message.push((
                        "tool_calls",
                        Some(json!([{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}])),
                    ));
                }
                object(vec![
                    ("index", index.clone()),
                    ("message", Some(object(message))),
                    ("logprobs", logprobs.clone()),
                    ("finish_reason", Some(finish)),
                ])
            })
        });
    (prop::collection::vec(choice, 0..3), usage(), extras(), field(json!("chat.completion"))).prop_map(
        |(choices, usage, extras, object_field)| {
            let mut fields = vec![
                ("id", Some(json!("up"))),
                ("object", object_field),
                ("created", Some(json!(1))),
                ("model", Some(json!("m"))),
            ];
            fields.push(("choices", Some(Value::Array(choices))));
            fields.push(("usage", usage));
            fields.extend(extras);
            object(fields)
        },
    )
}

fn chunk() -> impl Strategy<Value = Value> {
    let choice = (field(json!(0)), field(json!("assistant")), text(), field(json!("no")), field(Value::Null))
        .prop_flat_map(|(index, role, content, refusal, logprobs)| {
            (prop_oneof![Just(Value::Null), finish()], any::<bool>(), any::<bool>()).prop_map(
                move |(finish, has_finish, tools)| {
                    let mut delta =
                        vec![("role", role.clone()), ("content", Some(content.clone())), ("refusal", refusal.clone())];
                    if tools {
                        delta.push(("tool_calls", Some(json!([{"index": 0, "function": {"arguments": "{"}}]))));
                    }
                    object(vec![
                        ("index", index.clone()),
                        ("delta", Some(object(delta))),
                        ("logprobs", logprobs.clone()),
                        ("finish_reason", has_finish.then_some(finish)),
                    ])
                },
            )
        });
    (prop::collection::vec(choice, 0..3), usage(), extras()).prop_map(|(choices, usage, extras)| {
        let mut fields = vec![("id", Some(json!("c"))), ("choices", Some(Value::Array(choices))), ("usage", usage)];
        fields.extend(extras);
        object(fields)
    })
}

fn stamp() -> Stamp {
    Stamp { id: "chatcmpl-1".into(), created: 7, model: "p/m".into() }
}

fn event(b: &Bytes) -> Value {
    let text = std::str::from_utf8(b).unwrap();
    serde_json::from_str(text.strip_prefix("data: ").unwrap().strip_suffix("\n\n").unwrap()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn a_completion_the_check_accepts_reaches_the_client_as_the_value_path_would_give_it(body in completion()) {
        let Some(raw) = RawCompletion::check(Bytes::from(body.to_string())) else { return Ok(()) };
        let mut raw = Completion::Raw(raw);
        let mut general = Completion::Value(body.clone());
        // The general path rejects some bodies the check would never accept.
        prop_assert!(general.stamp(stamp()).is_ok(), "{}", body);
        raw.stamp(stamp()).unwrap();
        prop_assert_eq!(raw.has_answer(), general.has_answer());
        prop_assert_eq!(raw.tokens(), general.tokens());
        prop_assert_eq!(raw.completion_tokens(), general.completion_tokens());
        let raw_out: Value = serde_json::from_slice(&raw.to_bytes()).unwrap();
        let general_out: Value = serde_json::from_slice(&general.to_bytes()).unwrap();
        prop_assert_eq!(raw_out, general_out, "{}", body);
    }

    #[test]
    fn a_chunk_the_check_accepts_reaches_the_client_as_the_value_path_would_give_it(body in chunk()) {
        let Some(raw) = RawChunk::check(&body.to_string()) else { return Ok(()) };
        prop_assert_eq!(raw.has_token(), wire::chunk_has_token(&body));
        prop_assert_eq!(raw.finishes(), wire::chunk_finishes(&body));
        prop_assert_eq!(raw.is_usage_chunk(), wire::is_usage_chunk(&body));
        prop_assert_eq!(raw.tokens(), body.get("usage").filter(|u| u.is_object()).map(Tokens::of));
        let mut general = body.clone();
        wire::chunk(&mut general, &stamp());
        prop_assert_eq!(event(&raw.encode(&stamp())), event(&super::sse::encode_json(&general)), "{}", body);
    }

    /// The shape a stream's chunks are compared with gives, event after
    /// event, exactly what the whole check gives: events equal to the last
    /// checked one but for their content string's raw bytes — plain text,
    /// escapes, escapes cut at the string's end, bare quotes and control
    /// characters (which change the structure or break it), bytes that are
    /// not UTF-8 — and whole new chunks in between.
    #[test]
    fn a_chunk_checked_against_the_streams_shape_is_what_the_whole_check_gives(
        bases in prop::collection::vec(chunk(), 1..4),
        raws in prop::collection::vec(prop_oneof![
            "[a-z \u{e9}\u{1F600}]{0,10}",
            "[a-z\\\\\"nu0-9{},:\\[\\]\u{1} ]{0,10}",
            Just("\\u00e9\\n\\\"".to_string()),
            Just("a\\".to_string()),
            Just("\\u12".to_string()),
        ], 1..12),
    ) {
        let mut shape = ChunkShape::default();
        // The same events read in place from an upstream's read (the tail
        // then a slice of it), with their own shape.
        let mut in_place = ChunkShape::default();
        for (i, raw) in raws.iter().enumerate() {
            let base = &bases[i % bases.len()];
            // Every other stream written as upstreams write it, the stamp's
            // entries first (a tail that is one run of the data); the others
            // in the map's own order.
            let write = |v: &Value| if i % 2 == 0 { stamp_first(v) } else { v.to_string() };
            let mut events = vec![write(base).into_bytes()];
            let mut marked = base.clone();
            if let Some(delta) = marked.pointer_mut("/choices/0/delta").and_then(Value::as_object_mut) {
                delta.insert("content".into(), json!("@@content@@"));
                let text = write(&marked);
                let (before, after) = text.split_once("@@content@@").unwrap();
                events.push([before, raw, after].concat().into_bytes());
                // Bytes that are not UTF-8 in the new string.
                events.push([before.as_bytes(), raw.as_bytes(), &[0xff], after.as_bytes()].concat());
            }
            for data in events {
                let like = RawChunk::check_like(&data, &mut shape);
                let whole = std::str::from_utf8(&data).ok().and_then(RawChunk::check);
                prop_assert_eq!(&like, &whole, "{}", String::from_utf8_lossy(&data));
                let piece = Bytes::from([b"data: ", &data[..], b"\n\n"].concat());
                let read = RawChunk::check_like_in(&piece[6..6 + data.len()], Some(&piece), &mut in_place);
                prop_assert_eq!(&read, &whole, "in place: {}", String::from_utf8_lossy(&data));
                if let Some(read) = read {
                    prop_assert_eq!(read.content(), whole.as_ref().map(RawChunk::content).unwrap_or_default());
                }
            }
        }
    }

    #[test]
    fn the_checks_never_panic_on_arbitrary_text(text in "\\PC{0,64}|[{}\\[\\]\":,a-z0-9 ]{0,64}") {
        let _ = RawCompletion::check(Bytes::from(text.clone()));
        let _ = RawChunk::check(&text);
    }
}

/// `v` as JSON with `id`, `object`, `created` and `model` first (where it
/// has them), as upstreams write their chunks; other values as they are.
fn stamp_first(v: &Value) -> String {
    let Some(map) = v.as_object() else { return v.to_string() };
    const FIRST: [&str; 4] = ["id", "object", "created", "model"];
    let entries = FIRST
        .iter()
        .filter_map(|k| map.get(*k).map(|x| (*k, x)))
        .chain(map.iter().filter(|(k, _)| !FIRST.contains(&k.as_str())).map(|(k, x)| (k.as_str(), x)));
    let body: Vec<String> = entries.map(|(k, x)| format!("{}:{x}", json!(k))).collect();
    format!("{{{}}}", body.join(","))
}

/// The properties above are not vacuous: a fair share of generated bodies
/// takes the pass-through, and a fair share does not.
#[test]
fn the_generators_reach_both_paths() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut whole, mut chunks) = (0, 0);
    for _ in 0..400 {
        let body = completion().new_tree(&mut runner).unwrap().current();
        whole += usize::from(RawCompletion::check(Bytes::from(body.to_string())).is_some());
        let body = chunk().new_tree(&mut runner).unwrap().current();
        chunks += usize::from(RawChunk::check(&body.to_string()).is_some());
    }
    assert!((20..380).contains(&whole), "completions on the pass-through: {whole} of 400");
    assert!((20..380).contains(&chunks), "chunks on the pass-through: {chunks} of 400");
}
