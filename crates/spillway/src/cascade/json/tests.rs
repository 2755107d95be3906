//! Unit tests of the JSON instruction and of stream assembly.

use super::*;
use crate::api::completion::{Completion, Tokens};
use crate::providers::StreamItem;

fn plan() -> JsonPlan {
    let rf = json!({"type": "json_object"});
    JsonPlan {
        instruction: normalize::schema_instruction(&rf),
        instruction_ru: normalize::schema_instruction_in(&rf, normalize::Lang::Ru),
        ..JsonPlan::default()
    }
}

fn system_after(system: &str) -> String {
    let mut body = json!({"messages": [{"role": "system", "content": system}, {"role": "user", "content": "x"}],
                              "response_format": {"type": "json_object"}});
    let Some(map) = body.as_object_mut() else { return String::new() };
    instruct(map, &plan());
    assert!(body.get("response_format").is_none());
    body["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

#[test]
fn the_instruction_follows_the_system_prompts_language() {
    let ru = system_after("Ты — ассистент банка. Отвечай вежливо.");
    assert!(ru.starts_with("Ты — ассистент банка."), "{ru}");
    assert!(ru.contains(normalize::OBJECT_INSTRUCTION_START_RU), "{ru}");
    let en = system_after("You are a bank assistant.");
    assert!(en.contains(normalize::OBJECT_INSTRUCTION_START), "{en}");
    assert!(!en.contains(normalize::OBJECT_INSTRUCTION_START_RU));
}

fn raw(data: &str) -> StreamItem {
    StreamItem::Raw(crate::api::completion::RawChunk::check(data).expect("a checked chunk"))
}

fn assembled(items: Vec<StreamItem>) -> Completion {
    let mut acc = Assembled::default();
    items.into_iter().for_each(|i| acc.absorb_item(i));
    acc.into_completion()
}

#[test]
fn checked_chunks_are_assembled_as_bytes_with_the_upstreams_usage() {
    let usage =
        r#"{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":2}}"#;
    let c = assembled(vec![
        raw(
            r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        ),
        raw(
            r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi \"you\""},"finish_reason":null}]}"#,
        ),
        raw(
            r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"length"}]}"#,
        ),
        raw(&format!(
            r#"{{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage" : {usage}}}"#
        )),
    ]);
    let Completion::Raw(raw) = &c else { panic!("not the bytes path: {c:?}") };
    assert!(raw.has_answer());
    assert_eq!(c.tokens(), Some(Tokens { input: 5, output: 3 }));
    let v: Value = serde_json::from_slice(&c.to_bytes()).unwrap();
    assert_eq!(v["choices"][0]["message"], json!({"role": "assistant", "content": "Hi \"you\"!", "refusal": null}));
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["usage"], serde_json::from_str::<Value>(usage).unwrap(), "the usage object as sent");
}

#[test]
fn refusals_and_tool_calls_are_assembled_from_trees() {
    let c = assembled(vec![raw(
        r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"refusal":"I can't"},"finish_reason":"stop"}]}"#,
    )]);
    assert!(c.has_answer());
    let v: Value = serde_json::from_slice(&c.to_bytes()).unwrap();
    assert_eq!(v["choices"][0]["message"]["refusal"], "I can't");
    let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]});
    let c = assembled(vec![StreamItem::Chunk(call)]);
    let Completion::Value(v) = c else { panic!("tool calls take the tree") };
    assert_eq!(v["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "f");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
}
