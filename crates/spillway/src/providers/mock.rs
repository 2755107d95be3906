//! `kind: mock` — in-process providers for demos, tests and drills (SPEC §11).
//!
//! Each model follows its configured behaviour: latency, time to first
//! token, tokens per second, injected errors, a per-minute rate limit with
//! `Retry-After`, empty replies, damaged JSON, hangs and outage windows. It
//! produces the same [`Reply`] and [`AttemptError`] values a real upstream's
//! adapter would, so the runner cannot tell the difference. All timing uses
//! tokio's clock, so tests can pause time.

use super::{AttemptRequest, Reply, StreamItem};
use crate::config::{MockBehavior, MockJson, ProviderConfig};
use crate::outcome::{AttemptError, Failure};
use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// A mock provider.
#[derive(Debug)]
pub struct MockProvider {
    models: HashMap<String, MockBehavior>,
    started: Instant,
    /// Request times per model in the last minute, for `rate_limit_per_min`.
    /// A std mutex: held for a few instructions, never across an await.
    window: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl MockProvider {
    /// Builds it from the provider's static models.
    pub fn new(config: &ProviderConfig) -> Self {
        let models = config.models.iter().map(|m| (m.id.clone(), m.behavior.clone().unwrap_or_default())).collect();
        Self { models, started: Instant::now(), window: Mutex::new(HashMap::new()) }
    }

    /// Answers one attempt.
    pub async fn call(&self, req: AttemptRequest<'_>) -> Result<Reply, AttemptError> {
        let Some(b) = self.models.get(req.model_id) else {
            return Err(AttemptError::new(Failure::NotFound, format!("mock has no model `{}`", req.model_id)));
        };
        let elapsed = self.started.elapsed();
        for o in &b.outages {
            if elapsed >= o.start && elapsed < o.start + o.duration {
                if o.status == 0 {
                    std::future::pending::<()>().await;
                }
                return Err(AttemptError::new(classify(o.status), format!("HTTP {} (mock outage)", o.status)));
            }
        }
        if b.hang {
            std::future::pending::<()>().await;
        }
        if let Some(limit) = b.rate_limit_per_min {
            if let Some(wait) = self.take_rate_slot(req.model_id, limit) {
                return Err(AttemptError::new(
                    Failure::RateLimited { retry_after: Some(wait) },
                    format!("HTTP 429 (mock limit of {limit}/min)"),
                ));
            }
        }
        if b.error_rate > 0.0 && fastrand::f64() < b.error_rate {
            tokio::time::sleep(b.latency).await;
            return Err(AttemptError::new(
                classify(b.error_status),
                format!("HTTP {} (mock injected)", b.error_status),
            ));
        }
        let empty = b.empty_rate > 0.0 && fastrand::f64() < b.empty_rate;
        let prompt_tokens = estimate_tokens(&req.body);
        if let Some(call) = (!empty).then(|| tool_call(&req.body)).flatten() {
            return Ok(answer_with_tool(call, b, prompt_tokens, req.stream, req.include_usage).await);
        }
        let text = if empty { String::new() } else { reply_text(req.model_id, b, &req.body) };
        if !req.stream {
            tokio::time::sleep(b.latency + b.first_token).await;
            let completion_tokens = text.split_whitespace().count() as u64;
            return Ok(Reply::Complete(json!({
                "id": "mock",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
            })
            .into()));
        }
        Ok(Reply::Stream(stream(text, b.clone(), prompt_tokens, req.include_usage)))
    }

    /// Counts a request against the model's per-minute limit; `Some(wait)`
    /// when the limit is reached.
    fn take_rate_slot(&self, model: &str, limit: u32) -> Option<Duration> {
        let now = Instant::now();
        let minute = Duration::from_secs(60);
        let Ok(mut window) = self.window.lock() else {
            return None;
        };
        let times = window.entry(model.to_string()).or_default();
        while times.front().is_some_and(|t| now.duration_since(*t) >= minute) {
            times.pop_front();
        }
        if times.len() >= limit as usize {
            let oldest = times.front().copied().unwrap_or(now);
            return Some(minute.saturating_sub(now.duration_since(oldest)).max(Duration::from_secs(1)));
        }
        times.push_back(now);
        None
    }
}

/// The tool a mock model calls: when the request offers tools, does not
/// say `tool_choice: "none"`, and the conversation does not already end
/// with a tool's result (then it answers in text, as a model would). The
/// named tool of `tool_choice`, else the first; arguments that satisfy its
/// parameter schema.
fn tool_call(body: &Map<String, Value>) -> Option<(String, String)> {
    let tools = body.get("tools")?.as_array()?;
    let choice = body.get("tool_choice");
    if choice.and_then(Value::as_str) == Some("none") {
        return None;
    }
    let last_role = body.get("messages")?.as_array()?.last()?.get("role").and_then(Value::as_str);
    if last_role == Some("tool") {
        return None;
    }
    let named = choice.and_then(|c| c.get("function")).and_then(|f| f.get("name")).and_then(Value::as_str);
    let function = tools
        .iter()
        .filter_map(|t| t.get("function"))
        .find(|f| named.is_none_or(|n| f.get("name").and_then(Value::as_str) == Some(n)))?;
    let name = function.get("name")?.as_str()?.to_string();
    let arguments = function.get("parameters").map_or_else(|| json!({}), sample);
    Some((name, arguments.to_string()))
}

/// A tool call, whole or streamed (the arguments in a few pieces).
async fn answer_with_tool(
    (name, arguments): (String, String),
    b: &MockBehavior,
    prompt_tokens: u64,
    stream: bool,
    include_usage: bool,
) -> Reply {
    let completion_tokens = (arguments.chars().count() as u64).div_ceil(4).max(1);
    let usage = json!({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens});
    let id = format!("call_mock_{}", fastrand::u32(..));
    if !stream {
        tokio::time::sleep(b.latency + b.first_token).await;
        let call = json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}});
        return Reply::Complete(
            json!({
                "id": "mock",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [call]}, "finish_reason": "tool_calls"}],
                "usage": usage,
            })
            .into(),
        );
    }
    let (latency, gap) = (b.latency + b.first_token, token_gap(b));
    let chars: Vec<char> = arguments.chars().collect();
    let pieces: Vec<String> = chars.chunks(16).map(|c| c.iter().collect()).collect();
    let head = futures_util::stream::once(async move {
        tokio::time::sleep(latency).await;
        let call = json!({"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}});
        Ok(chunk(json!({"role": "assistant", "content": null, "tool_calls": [call]}), None))
    });
    let body = futures_util::stream::iter(pieces).then(move |p| async move {
        if !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
        Ok(chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}), None))
    });
    let mut tail = vec![Ok(chunk(json!({}), Some("tool_calls")))];
    if include_usage {
        tail.push(Ok(StreamItem::Chunk(json!({"object": "chat.completion.chunk", "choices": [], "usage": usage}))));
    }
    tail.push(Ok(StreamItem::Done));
    Reply::Stream(head.chain(body).chain(futures_util::stream::iter(tail)).boxed())
}

/// The pause between streamed tokens (`tokens_per_s`; none when unset).
fn token_gap(b: &MockBehavior) -> Duration {
    if b.tokens_per_s > 0.0 {
        Duration::from_secs_f64(1.0 / b.tokens_per_s)
    } else {
        Duration::ZERO
    }
}

fn classify(status: u16) -> Failure {
    super::classify_openai_error(status, None, b"")
}

/// A rough prompt size: four characters a token.
fn estimate_tokens(body: &Map<String, Value>) -> u64 {
    let chars: usize = body
        .get("messages")
        .and_then(Value::as_array)
        .map(|m| m.iter().map(|m| m.get("content").map(|c| c.to_string().len()).unwrap_or(0)).sum())
        .unwrap_or(0);
    (chars as u64).div_ceil(4).max(1)
}

fn last_user_text(body: &Map<String, Value>) -> String {
    body.get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.iter().rev().find(|m| m.get("role").and_then(Value::as_str) == Some("user")))
        .and_then(|m| m.get("content"))
        .map(|c| match c {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

fn reply_text(model: &str, b: &MockBehavior, body: &Map<String, Value>) -> String {
    let format = body.get("response_format");
    let kind = format.and_then(|f| f.get("type")).and_then(Value::as_str);
    if matches!(kind, Some("json_object" | "json_schema")) {
        let schema = format.and_then(|f| f.get("json_schema")).and_then(|j| j.get("schema"));
        let mut value = match schema {
            Some(s) => sample(s),
            None => json!({"answer": "mock", "model": model}),
        };
        if b.json == MockJson::Renamed {
            rename_keys(&mut value);
        }
        let text = value.to_string();
        return match b.json {
            MockJson::Fenced => format!(
                "Sure! Here is the JSON you asked for:\n```json\n{text}\n```\nLet me know if you need anything else."
            ),
            _ => text,
        };
    }
    if let Some(r) = &b.reply {
        return r.clone();
    }
    let asked: String = last_user_text(body).chars().take(60).collect();
    format!("This is {model}, a mock model, answering: {asked}")
}

/// A value that satisfies a simple JSON Schema.
fn sample(schema: &Value) -> Value {
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") | None if schema.get("properties").is_some() => {
            let mut out = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, s) in props {
                    out.insert(k.clone(), sample(s));
                }
            }
            Value::Object(out)
        }
        Some("array") => Value::Array(schema.get("items").map(sample).into_iter().collect()),
        Some("string") => Value::String("mock".into()),
        Some("integer") => json!(1),
        Some("number") => json!(1.5),
        Some("boolean") => json!(true),
        Some("null") => Value::Null,
        _ => json!({}),
    }
}

/// `first_name` → `FirstName`: the kind of damage a weaker model does.
fn rename_keys(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (k, mut val) in old {
                rename_keys(&mut val);
                let renamed: String = k
                    .split('_')
                    .map(|w| {
                        let mut c = w.chars();
                        c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
                    })
                    .collect();
                map.insert(renamed, val);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rename_keys),
        _ => {}
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> StreamItem {
    StreamItem::Chunk(
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
    )
}

fn stream(text: String, b: MockBehavior, prompt_tokens: u64, include_usage: bool) -> super::ChunkStream {
    // Words keep their trailing space so the deltas concatenate to the text.
    let pieces: Vec<String> = text.split_inclusive(' ').map(str::to_string).collect();
    let completion_tokens = pieces.len() as u64;
    let gap = token_gap(&b);
    let head = futures_util::stream::once(async move {
        tokio::time::sleep(b.latency + b.first_token).await;
        Ok(chunk(json!({"role": "assistant", "content": ""}), None))
    });
    let body = futures_util::stream::iter(pieces.into_iter().enumerate()).then(move |(i, p)| async move {
        if i > 0 && !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
        Ok(chunk(json!({"content": p}), None))
    });
    let mut tail = vec![Ok(chunk(json!({}), Some("stop")))];
    if include_usage {
        tail.push(Ok(StreamItem::Chunk(json!({
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
        }))));
    }
    tail.push(Ok(StreamItem::Done));
    head.chain(body).chain(futures_util::stream::iter(tail)).boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Outage, ProviderKind, StaticModel};
    use crate::providers::UpstreamHints;

    fn provider(b: MockBehavior) -> MockProvider {
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
            models: vec![StaticModel { id: "x".into(), context: None, price: None, quality: None, behavior: Some(b) }],
            default_max_tokens: None,
            skip_when_lazy: false,
            native_json: true,
            load: None,
            allow_any_model: false,
        };
        MockProvider::new(&config)
    }

    async fn call(p: &MockProvider, body: Value, stream: bool) -> Result<Reply, AttemptError> {
        let hints = UpstreamHints::default();
        let mut body = body.as_object().cloned().unwrap_or_default();
        body.insert("model".into(), json!("x"));
        let client = crate::api::ChatRequest::from_map(body).unwrap();
        let body = crate::api::request::Outgoing::new(&client);
        p.call(AttemptRequest { model_id: "x", body, stream, include_usage: true, hints: &hints }).await
    }

    fn hello() -> Value {
        json!({"messages": [{"role": "user", "content": "hello"}]})
    }

    fn text(r: Reply) -> String {
        match r {
            Reply::Complete(c) => {
                c.into_value().unwrap()["choices"][0]["message"]["content"].as_str().unwrap().to_string()
            }
            Reply::Stream(_) => panic!("expected a whole answer"),
        }
    }

    #[test]
    fn samples_satisfy_simple_schemas() {
        let s = json!({"type":"object","properties":{"first_name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}}});
        let mut v = sample(&s);
        assert_eq!(v, json!({"first_name":"mock","age":1,"tags":["mock"]}));
        rename_keys(&mut v);
        assert_eq!(v, json!({"FirstName":"mock","Age":1,"Tags":["mock"]}));
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
            call(&provider(MockBehavior { json: MockJson::Fenced, ..Default::default() }), body.clone(), false)
                .await
                .unwrap(),
        );
        assert!(fenced.contains("```json\n{\"first_name\":\"mock\"}\n```"), "{fenced}");
        let renamed = text(
            call(&provider(MockBehavior { json: MockJson::Renamed, ..Default::default() }), body, false).await.unwrap(),
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
}
