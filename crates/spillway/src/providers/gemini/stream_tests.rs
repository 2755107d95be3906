use super::*;
use serde_json::json;

fn chunk(parts: Value, finish: Option<&str>, usage: Option<Value>) -> String {
    let mut c = json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}], "modelVersion": "gemini-2.5-flash"});
    if let Some(f) = finish {
        c["candidates"][0]["finishReason"] = json!(f);
    }
    if let Some(u) = usage {
        c["usageMetadata"] = u;
    }
    c.to_string()
}

fn values(items: Vec<StreamItem>) -> Vec<Option<Value>> {
    items.into_iter().map(StreamItem::into_value).collect()
}

#[test]
fn text_then_finish_with_usage_and_done() {
    let mut d = StreamDecoder::new(true);
    let first =
        values(d.on_data(&chunk(json!([{"text": "Hel"}]), None, Some(json!({"promptTokenCount": 3})))).unwrap());
    assert_eq!(first[0].as_ref().unwrap()["choices"][0]["delta"], json!({"role": "assistant", "content": "Hel"}));
    let last = d
        .on_data(&chunk(
            json!([{"text": "lo"}]),
            Some("STOP"),
            Some(json!({"promptTokenCount": 3, "candidatesTokenCount": 2})),
        ))
        .unwrap();
    assert_eq!(last.len(), 4, "{last:?}");
    assert_eq!(last[1].clone().into_value().unwrap()["choices"][0]["finish_reason"], "stop");
    assert_eq!(last[2].clone().into_value().unwrap()["usage"]["total_tokens"], 5);
    assert_eq!(last[3], StreamItem::Done);
    assert!(d.on_data(&chunk(json!([{"text": "after"}]), None, None)).unwrap().is_empty());
}

#[test]
fn function_calls_arrive_whole() {
    let mut d = StreamDecoder::new(false);
    let items = values(
        d.on_data(&chunk(
            json!([{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]),
            Some("STOP"),
            None,
        ))
        .unwrap(),
    );
    let call = &items[0].as_ref().unwrap()["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(call["index"], 0);
    assert_eq!(call["function"]["arguments"], "{\"city\":\"Oslo\"}");
    assert_eq!(items[1].as_ref().unwrap()["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(items.last(), Some(&None), "Done");
}

#[test]
fn safety_stops_and_errors() {
    let mut d = StreamDecoder::new(false);
    let err = d.on_data(&chunk(json!([]), Some("SAFETY"), None)).unwrap_err();
    assert!(matches!(
        err,
        TranslateError::Upstream { class: crate::providers::translate::ErrorClass::ContentFilter, .. }
    ));
    let mut d = StreamDecoder::new(false);
    d.on_data(&chunk(json!([{"text": "Once upon"}]), None, None)).unwrap();
    let items = values(d.on_data(&chunk(json!([]), Some("SAFETY"), None)).unwrap());
    assert_eq!(items[0].as_ref().unwrap()["choices"][0]["finish_reason"], "content_filter");
    let mut d = StreamDecoder::new(false);
    let err = d.on_data(r#"{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}"#).unwrap_err();
    assert!(matches!(err, TranslateError::Upstream { class: crate::providers::translate::ErrorClass::Upstream, .. }));
    assert!(matches!(d.on_data("not json"), Err(TranslateError::Unreadable { .. })));
}
