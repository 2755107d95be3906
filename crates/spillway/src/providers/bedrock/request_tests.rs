use super::*;
use serde_json::json;

fn weather_tool() -> Value {
    json!({"type": "function", "function": {"name": "get_weather", "description": "Current weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})
}

#[test]
fn a_tool_conversation_becomes_converse_messages() {
    let req = json!({"model": "x", "temperature": 1.6, "top_p": 0.9, "max_tokens": 512, "stop": ["END"],
        "tools": [weather_tool()], "tool_choice": "auto",
        "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": 14}"},
            {"role": "user", "content": "And tomorrow?"}]});
    let out = to_converse(&req).unwrap();
    assert_eq!(out["system"], json!([{"text": "Be terse."}]));
    assert_eq!(
        out["messages"],
        json!([
            {"role": "user", "content": [{"text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "call_1", "name": "get_weather", "input": {"city": "Paris"}}}]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "call_1", "content": [{"json": {"temp_c": 14}}], "status": "success"}},
                {"text": "And tomorrow?"}]}])
    );
    assert_eq!(
        out["inferenceConfig"],
        json!({"maxTokens": 512, "temperature": 1.0, "topP": 0.9, "stopSequences": ["END"]})
    );
    assert_eq!(out["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["required"], json!(["city"]));
    assert_eq!(out["toolConfig"]["toolChoice"], json!({"auto": {}}));
    assert!(out.get("model").is_none(), "the model is in the URL");
}

#[test]
fn tool_choice_and_ids() {
    let with = |choice: Value, history: bool| {
        let mut messages = vec![json!({"role": "user", "content": "x"})];
        if history {
            messages.push(json!({"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": "c", "content": "sunny"}));
        }
        let req = json!({"messages": messages, "tools": [weather_tool()], "tool_choice": choice});
        to_converse(&req).unwrap().get("toolConfig").cloned()
    };
    assert_eq!(with(json!("required"), false).unwrap()["toolChoice"], json!({"any": {}}));
    assert_eq!(
        with(json!({"type": "function", "function": {"name": "get_weather"}}), false).unwrap()["toolChoice"],
        json!({"tool": {"name": "get_weather"}})
    );
    assert_eq!(with(json!("none"), false), None, "no `none` in Converse: the tools are left out");
    let kept = with(json!("none"), true).unwrap();
    assert!(kept.get("toolChoice").is_none() && kept["tools"].is_array(), "tool history needs the toolConfig");
    assert_eq!(tool_use_id("toolu_01A/b c"), "toolu_01A_b_c");
    assert_eq!(tool_use_id(&"x".repeat(80)).len(), 64);
}

#[test]
fn json_mode_and_images() {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    let req = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "Where?"},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}}]}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "place", "schema": schema}}});
    let out = to_converse(&req).unwrap();
    let format = &out["outputConfig"]["textFormat"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["structure"]["jsonSchema"]["name"], "place");
    let sent: Value = serde_json::from_str(format["structure"]["jsonSchema"]["schema"].as_str().unwrap()).unwrap();
    assert_eq!(sent, schema, "the schema travels as a JSON string");
    assert_eq!(out["messages"][0]["content"][1], json!({"image": {"format": "jpeg", "source": {"bytes": "/9j/"}}}));
    let req = json!({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}});
    let out = to_converse(&req).unwrap();
    assert!(out.get("outputConfig").is_none());
    assert!(out["system"][0]["text"].as_str().unwrap().contains("JSON"));
}

#[test]
fn what_converse_cannot_express_is_refused_before_sending() {
    for req in [
        json!({"messages": [{"role": "user", "content": "x"}], "n": 3}),
        json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]}),
        json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/tiff;base64,AA"}}]}]}),
        json!({"messages": [{"role": "system", "content": "only"}]}),
        json!({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "grammar"}}),
    ] {
        assert!(matches!(to_converse(&req), Err(TranslateError::Unsupported(_))), "{req}");
    }
}
