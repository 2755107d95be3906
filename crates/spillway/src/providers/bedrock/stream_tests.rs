use super::*;
use crate::providers::eventstream::HeaderValue;
use serde_json::json;

fn event(kind: &str, payload: Value) -> Message {
    Message {
        headers: vec![
            (":message-type".into(), HeaderValue::String("event".into())),
            (":event-type".into(), HeaderValue::String(kind.into())),
            (":content-type".into(), HeaderValue::String("application/json".into())),
        ],
        payload: payload.to_string().into_bytes(),
    }
}

fn exception(kind: &str, message: &str) -> Message {
    Message {
        headers: vec![
            (":message-type".into(), HeaderValue::String("exception".into())),
            (":exception-type".into(), HeaderValue::String(kind.into())),
        ],
        payload: json!({"message": message}).to_string().into_bytes(),
    }
}

fn run(d: &mut StreamDecoder, messages: &[Message]) -> Vec<StreamItem> {
    messages.iter().flat_map(|m| d.on_message(m).unwrap()).collect()
}

#[test]
fn text_then_stop_then_metadata() {
    let mut d = StreamDecoder::new(true);
    let items = run(
        &mut d,
        &[
            event("messageStart", json!({"role": "assistant", "p": "abcd"})),
            event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Hel"}, "p": "ab"})),
            event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "lo"}})),
            event("contentBlockStop", json!({"contentBlockIndex": 0})),
            event("messageStop", json!({"stopReason": "end_turn"})),
            event(
                "metadata",
                json!({"usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}, "metrics": {"latencyMs": 90}}),
            ),
        ],
    );
    let values: Vec<Option<Value>> = items.into_iter().map(StreamItem::into_value).collect();
    assert_eq!(values[0].as_ref().unwrap()["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(values[1].as_ref().unwrap()["choices"][0]["delta"]["content"], "Hel");
    assert_eq!(values[3].as_ref().unwrap()["choices"][0]["finish_reason"], "stop");
    assert_eq!(values[4].as_ref().unwrap()["usage"]["total_tokens"], 12);
    assert_eq!(values[5], None, "Done");
    assert_eq!(values.len(), 6);
}

#[test]
fn metadata_before_the_stop_is_read_too() {
    let mut d = StreamDecoder::new(false);
    let items = run(
        &mut d,
        &[
            event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "x"}})),
            event("metadata", json!({"usage": {"inputTokens": 1, "outputTokens": 1}})),
            event("messageStop", json!({"stopReason": "max_tokens"})),
        ],
    );
    assert_eq!(items.last(), Some(&StreamItem::Done));
    assert_eq!(items[1].clone().into_value().unwrap()["choices"][0]["finish_reason"], "length");
}

#[test]
fn tool_use_blocks_stream_their_input() {
    let mut d = StreamDecoder::new(false);
    let items = run(
        &mut d,
        &[
            event("messageStart", json!({"role": "assistant"})),
            event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Checking."}})),
            event(
                "contentBlockStart",
                json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather"}}}),
            ),
            event("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"city\":"}}})),
            event("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"Oslo\"}"}}})),
            event("messageStop", json!({"stopReason": "tool_use"})),
        ],
    );
    let values: Vec<Value> = items.into_iter().filter_map(StreamItem::into_value).collect();
    let calls: Vec<&Value> =
        values.iter().filter_map(|c| c["choices"][0]["delta"]["tool_calls"].as_array()).flatten().collect();
    assert_eq!(calls[0]["id"], "tooluse_1");
    let args: String = calls.iter().filter_map(|c| c["function"]["arguments"].as_str()).collect();
    assert_eq!(args, "{\"city\":\"Oslo\"}");
    assert_eq!(values.last().unwrap()["choices"][0]["finish_reason"], "tool_calls");
}

#[test]
fn exceptions_and_broken_events() {
    let mut d = StreamDecoder::new(false);
    let err = d.on_message(&exception("throttlingException", "slow down")).unwrap_err();
    assert!(matches!(err, TranslateError::Upstream { class: ErrorClass::RateLimited, .. }), "{err}");
    let err = d.on_message(&exception("modelStreamErrorException", "the model broke")).unwrap_err();
    assert!(matches!(err, TranslateError::Upstream { class: ErrorClass::Upstream, .. }));
    let mut garbage = event("contentBlockDelta", json!({}));
    garbage.payload = b"not json".to_vec();
    assert!(matches!(d.on_message(&garbage), Err(TranslateError::Unreadable { .. })));
    let orphan = event("contentBlockDelta", json!({"contentBlockIndex": 4, "delta": {"toolUse": {"input": "{}"}}}));
    assert!(matches!(d.on_message(&orphan), Err(TranslateError::Malformed { .. })));
    let filtered = d.on_message(&event("messageStop", json!({"stopReason": "guardrail_intervened"}))).unwrap_err();
    assert!(matches!(filtered, TranslateError::Upstream { class: ErrorClass::ContentFilter, .. }));
}
