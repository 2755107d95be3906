//! The mock's behaviours, one test each, on a paused clock.

use super::*;
use crate::config::{LoadConfig, LoadProfile, LoadSource, MockJson, Outage, ProviderKind, StaticModel};
use crate::providers::{StreamItem, UpstreamHints};
use futures_util::StreamExt;
use serde_json::{json, Value};

pub(super) fn provider(b: MockBehavior) -> MockProvider {
    provider_with_load(b, None)
}

fn provider_with_load(b: MockBehavior, load: Option<LoadConfig>) -> MockProvider {
    let config = ProviderConfig {
        name: "m".into(),
        kind: ProviderKind::Mock,
        base_url: None,
        api_key: None,
        headers: Vec::new(),
        max_in_flight: None,
        discovery_format: None,
        auth_key: None,
        scope: None,
        auth_url: None,
        ca_file: None,
        folder_id: None,
        iam_token: None,
        api_version: None,
        models: vec![StaticModel {
            id: "x".into(),
            context: None,
            price: None,
            quality: None,
            behavior: Some(b),
            continuation: None,
            dimensions: None,
        }],
        default_max_tokens: None,
        skip_when_lazy: false,
        native_json: true,
        load,
        continuation: None,
        allow_any_model: false,
        whole_as_stream: true,
        price: None,
        breaker: None,
        listing: None,
        aws: None,
        first_token: None,
    };
    MockProvider::new(&config)
}

pub(super) async fn call(p: &MockProvider, body: Value, stream: bool) -> Result<Reply, AttemptError> {
    let hints = UpstreamHints::default();
    let mut body = body.as_object().cloned().unwrap_or_default();
    body.insert("model".into(), json!("x"));
    let client = crate::api::ChatRequest::from_map(body).unwrap();
    let body = crate::api::request::Outgoing::new(&client);
    p.call(AttemptRequest {
        model_id: "x",
        body,
        stream,
        include_usage: true,
        accept_whole: false,
        hints: &hints,
        request_id: None,
        traceparent: None,
        tracestate: None,
    })
    .await
}

pub(super) fn hello() -> Value {
    json!({"messages": [{"role": "user", "content": "hello"}]})
}

fn text(r: Reply) -> String {
    match r {
        Reply::Complete(c) => c.into_value().unwrap()["choices"][0]["message"]["content"].as_str().unwrap().to_string(),
        Reply::Stream(_) => panic!("expected a whole answer"),
    }
}

#[test]
fn renamed_keys_are_capitalised() {
    let mut v = json!({"first_name":"mock","age":1,"tags":[{"unit_price": 1}]});
    answer::rename_keys(&mut v);
    assert_eq!(v, json!({"FirstName":"mock","Age":1,"Tags":[{"UnitPrice": 1}]}));
}

#[tokio::test(start_paused = true)]
async fn latency_is_waited() {
    let p = provider(MockBehavior { latency: Duration::from_millis(300), ..Default::default() });
    let t = Instant::now();
    let answer = text(call(&p, hello(), false).await.unwrap());
    assert!(answer.contains("hello"), "{answer}");
    assert_eq!(t.elapsed(), Duration::from_millis(300));
}

#[tokio::test(start_paused = true)]
async fn rate_limit_per_minute_answers_429_with_retry_after() {
    let p = provider(MockBehavior { rate_limit_per_min: Some(2), ..Default::default() });
    assert!(call(&p, hello(), false).await.is_ok());
    tokio::time::advance(Duration::from_secs(20)).await;
    assert!(call(&p, hello(), false).await.is_ok());
    let err = call(&p, hello(), false).await.unwrap_err();
    assert_eq!(err.failure, Failure::RateLimited { retry_after: Some(Duration::from_secs(40)) });
    tokio::time::advance(Duration::from_secs(41)).await;
    assert!(call(&p, hello(), false).await.is_ok(), "the window slid past the first request");
}

#[tokio::test(start_paused = true)]
async fn injected_errors_empty_replies_and_outages() {
    let p = provider(MockBehavior { error_rate: 1.0, error_status: 503, ..Default::default() });
    assert_eq!(call(&p, hello(), false).await.unwrap_err().failure, Failure::Upstream { status: Some(503) });
    let p = provider(MockBehavior { error_rate: 1.0, error_status: 404, ..Default::default() });
    assert_eq!(call(&p, hello(), false).await.unwrap_err().failure, Failure::NotFound);
    let p = provider(MockBehavior { empty_rate: 1.0, ..Default::default() });
    assert_eq!(text(call(&p, hello(), false).await.unwrap()), "");
    let outage = Outage { start: Duration::from_secs(10), duration: Duration::from_secs(5), status: 502 };
    let p = provider(MockBehavior { outages: vec![outage], ..Default::default() });
    assert!(call(&p, hello(), false).await.is_ok());
    tokio::time::advance(Duration::from_secs(11)).await;
    assert_eq!(call(&p, hello(), false).await.unwrap_err().failure, Failure::Upstream { status: Some(502) });
    tokio::time::advance(Duration::from_secs(5)).await;
    assert!(call(&p, hello(), false).await.is_ok(), "the outage is over");
}

#[tokio::test(start_paused = true)]
async fn hang_never_answers() {
    let p = provider(MockBehavior { hang: true, ..Default::default() });
    let r = tokio::time::timeout(Duration::from_secs(3600), call(&p, hello(), false)).await;
    assert!(r.is_err());
}

#[tokio::test(start_paused = true)]
async fn json_is_damaged_as_configured() {
    let body = json!({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "object", "properties": {"first_name": {"type": "string"}}}}}});
    let plain = text(call(&provider(MockBehavior::default()), body.clone(), false).await.unwrap());
    assert_eq!(plain, r#"{"first_name":"mock"}"#);
    let fenced = text(
        call(
            &provider(MockBehavior { json: MockJson { fenced: 1.0, ..MockJson::default() }, ..Default::default() }),
            body.clone(),
            false,
        )
        .await
        .unwrap(),
    );
    assert!(fenced.contains("```json\n{\"first_name\":\"mock\"}\n```"), "{fenced}");
    let renamed = text(
        call(
            &provider(MockBehavior { json: MockJson { renamed: 1.0, ..MockJson::default() }, ..Default::default() }),
            body,
            false,
        )
        .await
        .unwrap(),
    );
    assert_eq!(renamed, r#"{"FirstName":"mock"}"#);
}

#[tokio::test(start_paused = true)]
async fn streams_at_the_configured_speed() {
    let b = MockBehavior {
        first_token: Duration::from_millis(100),
        tokens_per_s: 10.0,
        reply: Some("one two three".into()),
        ..Default::default()
    };
    let p = provider(b);
    let Reply::Stream(mut s) = call(&p, hello(), true).await.unwrap() else { panic!("expected a stream") };
    let t = Instant::now();
    let mut arrivals = Vec::new();
    let mut text = String::new();
    while let Some(item) = s.next().await {
        if let StreamItem::Chunk(v) = item.unwrap() {
            if let Some(c) = v["choices"][0]["delta"]["content"].as_str().filter(|c| !c.is_empty()) {
                text.push_str(c);
                arrivals.push(t.elapsed().as_millis());
            }
        }
    }
    assert_eq!(text, "one two three");
    assert_eq!(arrivals, [100, 200, 300], "first token after 100ms, then 10 tokens/s");
}

fn weather_tools(choice: Option<Value>, last: Value) -> Value {
    let mut body = json!({
        "messages": [{"role": "user", "content": "Weather in Oslo?"}, last],
        "tools": [
            {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
            {"type": "function", "function": {"name": "get_weather", "parameters": {
                "type": "object", "required": ["city", "unit"],
                "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}}}}},
        ],
    });
    if let Some(c) = choice {
        body["tool_choice"] = c;
    }
    body
}

fn message(r: Reply) -> Value {
    match r {
        Reply::Complete(c) => c.into_value().unwrap()["choices"][0].clone(),
        Reply::Stream(_) => panic!("expected a whole answer"),
    }
}

#[tokio::test]
async fn offered_tools_are_called_with_arguments_that_fit_their_schema() {
    let p = provider(MockBehavior::default());
    let user = json!({"role": "user", "content": "please"});
    let named = json!({"type": "function", "function": {"name": "get_weather"}});
    let choice = message(call(&p, weather_tools(Some(named.clone()), user.clone()), false).await.unwrap());
    assert_eq!(choice["finish_reason"], "tool_calls");
    let call_ = &choice["message"]["tool_calls"][0];
    assert_eq!(call_["function"]["name"], "get_weather");
    let args: Value = serde_json::from_str(call_["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "mock", "unit": "celsius"}));
    // Without a named choice: the first tool.
    let first = message(call(&p, weather_tools(None, user.clone()), false).await.unwrap());
    assert_eq!(first["message"]["tool_calls"][0]["function"]["name"], "get_time");
    // `none`, or a tool's result already in: text.
    let none = message(call(&p, weather_tools(Some(json!("none")), user), false).await.unwrap());
    assert!(none["message"]["content"].as_str().is_some_and(|t| !t.is_empty()));
    let result = json!({"role": "tool", "tool_call_id": "call_1", "content": "12 C"});
    let answered = message(call(&p, weather_tools(None, result), false).await.unwrap());
    assert!(answered["message"].get("tool_calls").is_none(), "{answered}");

    // Streamed: the same call, the arguments in pieces.
    let Reply::Stream(mut s) =
        call(&p, weather_tools(Some(named), json!({"role": "user", "content": "again"})), true).await.unwrap()
    else {
        panic!("expected a stream")
    };
    let (mut name, mut arguments, mut finish) = (String::new(), String::new(), None);
    while let Some(item) = s.next().await {
        if let StreamItem::Chunk(v) = item.unwrap() {
            let c = &v["choices"][0];
            if let Some(f) = c["delta"]["tool_calls"][0].get("function") {
                name.push_str(f["name"].as_str().unwrap_or_default());
                arguments.push_str(f["arguments"].as_str().unwrap_or_default());
            }
            finish = finish.or_else(|| c["finish_reason"].as_str().map(str::to_string));
        }
    }
    assert_eq!((name.as_str(), finish.as_deref()), ("get_weather", Some("tool_calls")));
    assert_eq!(serde_json::from_str::<Value>(&arguments).unwrap(), json!({"city": "mock", "unit": "celsius"}));
}

fn choice0(r: Reply) -> Value {
    message(r)
}

fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

#[tokio::test(start_paused = true)]
async fn answers_have_their_natural_length_and_max_tokens_cuts_them() {
    let p = provider(MockBehavior { reply_tokens: Some(40), ..Default::default() });
    let whole = choice0(call(&p, hello(), false).await.unwrap());
    assert_eq!(words(whole["message"]["content"].as_str().unwrap()), 40);
    assert_eq!(whole["finish_reason"], "stop");
    let mut body = hello();
    body["max_tokens"] = json!(12);
    let cut = choice0(call(&p, body.clone(), false).await.unwrap());
    assert_eq!(words(cut["message"]["content"].as_str().unwrap()), 12);
    assert_eq!(cut["finish_reason"], "length");
    // Streamed the same way, usage included.
    let Reply::Stream(mut s) = call(&p, body, true).await.unwrap() else { panic!("expected a stream") };
    let (mut text, mut finish, mut usage) = (String::new(), None, None);
    while let Some(item) = s.next().await {
        if let StreamItem::Chunk(v) = item.unwrap() {
            text.push_str(v["choices"][0]["delta"]["content"].as_str().unwrap_or_default());
            finish = finish.or_else(|| v["choices"][0]["finish_reason"].as_str().map(str::to_owned));
            usage = usage.or_else(|| v.get("usage").cloned());
        }
    }
    assert_eq!((words(&text), finish.as_deref()), (12, Some("length")));
    assert_eq!(usage.unwrap()["completion_tokens"], 12);
}

fn profiles() -> LoadConfig {
    let profile = |name: &str, prompt: Option<&str>, factor: Option<f64>| LoadProfile {
        name: name.into(),
        below: None,
        system_prompt: prompt.map(str::to_owned),
        max_tokens_factor: factor,
    };
    LoadConfig {
        source: LoadSource::Emulated,
        interval: Duration::from_secs(1),
        profiles: vec![
            profile("normal", None, None),
            profile("tired", Some("Answer briefly."), Some(0.5)),
            profile("lazy", Some("One sentence at most."), Some(0.25)),
        ],
        hysteresis: 0.0,
    }
}

#[tokio::test(start_paused = true)]
async fn a_load_profile_prompt_shortens_the_answer_by_its_factor() {
    let b = MockBehavior { reply_tokens: Some(40), ..Default::default() };
    let p = provider_with_load(b, Some(profiles()));
    let with_system =
        |system: &str| json!({"messages": [{"role": "system", "content": system}, {"role": "user", "content": "hi"}]});
    let plain = choice0(call(&p, with_system("You are helpful."), false).await.unwrap());
    assert_eq!(words(plain["message"]["content"].as_str().unwrap()), 40);
    let tired = choice0(call(&p, with_system("You are helpful.\n\nAnswer briefly."), false).await.unwrap());
    assert_eq!(words(tired["message"]["content"].as_str().unwrap()), 20);
    assert_eq!(tired["finish_reason"], "stop", "a brief answer is complete, not cut");
    // The prompt as its own system message, as the profile adds it.
    let lazy = json!({"messages": [{"role": "system", "content": "One sentence at most."}, {"role": "user", "content": "hi"}]});
    assert_eq!(words(choice0(call(&p, lazy, false).await.unwrap())["message"]["content"].as_str().unwrap()), 10);
}

#[tokio::test(start_paused = true)]
async fn time_follows_the_tokens_of_the_answer() {
    let b = MockBehavior {
        latency: Duration::from_millis(50),
        first_token: Duration::from_millis(100),
        tokens_per_s: 100.0,
        reply_tokens: Some(51),
        ..Default::default()
    };
    let p = provider(b);
    let t = Instant::now();
    call(&p, hello(), false).await.unwrap();
    assert_eq!(t.elapsed(), Duration::from_millis(650), "150ms to the first token, then 50 more at 10ms");
    let mut body = hello();
    body["max_tokens"] = json!(11);
    let t = Instant::now();
    call(&p, body, false).await.unwrap();
    assert_eq!(t.elapsed(), Duration::from_millis(250), "a shorter answer takes less time");
}

#[tokio::test(start_paused = true)]
async fn n_answers_several_choices() {
    let p = provider(MockBehavior::default());
    let mut body = hello();
    body["n"] = json!(3);
    let Reply::Complete(c) = call(&p, body, false).await.unwrap() else { panic!("expected a whole answer") };
    let v = c.into_value().unwrap();
    let choices = v["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 3);
    assert_eq!(choices.iter().map(|c| c["index"].as_u64().unwrap()).collect::<Vec<_>>(), [0, 1, 2]);
}

pub(super) async fn drain(mut s: crate::providers::ChunkStream) {
    while s.next().await.is_some() {}
}

#[tokio::test(start_paused = true)]
async fn a_saturated_mock_slows_down_with_its_requests_in_flight() {
    let b = MockBehavior { tokens_per_s: 10.0, reply_tokens: Some(11), saturate_at: Some(2), ..Default::default() };
    let p = provider(b);
    let stream = |r: Reply| match r {
        Reply::Stream(s) => s,
        Reply::Complete(_) => panic!("expected a stream"),
    };
    // Two in flight: full speed (10 gaps of 100ms).
    let a = stream(call(&p, hello(), true).await.unwrap());
    let t = Instant::now();
    let b2 = stream(call(&p, hello(), true).await.unwrap());
    drain(b2).await;
    assert_eq!(t.elapsed(), Duration::from_secs(1));
    // A third and fourth while `a` and another are still open: twice as slow.
    let c = stream(call(&p, hello(), true).await.unwrap());
    let t = Instant::now();
    let d = stream(call(&p, hello(), true).await.unwrap());
    drain(d).await;
    assert_eq!(t.elapsed(), Duration::from_millis(1500), "3 in flight over 2: 1.5 times as long per token");
    drop((a, c));
    assert_eq!(p.in_flight.load(Ordering::Acquire), 0, "dropped streams are no longer counted");
}

fn json_body(schema: Value) -> Value {
    json!({"messages": [{"role": "user", "content": "x"}],
           "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}})
}

fn content(r: Reply) -> String {
    text(r)
}

#[tokio::test(start_paused = true)]
async fn json_answers_fit_pydantic_schemas_with_optionals_and_refs() {
    let schema = json!({"$defs": {"Address": {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}},
        "type": "object", "required": ["name", "address"],
        "properties": {"name": {"type": "string"},
                       "address": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": null},
                       "age": {"type": ["integer", "null"]}}});
    let p = provider(MockBehavior::default());
    let v: Value = serde_json::from_str(&content(call(&p, json_body(schema), false).await.unwrap())).unwrap();
    assert_eq!(v, json!({"name": "mock", "address": {"city": "mock"}, "age": 1}));
}

#[tokio::test(start_paused = true)]
async fn json_object_requests_follow_a_schema_in_the_prompt() {
    let p = provider(MockBehavior::default());
    // LangChain's format instructions: the schema without `type` and `title`.
    let prompt = "Answer in JSON. Here is the output schema:\n```\n{\"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\", \"minimum\": 2}}, \"required\": [\"city\", \"days\"]}\n```";
    let body = json!({"messages": [{"role": "user", "content": prompt}], "response_format": {"type": "json_object"}});
    let v: Value = serde_json::from_str(&content(call(&p, body, false).await.unwrap())).unwrap();
    assert_eq!(v, json!({"city": "mock", "days": 2}));
    // Without a schema: a small object.
    let body =
        json!({"messages": [{"role": "user", "content": "JSON please"}], "response_format": {"type": "json_object"}});
    let v: Value = serde_json::from_str(&content(call(&p, body, false).await.unwrap())).unwrap();
    assert_eq!(v, json!({"answer": "mock", "model": "x"}));
    // The gateway's own instruction (a provider with `native_json: false`).
    let rf = json!({"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}});
    let instruction = crate::normalize::schema_instruction(&rf).unwrap();
    let body = json!({"messages": [{"role": "system", "content": instruction}, {"role": "user", "content": "x"}]});
    let v: Value = serde_json::from_str(&content(call(&p, body, false).await.unwrap())).unwrap();
    assert_eq!(v, json!({"ok": true}));
    // The same instruction in Russian (it follows a Russian system prompt).
    let instruction = crate::normalize::schema_instruction_in(&rf, crate::normalize::Lang::Ru).unwrap();
    let body = json!({"messages": [{"role": "system", "content": format!("Ты вежливый помощник.\n\n{instruction}")}, {"role": "user", "content": "x"}]});
    let v: Value = serde_json::from_str(&content(call(&p, body, false).await.unwrap())).unwrap();
    assert_eq!(v, json!({"ok": true}), "the Russian instruction is recognised too");
}

#[tokio::test(start_paused = true)]
async fn a_schema_given_only_in_the_prompt_gets_json_when_the_prompt_asks_for_it() {
    let p = provider(MockBehavior::default());
    // instructor's MD_JSON: the schema in the system message, no response_format.
    let system = "As a genius expert, your task is to understand the content and provide the parsed objects in json \
that match the following json_schema:\n\n{\"properties\": {\"name\": {\"title\": \"Name\", \"type\": \"string\"}, \
\"age\": {\"title\": \"Age\", \"type\": \"integer\"}}, \"required\": [\"name\", \"age\"], \"title\": \"User\", \
\"type\": \"object\"}\n\nMake sure to return an instance of the JSON, not the schema itself";
    let body = json!({"messages": [{"role": "system", "content": system}, {"role": "user", "content": "Jason is 25"},
        {"role": "user", "content": "Return the correct JSON response within a ```json codeblock. not the JSON_SCHEMA"}]});
    let v: Value = serde_json::from_str(&content(call(&p, body, false).await.unwrap())).unwrap();
    assert_eq!(v, json!({"name": "mock", "age": 1}));
    // A schema in a prompt that does not ask for JSON: text, as before.
    let body = json!({"messages": [{"role": "user", "content": "Explain {\"properties\": {\"a\": {}}} to me"}]});
    assert!(serde_json::from_str::<Value>(&content(call(&p, body, false).await.unwrap())).is_err());
}

#[tokio::test(start_paused = true)]
async fn json_damage_shares_give_a_valid_rate_before_and_after_normalization() {
    use crate::normalize::{normalize, Expected, SchemaCache};
    fastrand::seed(7);
    let shares = MockJson { fenced: 0.3, renamed: 0.2, broken: 0.06 };
    let p = provider(MockBehavior { json: shares, ..Default::default() });
    let schema = json!({"type": "object", "required": ["first_name", "age"], "additionalProperties": false,
        "properties": {"first_name": {"type": "string"}, "age": {"type": "integer"}}});
    let expected = Expected::Schema { compiled: SchemaCache::default().get_or_compile(&schema).unwrap(), strict: true };
    let (mut raw_valid, mut after, mut broken) = (0, 0, 0);
    let runs = 2000;
    for _ in 0..runs {
        let answer = content(call(&p, json_body(schema.clone()), false).await.unwrap());
        match normalize(&answer, &expected) {
            Ok(n) if n.result == crate::normalize::NormalizeResult::Valid => {
                raw_valid += 1;
                after += 1;
            }
            Ok(_) => after += 1,
            Err(crate::normalize::NormalizeError::NoJson) => broken += 1,
            Err(e) => panic!("only broken answers fail, and as no JSON: {e}"),
        }
    }
    let share = |n: i32| f64::from(n) / f64::from(runs);
    assert!((share(raw_valid) - 0.44).abs() < 0.04, "valid as sent: {}", share(raw_valid));
    assert!((share(after) - 0.94).abs() < 0.02, "valid after normalization: {}", share(after));
    assert_eq!(after + broken, runs);
}

#[tokio::test(start_paused = true)]
async fn a_json_answer_over_max_tokens_is_cut() {
    let p = provider(MockBehavior::default());
    let mut body = json_body(
        json!({"type": "object", "properties": {"first_name": {"type": "string"}, "last_name": {"type": "string"}}}),
    );
    body["max_tokens"] = json!(3);
    let c = choice0(call(&p, body, false).await.unwrap());
    assert_eq!(c["finish_reason"], "length");
    assert_eq!(c["message"]["content"], r#"{"first_name"#);
}

fn mock_config(behavior: &str) -> Result<crate::config::Config, String> {
    let yaml = format!("providers:\n  m:\n    kind: mock\n    models:\n      - id: x\n        behavior: {behavior}\ncascades:\n  c:\n    models: [m/x]\n");
    crate::config::load_str(&yaml, None, &|_| None).map_err(|e| e.to_string())
}

fn behavior_of(config: &crate::config::Config) -> MockBehavior {
    config.providers["m"].models[0].behavior.clone().unwrap()
}

#[test]
fn json_damage_config_takes_a_mode_or_shares() {
    let old = behavior_of(&mock_config("{ json: fenced }").unwrap());
    assert_eq!(old.json, MockJson { fenced: 1.0, ..MockJson::default() }, "configs of before still load");
    let shares = behavior_of(
        &mock_config("{ json: { fenced: 0.3, renamed: 0.2, broken: 0.06 }, reply_tokens: 200, saturate_at: 8 }")
            .unwrap(),
    );
    assert_eq!(shares.json, MockJson { fenced: 0.3, renamed: 0.2, broken: 0.06 });
    assert_eq!((shares.reply_tokens, shares.saturate_at), (Some(200), Some(8)));
    let at = "providers.m.models[0].behavior";
    let err = mock_config("{ json: { fenced: 0.3, brokn: 0.1 } }").unwrap_err();
    assert!(err.contains(&format!("{at}.json")) && err.contains("unknown field `brokn`"), "{err}");
    let err = mock_config("{ json: { fenced: 0.7, broken: 0.6 } }").unwrap_err();
    assert!(err.contains(&format!("{at}.json: the shares add up to")), "{err}");
    let err = mock_config("{ json: { fenced: 1.5 } }").unwrap_err();
    assert!(err.contains(&format!("{at}.json.fenced: expected a share between 0 and 1")), "{err}");
    let err = mock_config("{ json: sloppy }").unwrap_err();
    assert!(err.contains(&format!("{at}.json: unknown mode `sloppy`")), "{err}");
    let err = mock_config("{ json: 3 }").unwrap_err();
    assert!(err.contains(&format!("{at}.json")), "{err}");
    let err = mock_config("{ reply_tokens: 0, saturate_at: 0 }").unwrap_err();
    assert!(err.contains(&format!("{at}.reply_tokens: must be greater than 0")), "{err}");
    assert!(err.contains(&format!("{at}.saturate_at: must be greater than 0")), "{err}");
}

#[tokio::test]
async fn content_parts_are_read_as_their_text() {
    // What the Responses and Messages APIs and most SDKs send: text parts,
    // not a string; the answer quotes their text, not their JSON.
    let p = provider(MockBehavior::default());
    let parts = json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "Weather"}, {"type": "image_url", "image_url": {"url": "data:,"}},
        {"type": "text", "text": "in Paris?"}]}]});
    let said = text(call(&p, parts, false).await.unwrap());
    assert!(said.ends_with("answering: Weather in Paris?"), "{said}");
}
