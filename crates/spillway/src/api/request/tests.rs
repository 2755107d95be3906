//! Unit tests of request validation and of the bodies attempts send.

use super::*;

fn param(body: &str) -> String {
    match ChatRequest::parse(Bytes::copy_from_slice(body.as_bytes())) {
        Err(ApiError::InvalidField { param, .. }) => param,
        Err(ApiError::InvalidJson(_)) => "<json>".into(),
        other => format!("{other:?}"),
    }
}

#[test]
fn names_the_bad_field() {
    assert_eq!(param("{"), "<json>");
    assert_eq!(param("[]"), "<json>");
    assert_eq!(param(r#"{"messages":[{"role":"user","content":"hi"}]}"#), "model");
    assert_eq!(param(r#"{"model":"a"}"#), "messages");
    assert_eq!(param(r#"{"model":"p/x\"} 1\nforged 1","messages":[{"role":"user","content":"x"}]}"#), "model");
    assert_eq!(param(r#"{"model":"p/\u0000","messages":[{"role":"user","content":"x"}]}"#), "model");
    assert_eq!(param(r#"{"model":"p/\u007f","messages":[{"role":"user","content":"x"}]}"#), "model");
    assert_eq!(param(r#"{"model":"a","messages":"hi"}"#), "messages");
    assert_eq!(param(r#"{"model":"a","messages":[]}"#), "messages");
    assert_eq!(param(r#"{"model":"a","messages":[{"role":"bot","content":"x"}]}"#), "messages[0].role");
    assert_eq!(param(r#"{"model":"a","messages":[{"role":"user","content":5}]}"#), "messages[0].content");
    assert_eq!(param(r#"{"model":"a","messages":[{"role":"tool","content":"x"}]}"#), "messages[0].tool_call_id");
    assert_eq!(param(r#"{"model":"a","messages":[{"role":"user","content":"x"}],"stream":"yes"}"#), "stream");
    assert_eq!(param(r#"{"model":"a","messages":[{"role":"user","content":"x"}],"max_tokens":0}"#), "max_tokens");
    assert_eq!(param(r#"{"model":"a","messages":[{"role":"user","content":"x"}],"temperature":3}"#), "temperature");
    assert_eq!(
        param(
            r#"{"model":"a","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a b"}}]}"#
        ),
        "tools[0].function.name"
    );
    assert_eq!(
        param(r#"{"model":"a","messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}}"#),
        "response_format.type"
    );
}

#[test]
fn accepts_a_full_request() {
    let r = ChatRequest::parse(Bytes::from_static(
            br#"{"model":"chat","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"1"}],"response_format":{"type":"json_object"},"x_extra":1}"#,
        ))
        .unwrap();
    assert!(r.stream && r.include_usage && r.wants_json());
    assert_eq!(r.model, "chat");
    assert_eq!(r.body()["x_extra"], 1);
}

#[test]
fn an_unchanged_body_is_sent_as_the_client_wrote_it_with_model_replaced() {
    let body = br#"{ "messages": [{"role":"user","content":"caf\u00e9"}],
            "model" : "chat", "x_vendor": {"keep": [1, 2.50]} }"#;
    let r = ChatRequest::parse(Bytes::from_static(body)).unwrap();
    assert!(r.body.get().is_none(), "no map was built");
    let sent = r.encode_with_model("gpt-\"4\"", false).unwrap();
    let expected = String::from_utf8_lossy(body).replace(r#""chat""#, r#""gpt-\"4\"""#);
    assert_eq!(String::from_utf8(sent).unwrap(), expected);
    assert!(r.body.get().is_none(), "still no map");
}

#[test]
fn a_model_that_cannot_be_replaced_in_place_is_reencoded() {
    for body in [
        &br#"{"model":"ch\u0061t","messages":[{"role":"user","content":"x"}]}"#[..],
        br#"{"model":"old","messages":[{"role":"user","content":"x"}],"model":"chat"}"#,
    ] {
        let r = ChatRequest::parse(Bytes::copy_from_slice(body)).unwrap();
        assert_eq!(r.model, "chat");
        let sent: Value = serde_json::from_slice(&r.encode_with_model("m", false).unwrap()).unwrap();
        assert_eq!(sent["model"], "m");
        assert_eq!(sent["messages"][0]["content"], "x");
    }
}

#[test]
fn a_whole_request_read_as_a_stream_asks_for_a_stream_with_usage_without_a_copy() {
    let stream_fields = serde_json::json!({"stream": true, "stream_options": {"include_usage": true}});
    let body = br#" {"model":"chat","messages":[{"role":"user","content":"x"}],"n":1}"#;
    let r = ChatRequest::parse(Bytes::from_static(body)).unwrap();
    assert!(!r.several_choices && !r.logprobs);
    let mut out = Outgoing::new(&r);
    out.as_stream();
    let sent = out.encode_with_model("m").unwrap();
    assert!(r.body.get().is_none(), "no map was built");
    let text = String::from_utf8(sent).unwrap();
    assert_eq!(
        text,
        r#" {"stream":true,"stream_options":{"include_usage":true},"model":"m","messages":[{"role":"user","content":"x"}],"n":1}"#
    );
    // The client's own `stream: false` and `stream_options` are replaced,
    // not duplicated; so is a rewritten body's; the owned body has them.
    for body in [
            &br#"{"model":"c","stream":false,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"x"}]}"#[..],
            br#"{"model":"c","stream":null,"messages":[{"role":"user","content":"x"}]}"#,
        ] {
            let r = ChatRequest::parse(Bytes::copy_from_slice(body)).unwrap();
            let mut out = Outgoing::new(&r);
            out.as_stream();
            let plain: Value = serde_json::from_slice(&out.encode_with_model("m").unwrap()).unwrap();
            out.to_mut().insert("max_tokens".into(), 5.into());
            let rewritten = out.encode_with_model("m").unwrap();
            for sent in [plain, serde_json::from_slice(&rewritten).unwrap()] {
                assert_eq!(sent["stream"], stream_fields["stream"]);
                assert_eq!(sent["stream_options"], stream_fields["stream_options"]);
                assert_eq!(sent["model"], "m");
            }
            let text = String::from_utf8(rewritten).unwrap();
            assert_eq!(text.matches("\"stream\"").count(), 1, "{text}");
            let owned = out.into_owned();
            assert_eq!(owned["stream"], true);
            assert_eq!(owned["stream_options"]["include_usage"], true);
        }
    let r = ChatRequest::parse(Bytes::from_static(
        br#"{"model":"c","messages":[{"role":"user","content":"x"}],"n":2,"logprobs":true}"#,
    ))
    .unwrap();
    assert!(r.several_choices && r.logprobs);
}

#[test]
fn rewriting_copies_the_body_once() {
    let r =
        ChatRequest::parse(Bytes::from_static(br#"{"model":"c","messages":[{"role":"user","content":"x"}]}"#)).unwrap();
    let mut out = Outgoing::new(&r);
    assert_eq!(out["messages"][0]["content"], "x");
    out.to_mut().insert("max_tokens".into(), 5.into());
    let sent: Value = serde_json::from_slice(&out.encode_with_model("m").unwrap()).unwrap();
    assert_eq!((sent["model"].as_str(), sent["max_tokens"].as_u64()), (Some("m"), Some(5)));
    assert!(r.body().get("max_tokens").is_none(), "the client's body is untouched");
}

#[test]
fn prompt_estimate_is_the_same_on_both_trees() {
    let text = r#"{"model":"c","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hello there"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}"#;
    let json: Json<'_> = serde_json::from_str(text).unwrap();
    let value: Value = serde_json::from_str(text).unwrap();
    assert_eq!(estimate_prompt_tokens(&json), estimate_prompt_tokens(&value));
    assert!(estimate_prompt_tokens(&value) > 12);
    let r = ChatRequest::parse(Bytes::copy_from_slice(text.as_bytes())).unwrap();
    assert_eq!(r.prompt_tokens, estimate_prompt_tokens(&value));
    assert!(r.shapes_output && !r.wants_json());
}

#[test]
fn the_prompt_s_facts_are_worked_out_only_for_a_judge() {
    let body =
        Bytes::from_static(br#"{"model":"m","messages":[{"role":"user","content":"Bonjour, comment allez-vous?"}]}"#);
    let judged = ChatRequest::parse_judged(body.clone(), true).unwrap();
    assert_eq!(judged.prompt.script, Some(crate::quality::text::Script::Latin));
    assert_eq!(judged.prompt.chars, 28);
    assert_eq!(ChatRequest::parse(body.clone()).unwrap().prompt, judged.prompt);
    let unjudged = ChatRequest::parse_judged(body, false).unwrap();
    assert_eq!(unjudged.prompt, crate::quality::text::PromptFacts::default());
    assert_eq!(unjudged.model, judged.model, "everything else is read alike");
}
