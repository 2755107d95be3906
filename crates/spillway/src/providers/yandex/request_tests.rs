//! Tests for the OpenAI → Yandex native request translation.

use serde_json::json;

use super::*;

#[test]
fn plain_chat() {
    let req = json!({
        "model": "auto",
        "messages": [
            {"role": "developer", "content": "Return JSON only."},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": "ok"},
        ],
        "temperature": 1.5,
        "max_tokens": 2000,
        "stream": true,
        "stop": "x",
        "top_p": 0.5,
        "response_format": {"type": "json_object"},
    });
    let body = to_yandex(&req, "b1gfolder", "yandexgpt/latest").unwrap();
    assert_eq!(
        body,
        json!({
            "modelUri": "gpt://b1gfolder/yandexgpt/latest",
            "completionOptions": {"stream": true, "temperature": 1.0, "maxTokens": "2000"},
            "messages": [
                {"role": "system", "text": "Return JSON only."},
                {"role": "user", "text": "a\nb"},
                {"role": "assistant", "text": "ok"},
            ],
            "jsonObject": true,
        })
    );
}

#[test]
fn model_uri_passes_through_and_folder_is_required() {
    let req = json!({"messages": [{"role": "user", "content": "x"}]});
    let body = to_yandex(&req, "b1g", "gpt://other/yandexgpt-lite/rc").unwrap();
    assert_eq!(body["modelUri"], "gpt://other/yandexgpt-lite/rc");
    assert_eq!(body["completionOptions"], json!({"stream": false}));
    assert!(to_yandex(&req, "", "yandexgpt/latest").is_err());
    assert_eq!(to_yandex(&req, "", "ds://ft123").unwrap()["modelUri"], "ds://ft123");
}

#[test]
fn tools_and_choices() {
    let req = |choice: Value| {
        json!({
            "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
            "tool_choice": choice,
            "parallel_tool_calls": false,
        })
    };
    let body = to_yandex(&req(json!("auto")), "f", "yandexgpt/latest").unwrap();
    assert_eq!(
        body["tools"],
        json!([{"function": {"name": "get_weather", "description": "d",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])
    );
    assert_eq!(body["toolChoice"], json!({"mode": "AUTO"}));
    assert_eq!(body["parallelToolCalls"], false);
    let choice = |c: Value| to_yandex(&req(c), "f", "m").unwrap()["toolChoice"].clone();
    assert_eq!(choice(json!("none")), json!({"mode": "NONE"}));
    assert_eq!(choice(json!("required")), json!({"mode": "REQUIRED"}));
    assert_eq!(
        choice(json!({"type": "function", "function": {"name": "get_weather"}})),
        json!({"functionName": "get_weather"})
    );
}

#[test]
fn json_schema_format() {
    let req = json!({"messages": [{"role": "user", "content": "x"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}});
    let body = to_yandex(&req, "f", "m").unwrap();
    assert_eq!(body["jsonSchema"], json!({"schema": {"type": "object"}}));
}

#[test]
fn tool_history_uses_lists_and_merges_results() {
    let req = json!({"messages": [
        {"role": "user", "content": "Oslo and Bergen?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "time", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "+4"},
        {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "noon"}]},
        {"role": "assistant", "content": "4 °C at noon."},
    ]});
    let body = to_yandex(&req, "f", "m").unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "text": "Oslo and Bergen?"},
            {"role": "assistant", "text": "Checking."},
            {"role": "assistant", "toolCallList": {"toolCalls": [
                {"functionCall": {"name": "weather", "arguments": {"city": "Oslo"}}},
                {"functionCall": {"name": "time", "arguments": {}}}]}},
            {"role": "user", "toolResultList": {"toolResults": [
                {"functionResult": {"name": "weather", "content": "+4"}},
                {"functionResult": {"name": "time", "content": "noon"}}]}},
            {"role": "assistant", "text": "4 °C at noon."},
        ])
    );
}

#[test]
fn unknown_ids_roles_and_images_are_unsupported() {
    for messages in [
        json!([{"role": "tool", "tool_call_id": "call_x", "content": "1"}]),
        json!([{"role": "critic", "content": "1"}]),
        json!([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]),
    ] {
        let req = json!({ "messages": messages });
        assert!(matches!(to_yandex(&req, "f", "m"), Err(TranslateError::Unsupported(_))));
    }
}
