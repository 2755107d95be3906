//! Tests for the GigaChat stream decoder, driven by recorded-shape SSE
//! transcripts.

use serde_json::json;

use super::*;
use crate::providers::gigachat::test_support::{fixture, validate_chunk};
use crate::providers::translate::ErrorClass;

/// Splits an SSE transcript into `data` payloads (enough for fixtures: one
/// `data:` line per event).
fn events(name: &str) -> Vec<String> {
    let text = String::from_utf8(fixture(name)).unwrap();
    text.split("\n\n")
        .filter_map(|event| event.trim().strip_prefix("data:"))
        .map(|data| data.trim().to_owned())
        .collect()
}

fn run(name: &str, include_usage: bool) -> Result<Vec<StreamItem>, TranslateError> {
    let mut decoder = StreamDecoder::new(include_usage);
    let mut items = Vec::new();
    for data in events(name) {
        items.extend(decoder.on_event(None, &data)?);
    }
    Ok(items)
}

fn chunks(items: &[StreamItem]) -> Vec<&Value> {
    items
        .iter()
        .filter_map(|item| match item {
            StreamItem::Chunk(c) => Some(c),
            StreamItem::Done | StreamItem::Raw(_) | StreamItem::Skipped => None,
        })
        .collect()
}

#[test]
fn text_stream_with_usage() {
    let items = run("gigachat/stream_text.sse", true).unwrap();
    assert_eq!(items.last(), Some(&StreamItem::Done));
    let chunks = chunks(&items);
    for c in &chunks {
        validate_chunk(c);
        assert_eq!(c["object"], "chat.completion.chunk");
    }
    assert_eq!(chunks.len(), 4);
    assert_eq!(chunks[0]["choices"][0]["delta"], json!({"role": "assistant", "content": "1, 2"}));
    assert_eq!(chunks[0]["usage"], Value::Null);
    assert_eq!(chunks[1]["choices"][0]["delta"], json!({"content": ", 3"}));
    assert_eq!(chunks[2]["choices"][0]["delta"], json!({}));
    assert_eq!(chunks[2]["choices"][0]["finish_reason"], "stop");
    assert_eq!(chunks[3]["choices"], json!([]));
    assert_eq!(chunks[3]["usage"]["total_tokens"], 59);
    assert_eq!(chunks[3]["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
}

#[test]
fn no_usage_chunk_unless_asked() {
    let items = run("gigachat/stream_text.sse", false).unwrap();
    let chunks = chunks(&items);
    assert_eq!(chunks.len(), 3);
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
}

#[test]
fn whole_function_call_becomes_tool_call_delta() {
    let items = run("gigachat/stream_function_call.sse", false).unwrap();
    let chunks = chunks(&items);
    for c in &chunks {
        validate_chunk(c);
    }
    assert_eq!(chunks.len(), 2);
    let delta = &chunks[0]["choices"][0]["delta"];
    assert_eq!(delta["role"], "assistant");
    let call = &delta["tool_calls"][0];
    assert_eq!(call["index"], 0);
    assert!(call["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    let args: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Москва"}));
    assert_eq!(chunks[1]["choices"][0]["finish_reason"], "tool_calls");
}

#[test]
fn function_call_in_pieces() {
    let mut d = StreamDecoder::new(false);
    let mut items = Vec::new();
    for data in [
        r#"{"choices":[{"delta":{"role":"assistant","content":"","function_call":{"name":"f"}},"index":0}]}"#,
        r#"{"choices":[{"delta":{"function_call":{"arguments":"{\"a\":"}},"index":0}]}"#,
        r#"{"choices":[{"delta":{"function_call":{"arguments":"1}"}},"index":0,"finish_reason":"function_call"}]}"#,
        "[DONE]",
    ] {
        items.extend(d.on_event(None, data).unwrap());
    }
    let chunks = chunks(&items);
    for c in &chunks {
        validate_chunk(c);
    }
    let mut args = String::new();
    for c in &chunks {
        if let Some(piece) = c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str() {
            args.push_str(piece);
        }
    }
    assert_eq!(args, r#"{"a":1}"#);
    assert_eq!(chunks.last().unwrap()["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(chunks[0]["choices"][0]["delta"]["tool_calls"][0]["id"].as_str().map(|s| &s[..5]), Some("call_"));
}

#[test]
fn call_without_arguments_gets_empty_object() {
    let mut d = StreamDecoder::new(false);
    let mut items = d
        .on_event(
            None,
            r#"{"choices":[{"delta":{"function_call":{"name":"now"}},"index":0,"finish_reason":"function_call"}]}"#,
        )
        .unwrap();
    items.extend(d.on_event(None, "[DONE]").unwrap());
    let chunks = chunks(&items);
    assert_eq!(chunks[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"], "{}");
    assert_eq!(chunks[2]["choices"][0]["finish_reason"], "tool_calls");
}

#[test]
fn blacklist_is_a_content_filter_error() {
    let err = run("gigachat/stream_blacklist.sse", true).unwrap_err();
    assert!(matches!(err, TranslateError::Upstream { class: ErrorClass::ContentFilter, .. }));
}

#[test]
fn error_events_and_garbage() {
    let mut d = StreamDecoder::new(false);
    let err = d.on_event(None, r#"{"status":429,"message":"Too many requests"}"#).unwrap_err();
    assert!(matches!(err, TranslateError::Upstream { class: ErrorClass::RateLimited, .. }));
    let err = d.on_event(Some("error"), r#"{"error":{"message":"boom"}}"#).unwrap_err();
    assert!(matches!(err, TranslateError::Upstream { class: ErrorClass::Upstream, .. }));
    assert!(matches!(d.on_event(None, "{not json"), Err(TranslateError::Unreadable { .. })));
    assert!(matches!(d.on_event(Some("error"), "{not json"), Err(TranslateError::Malformed { .. })));
    assert_eq!(d.on_event(None, "  ").unwrap(), vec![]);
}

#[test]
fn done_closes_unfinished_choices_and_ignores_the_rest() {
    let mut d = StreamDecoder::new(true);
    let first =
        d.on_event(None, r#"{"choices":[{"delta":{"content":"Hi"},"index":0}],"object":"chat.completion"}"#).unwrap();
    assert_eq!(chunks(&first)[0]["choices"][0]["delta"]["role"], "assistant");
    let end = d.on_event(None, "[DONE]").unwrap();
    assert_eq!(end.len(), 2);
    assert_eq!(chunks(&end)[0]["choices"][0]["finish_reason"], "stop");
    assert_eq!(end[1], StreamItem::Done);
    assert_eq!(d.on_event(None, r#"{"choices":[]}"#).unwrap(), vec![]);
    assert_eq!(d.on_event(None, "[DONE]").unwrap(), vec![]);
}

#[test]
fn empty_stream_is_just_done() {
    let mut d = StreamDecoder::new(true);
    assert_eq!(d.on_event(None, "[DONE]").unwrap(), vec![StreamItem::Done]);
}
