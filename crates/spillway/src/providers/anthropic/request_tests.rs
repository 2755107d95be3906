//! Tests for the OpenAI → Anthropic request translation.

use serde_json::{json, Value};

use super::*;

fn translate(req: Value) -> Value {
    to_anthropic(&req, "claude-sonnet-4-20250514", 4096).unwrap()
}

fn unsupported_detail(req: Value) -> String {
    match to_anthropic(&req, "m", 100) {
        Err(TranslateError::Unsupported(detail)) => detail,
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn plain_chat_lifts_system_and_sets_defaults() {
    let out = translate(json!({
        "model": "auto",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"}
        ]
    }));
    assert_eq!(
        out,
        json!({
            "model": "claude-sonnet-4-20250514",
            "max_tokens": 4096,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
        })
    );
}

#[test]
fn several_system_and_developer_messages_become_text_blocks_in_order() {
    let out = translate(json!({"messages": [
        {"role": "system", "content": "One."},
        {"role": "developer", "content": [{"type": "text", "text": "Two."}, {"type": "text", "text": " "}]},
        {"role": "user", "content": "Hi"},
        {"role": "system", "content": "Three."}
    ]}));
    assert_eq!(
        out["system"],
        json!([
            {"type": "text", "text": "One."},
            {"type": "text", "text": "Two."},
            {"type": "text", "text": "Three."}
        ])
    );
    assert_eq!(out["messages"].as_array().unwrap().len(), 1);
}

#[test]
fn max_tokens_prefers_max_completion_tokens_then_max_tokens() {
    let msgs = json!([{"role": "user", "content": "x"}]);
    let both = translate(json!({"messages": msgs, "max_completion_tokens": 10, "max_tokens": 20}));
    assert_eq!(both["max_tokens"], 10);
    let legacy = translate(json!({"messages": msgs, "max_tokens": 20, "max_completion_tokens": null}));
    assert_eq!(legacy["max_tokens"], 20);
}

#[test]
fn sampling_stop_stream_and_user_are_mapped() {
    let out = translate(json!({
        "messages": [{"role": "user", "content": "x"}],
        "temperature": 1.7, "top_p": 0.9, "stop": "END", "stream": true,
        "stream_options": {"include_usage": true}, "user": "u-1",
        "n": 1, "seed": 7, "presence_penalty": 0.5, "logit_bias": {"1": 2}
    }));
    assert_eq!(out["temperature"], 1.0);
    assert_eq!(out["top_p"], 0.9);
    assert_eq!(out["stop_sequences"], json!(["END"]));
    assert_eq!(out["stream"], true);
    assert_eq!(out["metadata"], json!({"user_id": "u-1"}));
    for dropped in ["n", "seed", "presence_penalty", "logit_bias", "stream_options", "stop", "user"] {
        assert!(out.get(dropped).is_none(), "{dropped} should be dropped");
    }
    let arr = translate(json!({"messages": [{"role": "user", "content": "x"}], "stop": ["a", "", "b"]}));
    assert_eq!(arr["stop_sequences"], json!(["a", "b"]));
}

#[test]
fn tool_round_trip_history_pairs_results_with_calls() {
    let out = translate(json!({"messages": [
        {"role": "user", "content": "Weather in Oslo and Bergen?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}},
            {"id": "toolu_01X", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Bergen\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\":4}"},
        {"role": "tool", "tool_call_id": "toolu_01X", "content": [{"type": "text", "text": "{\"temp_c\":"}, {"type": "text", "text": "6}"}]},
        {"role": "user", "content": "Thanks"}
    ]}));
    assert_eq!(
        out["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo and Bergen?"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "toolu_01X", "name": "get_weather", "input": {"city": "Bergen"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "{\"temp_c\":4}"},
                {"type": "tool_result", "tool_use_id": "toolu_01X", "content": "{\"temp_c\":6}"},
                {"type": "text", "text": "Thanks"}
            ]}
        ])
    );
}

#[test]
fn tool_results_go_before_user_text_already_in_the_turn() {
    let out = translate(json!({"messages": [
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]},
        {"role": "user", "content": "hurry"},
        {"role": "tool", "tool_call_id": "call_1", "content": "done"}
    ]}));
    assert_eq!(
        out["messages"][0]["content"],
        json!([
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "call_1", "name": "f", "input": {}}
        ])
    );
    assert_eq!(out["messages"][1]["content"][0]["type"], "tool_result");
    assert_eq!(out["messages"][1]["content"][1]["text"], "hurry");
}

#[test]
fn broken_arguments_are_wrapped_not_fatal() {
    let call = |args: Value| {
        let out = translate(json!({"messages": [
            {"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": args}}]}
        ]}));
        out["messages"][1]["content"][0]["input"].clone()
    };
    assert_eq!(call(json!("{\"a\": 1")), json!({RAW_ARGUMENTS_KEY: "{\"a\": 1"}));
    assert_eq!(call(json!("[1,2]")), json!({RAW_ARGUMENTS_KEY: "[1,2]"}));
    assert_eq!(call(json!("  ")), json!({}));
    assert_eq!(call(json!({"already": "object"})), json!({"already": "object"}));
}

#[test]
fn consecutive_same_role_messages_merge_and_blanks_vanish() {
    let out = translate(json!({"messages": [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": [{"type": "text", "text": "b"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "c"}, {"type": "refusal", "refusal": "no"}]},
        {"role": "assistant", "content": "d"}
    ]}));
    assert_eq!(
        out["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "c"}, {"type": "text", "text": "no"}, {"type": "text", "text": "d"}]}
        ])
    );
}

#[test]
fn images_become_base64_or_url_sources() {
    let out = translate(json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}
    ]}]}));
    assert_eq!(
        out["messages"][0]["content"],
        json!([
            {"type": "text", "text": "What is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}
        ])
    );
    let bad = json!({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png,rawbytes"}}]}]});
    assert!(unsupported_detail(bad).contains("base64"));
}

#[test]
fn tools_and_tool_choice_are_mapped() {
    let base = json!({
        "messages": [{"role": "user", "content": "x"}],
        "tools": [
            {"type": "function", "function": {"name": "get_weather", "description": "Weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, "strict": true}},
            {"type": "function", "function": {"name": "now"}}
        ]
    });
    let with = |extra: Value| {
        let mut req = base.clone();
        req.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        translate(req)
    };
    let out = with(json!({}));
    assert_eq!(
        out["tools"],
        json!([
            {"name": "get_weather", "description": "Weather",
             "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
            {"name": "now", "input_schema": {"type": "object", "properties": {}}}
        ])
    );
    assert!(out.get("tool_choice").is_none());
    assert_eq!(with(json!({"tool_choice": "auto"}))["tool_choice"], json!({"type": "auto"}));
    assert_eq!(with(json!({"tool_choice": "none"}))["tool_choice"], json!({"type": "none"}));
    assert_eq!(with(json!({"tool_choice": "required"}))["tool_choice"], json!({"type": "any"}));
    assert_eq!(
        with(json!({"tool_choice": {"type": "function", "function": {"name": "now"}}, "parallel_tool_calls": false}))
            ["tool_choice"],
        json!({"type": "tool", "name": "now", "disable_parallel_tool_use": true})
    );
    assert_eq!(
        with(json!({"parallel_tool_calls": false}))["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
}

#[test]
fn tool_choice_without_tools_is_dropped() {
    let out = translate(json!({"messages": [{"role": "user", "content": "x"}], "tools": [], "tool_choice": "none"}));
    assert!(out.get("tools").is_none());
    assert!(out.get("tool_choice").is_none());
}

#[test]
fn response_format_becomes_a_system_instruction() {
    let out = translate(json!({
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "x"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}
    }));
    let system = out["system"].as_array().unwrap();
    assert_eq!(system[0]["text"], "Be brief.");
    assert!(system[1]["text"].as_str().unwrap().contains("{\"type\":\"object\"}"));
    let text = translate(json!({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "text"}}));
    assert!(text.get("system").is_none());
}

#[test]
fn inexpressible_requests_are_unsupported() {
    let user = json!({"role": "user", "content": "x"});
    assert!(unsupported_detail(json!({"messages": [user], "n": 2})).contains("`n`"));
    assert!(unsupported_detail(json!({"messages": "nope"})).contains("messages"));
    assert!(unsupported_detail(json!({"messages": [{"role": "system", "content": "only"}]})).contains("no user"));
    assert!(
        unsupported_detail(json!({"messages": [{"role": "function", "name": "f", "content": "1"}]})).contains("role")
    );
    let audio = json!({"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]});
    assert!(unsupported_detail(audio).contains("input_audio"));
    let custom = json!({"messages": [user], "tools": [{"type": "custom", "custom": {"name": "x"}}]});
    assert!(unsupported_detail(custom).contains("custom"));
    assert!(unsupported_detail(json!([1, 2])).contains("JSON object"));
}

#[test]
fn odd_shapes_never_panic() {
    let odd = [
        json!(null),
        json!({"messages": [null, 1, "x", {"role": null}]}),
        json!({"messages": [{"role": "assistant", "tool_calls": [null, {"function": 3}]}]}),
        json!({"messages": [{"role": "user", "content": [null, {"type": "image_url"}]}]}),
        json!({"messages": [{"role": "tool", "content": {"x": 1}}]}),
        json!({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}], "tool_choice": 5}),
        json!({"messages": [{"role": "user", "content": "x"}], "stop": 5, "temperature": "hot"}),
    ];
    for req in odd {
        let _ = to_anthropic(&req, "m", 1);
    }
}
