//! The fast path against the general path: for the same upstream answer
//! or chunk, the client gets the same body and the runner reads the same
//! facts; and whatever needs fixing is left to the general path.

use super::{Completion, RawChunk, RawCompletion, Tokens};
use crate::api::wire::{self, Stamp};
use bytes::Bytes;
use serde_json::{json, Value};

fn stamp() -> Stamp {
    Stamp { id: "chatcmpl-1".into(), created: 7, model: "p/m".into() }
}

/// The fast path and the general path give the client the same body.
fn both_paths(body: &Value) -> (Value, Value) {
    both_paths_bytes(&serde_json::to_vec(body).unwrap())
}

fn both_paths_bytes(bytes: &[u8]) -> (Value, Value) {
    let mut raw = Completion::Raw(RawCompletion::check(Bytes::copy_from_slice(bytes)).expect("takes the fast path"));
    raw.stamp(stamp()).unwrap();
    let mut general = Completion::Value(serde_json::from_slice(bytes).unwrap());
    general.stamp(stamp()).unwrap();
    assert_eq!(raw.has_answer(), general.has_answer());
    assert_eq!(raw.tokens(), general.tokens());
    assert_eq!(raw.completion_tokens(), general.completion_tokens());
    let raw_out: Value = serde_json::from_slice(&raw.to_bytes()).unwrap();
    let general_out: Value = serde_json::from_slice(&general.to_bytes()).unwrap();
    (raw_out, general_out)
}

fn conformant() -> Value {
    json!({
        "id": "up-1", "object": "chat.completion", "created": 1, "model": "upstream-name",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi \"there\"\n", "refusal": null},
                     "logprobs": null, "finish_reason": "stop", "x_extra": [1, 2]}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 6, "total_tokens": 15,
                  "completion_tokens_details": {"reasoning_tokens": 0}},
        "system_fingerprint": "fp", "x_vendor": {"a": true}
    })
}

#[test]
fn a_conformant_answer_is_stamped_without_a_tree() {
    let (raw, general) = both_paths(&conformant());
    assert_eq!(raw, general);
    assert_eq!(raw["id"], "chatcmpl-1");
    assert_eq!(raw["model"], "p/m");
    assert_eq!(raw["created"], 7);
    assert_eq!(raw["x_vendor"]["a"], true);
}

#[test]
fn layout_and_order_do_not_matter() {
    let pretty = serde_json::to_vec_pretty(&conformant()).unwrap();
    let (raw, general) = both_paths_bytes(&pretty);
    assert_eq!(raw, general);
    // The replaced fields last, with odd spacing.
    let body = br#" { "choices" : [ {"index":0,"message":{"role":"assistant","content":"a","refusal":null},"logprobs":null,"finish_reason":"length"} ] ,
        "x" : 1 , "model":"m" ,"id" : "i", "created":5 ,"object":"chat.completion" }
    "#;
    let (raw, general) = both_paths_bytes(body);
    assert_eq!(raw, general);
    assert_eq!(raw["x"], 1);
}

#[test]
fn null_and_missing_usage_agree_with_the_general_path() {
    let mut v = conformant();
    v["usage"] = Value::Null;
    let (raw, general) = both_paths(&v);
    assert_eq!(raw, general);
    v.as_object_mut().unwrap().remove("usage");
    let (raw, general) = both_paths(&v);
    assert_eq!(raw, general);
}

#[test]
fn empty_answers_are_seen() {
    let mut v = conformant();
    v["choices"][0]["message"]["content"] = json!(" \n ");
    let c = Completion::Raw(RawCompletion::check(serde_json::to_vec(&v).unwrap().into()).unwrap());
    assert!(!c.has_answer());
    v["choices"][0]["message"]["refusal"] = json!("no");
    let c = Completion::Raw(RawCompletion::check(serde_json::to_vec(&v).unwrap().into()).unwrap());
    assert!(c.has_answer());
}

#[test]
fn anything_to_fix_takes_the_general_path() {
    type Change = Box<dyn Fn(&mut Value)>;
    let cases: Vec<Change> = vec![
        Box::new(|v| v["choices"][0]["message"].as_object_mut().unwrap().remove("refusal").map(drop).unwrap()),
        Box::new(|v| v["choices"][0].as_object_mut().unwrap().remove("logprobs").map(drop).unwrap()),
        Box::new(|v| v["choices"][0]["index"] = json!(3)),
        Box::new(|v| v["choices"][0]["finish_reason"] = json!("eos")),
        Box::new(|v| v["choices"][0]["finish_reason"] = json!("error")),
        Box::new(|v| v["choices"][0]["message"]["role"] = json!("model")),
        Box::new(|v| v["choices"][0]["message"]["content"] = json!([{"type": "text", "text": "a"}])),
        Box::new(|v| v["choices"][0]["message"]["tool_calls"] = json!([])),
        Box::new(|v| v["usage"] = json!({"prompt_tokens": 1, "completion_tokens": 2})),
        Box::new(|v| v["usage"] = json!("many")),
        Box::new(|v| v["usage"]["prompt_tokens_details"] = Value::Null),
        Box::new(|v| v["usage"]["total_tokens"] = json!(15.0)),
        Box::new(|v| v["error"] = json!({"message": "boom"})),
        Box::new(|v| v["object"] = json!("error")),
        Box::new(|v| v["x_groq"] = json!({"error": "stopped"})),
        Box::new(|v| v["system_fingerprint"] = json!(5)),
        Box::new(|v| v.as_object_mut().unwrap().remove("choices").map(drop).unwrap()),
    ];
    for (i, change) in cases.iter().enumerate() {
        let mut v = conformant();
        change(&mut v);
        assert!(RawCompletion::check(serde_json::to_vec(&v).unwrap().into()).is_none(), "case {i}: {v}");
    }
    let repeated = br#"{"choices":[{"index":0,"index":0,"message":{"role":"assistant","content":"a","refusal":null},"logprobs":null,"finish_reason":"stop"}]}"#;
    for body in [&b"[1]"[..], b"{\"a\\u0062\":1,\"choices\":[]}", b"{\"choices\":[],\"choices\":[]}", b"\xff", repeated]
    {
        assert!(RawCompletion::check(Bytes::from_static(body)).is_none());
    }
}

#[test]
fn x_groq_without_an_error_passes_through() {
    let mut v = conformant();
    v["x_groq"] = json!({"id": "req_1", "error": null});
    let (raw, general) = both_paths(&v);
    assert_eq!(raw, general);
}

#[test]
fn into_value_keeps_the_stamp() {
    let mut c = Completion::Raw(RawCompletion::check(serde_json::to_vec(&conformant()).unwrap().into()).unwrap());
    c.stamp(stamp()).unwrap();
    let v = c.into_value().unwrap();
    assert_eq!(v["id"], "chatcmpl-1");
    assert_eq!(v["model"], "p/m");
}

/// A chunk through both paths: what the client receives, and what the
/// runner reads of it.
fn both_chunk_paths(chunk: &Value) -> (Value, Value) {
    let text = chunk.to_string();
    let raw = RawChunk::check(&text).expect("takes the fast path");
    assert_eq!(raw.has_token(), wire::chunk_has_token(chunk), "{chunk}");
    assert_eq!(raw.finishes(), wire::chunk_finishes(chunk), "{chunk}");
    assert_eq!(raw.is_usage_chunk(), wire::is_usage_chunk(chunk), "{chunk}");
    assert_eq!(raw.tokens(), chunk.get("usage").filter(|u| u.is_object()).map(Tokens::of), "{chunk}");
    let event = |b: Bytes| -> Value {
        let text = String::from_utf8(b.to_vec()).unwrap();
        let json = text.strip_prefix("data: ").and_then(|t| t.strip_suffix("\n\n")).unwrap();
        serde_json::from_str(json).unwrap()
    };
    let mut general = chunk.clone();
    wire::chunk(&mut general, &stamp());
    (event(raw.encode(&stamp())), event(crate::api::sse::encode_json(&general)))
}

#[test]
fn conformant_chunks_are_stamped_without_a_tree() {
    for chunk in [
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "system_fingerprint": "fp",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "say \"hi\"\n"}, "finish_reason": null}], "x_groq": {"id": "q"}}),
        json!({"choices": [{"index": 0, "delta": {"refusal": "no"}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": null}),
        json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}),
        json!({"choices": [{"index": 1, "delta": {"content": "b"}, "finish_reason": "length"}], "x_vendor": [1]}),
    ] {
        let (raw, general) = both_chunk_paths(&chunk);
        assert_eq!(raw, general, "{chunk}");
        assert_eq!(raw["id"], "chatcmpl-1");
        assert_eq!(raw["object"], "chat.completion.chunk");
        let back = RawChunk::check(&chunk.to_string()).unwrap().into_value();
        assert_eq!(back.get("choices"), chunk.get("choices"));
    }
}

#[test]
fn chunks_with_anything_to_fix_take_the_general_path() {
    for chunk in [
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0}]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "a"}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": "error"}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": "eos"}]}),
        json!({"choices": [{"index": 0, "message": {"content": "a"}, "finish_reason": null}]}),
        json!({"choices": [{"delta": {"content": "a"}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"role": "model"}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"content": [{"type": "text", "text": "a"}]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": null, "logprobs": {"content": []}}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 3}}),
        json!({"choices": [], "error": {"message": "boom"}}),
        json!({"object": "error", "message": "old vllm"}),
        json!({"usage": null}),
    ] {
        assert!(RawChunk::check(&chunk.to_string()).is_none(), "{chunk}");
    }
}

#[test]
fn whole_answers_use_usage_or_an_estimate() {
    let tokens = |v: Value| Completion::Value(v).completion_tokens();
    assert_eq!(tokens(json!({"choices":[{"message":{"content":"hello"}}], "usage":{"completion_tokens":42}})), 42);
    assert_eq!(tokens(json!({"choices":[{"message":{"content":"abcdefghi"}}]})), 3);
    assert_eq!(tokens(json!({})), 0);
}

#[test]
fn an_assembled_answer_gives_the_judge_its_text_as_its_bytes_would() {
    for (content, refusal, finish) in
        [("Привет, \"мир\"\n", None, "stop"), ("", Some("no"), "stop"), ("partial", None, "content_filter")]
    {
        let raw = RawCompletion::assembled(content.to_string(), refusal, finish, None).unwrap();
        let parsed = Completion::Raw(RawCompletion::check(Bytes::copy_from_slice(raw.body())).unwrap());
        let kept = Completion::Raw(raw);
        assert_eq!(kept.first_choice(), parsed.first_choice(), "{content:?} {refusal:?} {finish}");
    }
    // An unknown finish reason hands the text back for the tree.
    assert_eq!(RawCompletion::assembled("x".into(), None, "eos", None).err().as_deref(), Some("x"));
}

/// The events of a real stream after its first two (the role, then the
/// first text) differ only in their content string: each fits the shape
/// the one before left, including text with escapes, and gives what the
/// whole check gives; a chunk that differs elsewhere does not fit.
#[test]
fn a_streams_events_fit_the_shape_of_the_one_before() {
    use super::ChunkShape;
    let event = |content: &str| {
        json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 5, "model": "m",
            "system_fingerprint": "fp", "choices": [{"index": 0, "delta": {"content": content},
            "logprobs": null, "finish_reason": null}]})
        .to_string()
    };
    let mut shape = ChunkShape::default();
    let first = event("Hello");
    assert!(shape.fill(first.as_bytes()).is_none(), "no shape before the first chunk");
    assert_eq!(RawChunk::check_like(first.as_bytes(), &mut shape), RawChunk::check(&first));
    for text in [" world", "", "line\none \"quoted\" \u{e9}\u{1F600}", "\\"] {
        let next = event(text);
        let filled = shape.fill(next.as_bytes()).unwrap_or_else(|| panic!("{next} fits"));
        assert_eq!(filled.content(), text);
        assert_eq!(Some(filled), RawChunk::check(&next));
    }
    let last = json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 5, "model": "m",
        "system_fingerprint": "fp", "choices": [{"index": 0, "delta": {}, "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}})
    .to_string();
    assert!(shape.fill(last.as_bytes()).is_none());
    assert_eq!(RawChunk::check_like(last.as_bytes(), &mut shape), RawChunk::check(&last));
}

/// Events read in place from an upstream's read keep their tail as a slice
/// of it when they fit the stream's shape; events written another way
/// (pretty-printed: the tail is put together) or read from a copy still
/// give what the whole check gives.
#[test]
fn a_chunk_like_the_shape_is_a_slice_of_its_read() {
    use super::ChunkShape;
    // Written as upstreams write them: the stamp's entries first.
    let event = |content: &str| {
        format!(
            r#"{{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{{"content":{}}},"finish_reason":null}}]}}"#,
            json!(content)
        )
    };
    let read = bytes::Bytes::from(format!("data: {}\n\ndata: {}\n\n", event("Hi"), event(" there \u{e9}")));
    let (first, second) = (event("Hi"), event(" there \u{e9}"));
    let at = 6 + first.len() + 8;
    let mut shape = ChunkShape::default();
    let a = RawChunk::check_like_in(&read[6..6 + first.len()], Some(&read), &mut shape).unwrap();
    assert_eq!(Some(a), RawChunk::check(&first));
    let b = RawChunk::check_like_in(&read[at..at + second.len()], Some(&read), &mut shape).unwrap();
    let inside = |t: &bytes::Bytes| {
        let (base, p) = (read.as_ptr() as usize, t.as_ptr() as usize);
        p >= base && p + t.len() <= base + read.len()
    };
    assert!(inside(b.tail()), "the tail was copied");
    assert_eq!(b.content(), " there \u{e9}");
    assert_eq!(Some(b), RawChunk::check(&second));
    // Pretty JSON: the tail is not one run of the data; put together.
    let pretty = |content: &str| {
        serde_json::to_string_pretty(&json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
            "model": "m", "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]}))
        .unwrap()
    };
    let mut shape = ChunkShape::default();
    let (p1, p2) = (pretty("a"), pretty("b"));
    let read = bytes::Bytes::from(format!("{p1}{p2}"));
    assert_eq!(RawChunk::check_like_in(&read[..p1.len()], Some(&read), &mut shape), RawChunk::check(&p1));
    let b = RawChunk::check_like_in(&read[p1.len()..], Some(&read), &mut shape).unwrap();
    assert!(!inside(b.tail()));
    assert_eq!(Some(b), RawChunk::check(&p2));
}
