//! Tests for the Yandex cumulative-stream decoder.

use serde_json::json;

use super::*;
use crate::providers::gigachat::test_support::{fixture, validate_chunk};
use crate::providers::translate::ErrorClass;

fn run(name: &str, include_usage: bool) -> Result<Vec<StreamItem>, TranslateError> {
    let text = String::from_utf8(fixture(name)).unwrap();
    let mut decoder = StreamDecoder::new(include_usage);
    let mut items = Vec::new();
    for line in text.lines() {
        items.extend(decoder.on_line(line)?);
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

fn line(text: &str, status: &str) -> String {
    json!({"result": {"alternatives": [{"message": {"role": "assistant", "text": text}, "status": status}],
        "usage": {"inputTextTokens": "5", "completionTokens": "1", "totalTokens": "6"}}})
    .to_string()
}

fn contents(items: &[StreamItem]) -> String {
    chunks(items).iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect()
}

#[test]
fn cumulative_text_becomes_deltas() {
    let items = run("yandex/stream_text.ndjson", true).unwrap();
    assert_eq!(items.last(), Some(&StreamItem::Done));
    let chunks = chunks(&items);
    for c in &chunks {
        validate_chunk(c);
    }
    let deltas: Vec<&Value> = chunks.iter().map(|c| &c["choices"][0]["delta"]).collect();
    assert_eq!(*deltas[0], json!({"role": "assistant", "content": "Один"}));
    assert_eq!(*deltas[1], json!({"content": ", два"}));
    assert_eq!(*deltas[2], json!({"content": ", три."}));
    assert_eq!(chunks[3]["choices"][0]["finish_reason"], "stop");
    assert_eq!(chunks[4]["choices"], json!([]));
    assert_eq!(chunks[4]["usage"], json!({"prompt_tokens": 18, "completion_tokens": 6, "total_tokens": 24}));
    assert_eq!(chunks.len(), 5);
    assert_eq!(contents(&items), "Один, два, три.");
}

#[test]
fn no_usage_chunk_unless_asked() {
    let items = run("yandex/stream_text.ndjson", false).unwrap();
    assert!(chunks(&items).iter().all(|c| c.get("usage").is_none() && !c["choices"].as_array().unwrap().is_empty()));
}

#[test]
fn tool_calls_come_with_the_final_status() {
    let items = run("yandex/stream_tool_calls.ndjson", false).unwrap();
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
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], r#"{"city":"Москва"}"#);
    assert_eq!(chunks[1]["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(items.last(), Some(&StreamItem::Done));
}

#[test]
fn shrinking_text_sends_nothing_and_is_not_repeated() {
    let mut d = StreamDecoder::new(false);
    let mut items = Vec::new();
    for (text, status) in [
        ("Hello wor", "ALTERNATIVE_STATUS_PARTIAL"),
        ("Hello", "ALTERNATIVE_STATUS_PARTIAL"),
        ("Hello world", "ALTERNATIVE_STATUS_PARTIAL"),
        ("Hello world!", "ALTERNATIVE_STATUS_FINAL"),
    ] {
        items.extend(d.on_line(&line(text, status)).unwrap());
    }
    assert_eq!(contents(&items), "Hello world!");
    assert_eq!(items.last(), Some(&StreamItem::Done));
}

#[test]
fn diverging_text_is_an_error() {
    let mut d = StreamDecoder::new(false);
    d.on_line(&line("Hello world", "ALTERNATIVE_STATUS_PARTIAL")).unwrap();
    assert!(matches!(
        d.on_line(&line("Hello, world", "ALTERNATIVE_STATUS_PARTIAL")),
        Err(TranslateError::Malformed { .. })
    ));
}

#[test]
fn content_filter_and_error_lines() {
    let mut d = StreamDecoder::new(false);
    assert!(matches!(
        d.on_line(&line("x", "ALTERNATIVE_STATUS_CONTENT_FILTER")),
        Err(TranslateError::Upstream { class: ErrorClass::ContentFilter, .. })
    ));
    assert!(matches!(
        run("yandex/stream_error.ndjson", false),
        Err(TranslateError::Upstream { class: ErrorClass::Upstream, .. })
    ));
    assert!(matches!(StreamDecoder::new(false).on_line("{oops"), Err(TranslateError::Unreadable { .. })));
}

#[test]
fn tolerates_data_prefix_blank_lines_and_trailing_lines() {
    let mut d = StreamDecoder::new(false);
    assert_eq!(d.on_line("").unwrap(), vec![]);
    let first = d.on_line(&format!("data: {}", line("Hi", "ALTERNATIVE_STATUS_PARTIAL"))).unwrap();
    assert_eq!(contents(&first), "Hi");
    let last = d.on_line(&line("Hi", "ALTERNATIVE_STATUS_TRUNCATED_FINAL")).unwrap();
    assert_eq!(chunks(&last)[0]["choices"][0]["finish_reason"], "length");
    assert_eq!(last.last(), Some(&StreamItem::Done));
    assert_eq!(d.on_line(&line("Hi there", "ALTERNATIVE_STATUS_FINAL")).unwrap(), vec![]);
}

#[test]
fn multibyte_suffixes_are_split_safely() {
    let mut d = StreamDecoder::new(false);
    let mut items = d.on_line(&line("Пр", "ALTERNATIVE_STATUS_PARTIAL")).unwrap();
    items.extend(d.on_line(&line("Привет", "ALTERNATIVE_STATUS_FINAL")).unwrap());
    assert_eq!(contents(&items), "Привет");
}
