//! Tests for the OpenAI → GigaChat request translation.

use serde_json::json;

use super::*;

fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().unwrap()
}

#[test]
fn plain_chat_keeps_order_and_maps_options() {
    let req = json!({
        "model": "spillway-cascade",
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "system", "content": [{"type": "text", "text": "Answer in Russian."}]},
            {"role": "user", "name": "bob", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]},
            {"role": "system", "content": "Late rule."},
            {"role": "assistant", "content": null},
        ],
        "temperature": 0,
        "top_p": 0.9,
        "max_completion_tokens": 100,
        "max_tokens": 5,
        "stream": true,
        "stop": ["x"],
        "seed": 1,
        "response_format": {"type": "json_object"},
    });
    let body = to_gigachat(&req, "GigaChat-2-Max").unwrap();
    assert_eq!(
        body,
        json!({
            "model": "GigaChat-2-Max",
            "messages": [
                {"role": "system", "content": "Be brief.\n\nAnswer in Russian."},
                {"role": "user", "content": "Hi\nthere"},
                {"role": "user", "content": "Late rule."},
                {"role": "assistant", "content": ""},
            ],
            "stream": true,
            "temperature": 1e-15,
            "top_p": 0.9,
            "max_tokens": 100,
        })
    );
}

#[test]
fn positive_temperature_passes_through() {
    let req = json!({"messages": [{"role": "user", "content": "x"}], "temperature": 0.7});
    assert_eq!(to_gigachat(&req, "GigaChat").unwrap()["temperature"], 0.7);
}

#[test]
fn tools_become_functions() {
    let req = json!({
        "messages": [{"role": "user", "content": "Weather?"}],
        "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": "Weather by city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            "strict": true}},
            {"type": "function", "function": {"name": "now"}}],
    });
    let body = to_gigachat(&req, "GigaChat").unwrap();
    assert_eq!(
        body["functions"],
        json!([
            {"name": "get_weather", "description": "Weather by city",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
            {"name": "now", "parameters": {"type": "object", "properties": {}}},
        ])
    );
    assert_eq!(body["function_call"], "auto");
}

#[test]
fn tool_choice_variants() {
    let base = |choice: Value, n: usize| {
        let tools: Vec<Value> =
            (0..n).map(|i| json!({"type": "function", "function": {"name": format!("f{i}")}})).collect();
        let req = json!({"messages": [{"role": "user", "content": "x"}], "tools": tools, "tool_choice": choice});
        to_gigachat(&req, "GigaChat").unwrap()["function_call"].clone()
    };
    assert_eq!(base(json!("none"), 2), "none");
    assert_eq!(base(json!("auto"), 2), "auto");
    assert_eq!(base(json!("required"), 1), json!({"name": "f0"}));
    assert_eq!(base(json!("required"), 2), "auto");
    assert_eq!(base(json!({"type": "function", "function": {"name": "f1"}}), 2), json!({"name": "f1"}));
}

#[test]
fn no_tools_means_no_functions() {
    let req = json!({"messages": [{"role": "user", "content": "x"}], "tool_choice": "none"});
    let body = to_gigachat(&req, "GigaChat").unwrap();
    assert!(body.get("functions").is_none());
    assert!(body.get("function_call").is_none());
}

#[test]
fn tool_history_round_trips_with_names_from_ids() {
    let req = json!({"messages": [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\":4}"},
        {"role": "assistant", "content": "4 °C."},
    ]});
    let body = to_gigachat(&req, "GigaChat").unwrap();
    assert_eq!(
        messages(&body)[1..],
        [
            json!({"role": "assistant", "content": "", "function_call": {"name": "get_weather", "arguments": {"city": "Oslo"}}}),
            json!({"role": "function", "name": "get_weather", "content": "{\"temp_c\":4}"}),
            json!({"role": "assistant", "content": "4 °C."}),
        ]
    );
}

#[test]
fn parallel_calls_are_split_into_call_result_pairs() {
    let req = json!({"messages": [
        {"role": "user", "content": "Oslo and Bergen?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "time", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "call_b", "content": "noon"},
        {"role": "tool", "tool_call_id": "call_a", "content": [{"type": "text", "text": "4"}]},
    ]});
    let body = to_gigachat(&req, "GigaChat").unwrap();
    assert_eq!(
        messages(&body)[1..],
        [
            json!({"role": "assistant", "content": "Checking.", "function_call": {"name": "weather", "arguments": {"city": "Oslo"}}}),
            json!({"role": "function", "name": "weather", "content": "4"}),
            json!({"role": "assistant", "content": "", "function_call": {"name": "time", "arguments": {}}}),
            json!({"role": "function", "name": "time", "content": "\"noon\""}),
        ]
    );
}

#[test]
fn unknown_tool_call_id_is_unsupported() {
    let req = json!({"messages": [
        {"role": "user", "content": "x"},
        {"role": "tool", "tool_call_id": "call_missing", "content": "1"},
    ]});
    assert!(matches!(to_gigachat(&req, "GigaChat"), Err(TranslateError::Unsupported(_))));
}

#[test]
fn legacy_functions_and_function_messages() {
    let req = json!({
        "messages": [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": null, "function_call": {"name": "f", "arguments": "{\"a\":1}"}},
            {"role": "function", "name": "f", "content": "{\"ok\":true}"},
        ],
        "functions": [{"name": "f", "parameters": {"type": "object"}}],
        "function_call": {"name": "f"},
    });
    let body = to_gigachat(&req, "GigaChat").unwrap();
    assert_eq!(body["function_call"], json!({"name": "f"}));
    assert_eq!(messages(&body)[1]["function_call"]["arguments"], json!({"a": 1}));
    assert_eq!(messages(&body)[2], json!({"role": "function", "name": "f", "content": "{\"ok\":true}"}));
}

#[test]
fn images_and_custom_tools_are_unsupported() {
    let image = json!({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]});
    assert!(to_gigachat(&image, "GigaChat").is_err());
    let custom = json!({"messages": [{"role": "user", "content": "x"}],
        "tools": [{"type": "custom", "custom": {"name": "c"}}]});
    assert!(to_gigachat(&custom, "GigaChat").is_err());
    assert!(to_gigachat(&json!({}), "GigaChat").is_err());
}
