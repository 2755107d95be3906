use super::*;
use serde_json::json;

fn weather_tool() -> Value {
    json!({"type": "function", "function": {"name": "get_weather", "description": "Current weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})
}

#[test]
fn a_conversation_becomes_contents_with_a_system_instruction() {
    let req = json!({"model": "x", "temperature": 0.2, "top_p": 0.9, "max_tokens": 100, "stop": "END", "seed": 7,
        "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "developer", "content": [{"type": "text", "text": "Use metric."}]},
            {"role": "user", "content": [{"type": "text", "text": "Hi"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "Weather?"}]});
    let out = to_gemini(&req, "gemini-2.5-flash").unwrap();
    assert_eq!(out["systemInstruction"], json!({"parts": [{"text": "Be terse."}, {"text": "Use metric."}]}));
    assert_eq!(
        out["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Hi"}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]},
            {"role": "model", "parts": [{"text": "Hello."}]},
            {"role": "user", "parts": [{"text": "Weather?"}]}])
    );
    assert_eq!(
        out["generationConfig"],
        json!({"temperature": 0.2, "topP": 0.9, "maxOutputTokens": 100, "stopSequences": ["END"], "seed": 7})
    );
    assert!(out.get("tools").is_none() && out.get("toolConfig").is_none());
}

#[test]
fn tools_calls_and_results_round_trip() {
    let req = json!({"model": "x", "tools": [weather_tool()], "tool_choice": "required", "messages": [
        {"role": "user", "content": "Weather in Oslo and Bergen?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": 4}"},
        {"role": "tool", "tool_call_id": "call_2", "content": "12:00"}]});
    let out = to_gemini(&req, "gemini-2.5-pro").unwrap();
    assert_eq!(out["tools"][0]["functionDeclarations"][0]["name"], "get_weather");
    assert_eq!(out["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["required"], json!(["city"]));
    assert_eq!(out["toolConfig"], json!({"functionCallingConfig": {"mode": "ANY"}}));
    let contents = out["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3, "the two results share one user turn: {out}");
    assert_eq!(contents[1]["parts"][0], json!({"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}));
    assert_eq!(contents[1]["parts"][1]["functionCall"]["args"], json!({"_raw_arguments": "not json"}));
    assert_eq!(
        contents[2]["parts"],
        json!([{"functionResponse": {"name": "get_weather", "response": {"temp_c": 4}}},
               {"functionResponse": {"name": "get_time", "response": {"output": "12:00"}}}])
    );
    // Gemini 3 wants a thought signature on replayed calls.
    let out = to_gemini(&req, "gemini-3-pro-preview").unwrap();
    assert_eq!(out["contents"][1]["parts"][0]["thoughtSignature"], SKIP_SIGNATURE);
}

#[test]
fn tool_choice_modes() {
    let with = |choice: Value| {
        let req =
            json!({"messages": [{"role": "user", "content": "x"}], "tools": [weather_tool()], "tool_choice": choice});
        to_gemini(&req, "m").map(|o| o["toolConfig"]["functionCallingConfig"].clone())
    };
    assert_eq!(with(json!("auto")).unwrap(), json!({"mode": "AUTO"}));
    assert_eq!(with(json!("none")).unwrap(), json!({"mode": "NONE"}));
    assert_eq!(
        with(json!({"type": "function", "function": {"name": "get_weather"}})).unwrap(),
        json!({"mode": "ANY", "allowedFunctionNames": ["get_weather"]})
    );
    assert!(with(json!("sometimes")).is_err());
}

#[test]
fn json_mode_is_the_response_mime_type_and_schema() {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    let req = json!({"messages": [{"role": "user", "content": "x"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": schema}}});
    let out = to_gemini(&req, "m").unwrap();
    assert_eq!(out["generationConfig"]["responseMimeType"], "application/json");
    assert_eq!(out["generationConfig"]["responseJsonSchema"], schema);
    let req = json!({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}});
    let out = to_gemini(&req, "m").unwrap();
    assert_eq!(out["generationConfig"], json!({"responseMimeType": "application/json"}));
    // Forced calls and a JSON mime type are refused together by Gemini.
    let req = json!({"messages": [{"role": "user", "content": "x"}], "tools": [weather_tool()],
        "tool_choice": "required", "response_format": {"type": "json_object"}});
    assert!(to_gemini(&req, "m").unwrap().get("generationConfig").is_none());
}

#[test]
fn what_gemini_cannot_express_is_refused_before_sending() {
    for req in [
        json!({"messages": [{"role": "user", "content": "x"}], "n": 2}),
        json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]}),
        json!({"messages": [{"role": "tool", "tool_call_id": "nowhere", "content": "1"}]}),
        json!({"messages": [{"role": "system", "content": "only a system message"}]}),
        json!({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "code_interpreter"}]}),
    ] {
        assert!(matches!(to_gemini(&req, "m"), Err(TranslateError::Unsupported(_))), "{req}");
    }
}
