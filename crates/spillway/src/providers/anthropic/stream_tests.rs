//! Tests for the Anthropic → OpenAI stream translation.

use serde_json::{json, Value};

use super::*;
use crate::providers::anthropic::test_support::{assert_valid, fixture, sse_events};
use crate::providers::translate::ErrorClass;

/// Feeds a whole transcript; returns the items, or the first error.
fn run(transcript: &str, include_usage: bool) -> Result<Vec<StreamItem>, TranslateError> {
    let mut decoder = StreamDecoder::new(include_usage);
    let mut items = Vec::new();
    for (name, data) in sse_events(transcript) {
        items.extend(decoder.on_event(name.as_deref(), &data)?);
    }
    Ok(items)
}

fn chunks(items: &[StreamItem]) -> Vec<&Value> {
    items
        .iter()
        .filter_map(|i| match i {
            StreamItem::Chunk(c) => Some(c),
            StreamItem::Done | StreamItem::Raw(_) | StreamItem::Skipped => None,
        })
        .collect()
}

fn assert_all_valid(items: &[StreamItem]) {
    for chunk in chunks(items) {
        assert_valid("CreateChatCompletionStreamResponse", chunk);
    }
}

#[test]
fn text_stream_translates_chunk_by_chunk() {
    let items = run(&fixture("stream_text.sse"), false).unwrap();
    let chunk = |delta: Value, finish: Value| {
        StreamItem::Chunk(json!({
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
        }))
    };
    assert_eq!(
        items,
        vec![
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": "Hello"}), Value::Null),
            chunk(json!({"content": "! How can I help?"}), Value::Null),
            chunk(json!({}), json!("stop")),
            StreamItem::Done,
        ]
    );
    assert_all_valid(&items);
}

#[test]
fn include_usage_adds_null_usage_and_a_final_usage_chunk() {
    let items = run(&fixture("stream_text.sse"), true).unwrap();
    let all = chunks(&items);
    assert!(all[..all.len() - 1].iter().all(|c| c["usage"].is_null() && c.get("usage").is_some()));
    assert_eq!(
        *all[all.len() - 1],
        json!({
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 35, "completion_tokens": 9, "total_tokens": 44,
                      "prompt_tokens_details": {"cached_tokens": 10}}
        })
    );
    assert_eq!(items.last(), Some(&StreamItem::Done));
    assert_all_valid(&items);
}

#[test]
fn tool_use_stream_yields_indexed_tool_call_deltas() {
    let items = run(&fixture("stream_tool_use.sse"), false).unwrap();
    let deltas: Vec<Value> = chunks(&items).iter().map(|c| c["choices"][0]["delta"].clone()).collect();
    assert_eq!(
        deltas,
        vec![
            json!({"role": "assistant", "content": ""}),
            json!({"content": "Let me check."}),
            json!({"tool_calls": [{"index": 0, "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "type": "function",
                                   "function": {"name": "get_weather", "arguments": ""}}]}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\": \"Os"}}]}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "lo\"}"}}]}),
            json!({"tool_calls": [{"index": 1, "id": "toolu_01B7rq2kD5xLmbWb5Zp3Z1", "type": "function",
                                   "function": {"name": "get_time", "arguments": ""}}]}),
            json!({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
            json!({}),
        ]
    );
    let last = chunks(&items)[deltas.len() - 1];
    assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(items.last(), Some(&StreamItem::Done));
    assert_all_valid(&items);
}

#[test]
fn error_event_after_200_is_a_classified_upstream_error() {
    let err = run(&fixture("stream_error_overloaded.sse"), false).unwrap_err();
    assert_eq!(
        err,
        TranslateError::Upstream { class: ErrorClass::Upstream, message: "overloaded_error: Overloaded".into() }
    );
    let mut decoder = StreamDecoder::new(false);
    let rate = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}"#;
    assert!(matches!(
        decoder.on_event(Some("error"), rate),
        Err(TranslateError::Upstream { class: ErrorClass::RateLimited, .. })
    ));
}

#[test]
fn unknown_events_and_deltas_are_ignored_but_known_garbage_is_malformed() {
    let mut decoder = StreamDecoder::new(false);
    assert_eq!(decoder.on_event(Some("future_event"), "not even json"), Ok(vec![]));
    assert_eq!(decoder.on_event(None, r#"{"type":"future_event"}"#), Ok(vec![]));
    assert_eq!(decoder.on_event(Some("ping"), r#"{"type": "ping"}"#), Ok(vec![]));
    let citations = r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#;
    assert_eq!(decoder.on_event(Some("content_block_delta"), citations), Ok(vec![]));
    for (name, data) in [
        ("message_start", "{\"type\":\"message_start\""),
        ("content_block_delta", "[]"),
        ("content_block_delta", r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}"#),
        ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}}"#),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":5,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","name":"f"}}"#,
        ),
        ("ping", ""),
    ] {
        assert!(
            matches!(
                decoder.on_event(Some(name), data),
                Err(TranslateError::Malformed { format: "anthropic", .. })
                    | Err(TranslateError::Unreadable { format: "anthropic", .. })
            ),
            "{name}: {data}"
        );
    }
}

#[test]
fn unnamed_events_fall_back_to_the_data_type() {
    let transcript =
        fixture("stream_text.sse").lines().filter(|l| !l.starts_with("event:")).collect::<Vec<_>>().join("\n");
    let named = run(&fixture("stream_text.sse"), true).unwrap();
    assert_eq!(run(&transcript, true).unwrap(), named);
    let mut decoder = StreamDecoder::new(false);
    assert!(matches!(
        decoder.on_event(None, r#"{"error":{"type":"api_error","message":"boom"}}"#),
        Err(TranslateError::Upstream { class: ErrorClass::Upstream, .. })
    ));
}

#[test]
fn role_comes_first_even_without_message_start() {
    let mut decoder = StreamDecoder::new(false);
    let items = decoder
        .on_event(
            Some("content_block_delta"),
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
        )
        .unwrap();
    assert_eq!(
        items,
        vec![StreamItem::Chunk(json!({
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": "Hi", "role": "assistant"}, "logprobs": null, "finish_reason": null}]
        }))]
    );
    let end = decoder.on_event(Some("message_stop"), r#"{"type":"message_stop"}"#).unwrap();
    // No usage was ever reported: no invented usage chunk, even if asked.
    assert_eq!(end.len(), 2);
    assert_eq!(end[1], StreamItem::Done);
    assert_all_valid(&items);
}

#[test]
fn usage_takes_the_last_cumulative_counts_and_events_after_stop_are_ignored() {
    let mut decoder = StreamDecoder::new(true);
    let events = [
        ("message_start", r#"{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}"#),
        ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":3}}"#),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"input_tokens":6,"output_tokens":7}}"#,
        ),
    ];
    for (name, data) in events {
        decoder.on_event(Some(name), data).unwrap();
    }
    let end = decoder.on_event(Some("message_stop"), "{\"type\":\"message_stop\"}").unwrap();
    let StreamItem::Chunk(finish) = &end[0] else { panic!("expected a chunk") };
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    let StreamItem::Chunk(usage) = &end[1] else { panic!("expected the usage chunk") };
    assert_eq!(usage["usage"]["prompt_tokens"], 6);
    assert_eq!(usage["usage"]["completion_tokens"], 7);
    assert_eq!(end[2], StreamItem::Done);
    assert_eq!(decoder.on_event(Some("message_stop"), "{}"), Ok(vec![]));
    assert_eq!(decoder.on_event(Some("error"), "garbage"), Ok(vec![]));
    assert_all_valid(&end);
}

#[test]
fn arbitrary_input_never_panics() {
    let names = [None, Some("message_start"), Some("content_block_start"), Some("content_block_delta"), Some("x")];
    let datas = [
        "",
        "null",
        "{}",
        "{\"index\":-1}",
        "{\"index\":1e99,\"delta\":null}",
        "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":1}}",
        "{\"message\":{\"usage\":{\"input_tokens\":-5,\"output_tokens\":\"many\"}}}",
        "\u{0}\u{ffff}",
    ];
    let mut decoder = StreamDecoder::new(true);
    for name in names {
        for data in datas {
            let _ = decoder.on_event(name, data);
        }
    }
}

#[test]
fn json_deltas_of_server_tool_blocks_are_not_client_tool_calls() {
    let mut decoder = StreamDecoder::new(false);
    let start = r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#;
    let delta = r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"x\"}"}}"#;
    assert_eq!(decoder.on_event(Some("content_block_start"), start), Ok(vec![]));
    assert_eq!(decoder.on_event(Some("content_block_delta"), delta), Ok(vec![]));
}

#[test]
fn unreadable_data_is_skippable_except_in_an_error_event() {
    let mut decoder = StreamDecoder::new(false);
    assert!(matches!(decoder.on_event(Some("content_block_delta"), "{oops"), Err(TranslateError::Unreadable { .. })));
    assert!(matches!(decoder.on_event(Some("error"), "Overloaded"), Err(TranslateError::Malformed { .. })));
}
