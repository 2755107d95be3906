//! One conformance suite, run through the gateway against every native
//! adapter (Anthropic, GigaChat, Yandex) and cloud kind (Azure, Gemini,
//! Bedrock): plain and
//! streamed text, tool calls both ways, usage, each error class, a wrong
//! key and upstreams that break their own format. Every body and chunk the client gets must
//! validate against the official OpenAI schemas.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

mod common;
#[path = "native/wires.rs"]
mod wires;

use common::*;
use serde_json::{json, Value};
use wires::{Native, Wire};

/// A gateway with the native provider `x` first and an OpenAI-compatible
/// `backup` second, so a failed attempt shows up as the backup's answer.
struct Rig {
    native: Native,
    backup: FakeUpstream,
    gw: TestGateway,
}

impl Rig {
    async fn start<W: Wire>() -> Self {
        let native = W::start().await;
        let backup = FakeUpstream::start().await;
        backup.set_default(Reply::text("from backup"));
        let gw = start(&Self::yaml::<W>(&native, &backup)).await;
        Self { native, backup, gw }
    }

    fn yaml<W: Wire>(native: &Native, backup: &FakeUpstream) -> String {
        format!(
            "providers:\n{}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [x/{}, backup/model-b]\n",
            W::provider(native),
            openai_provider("backup", backup),
            W::MODEL
        )
    }

    /// A fresh gateway over the same upstreams (no dead marks, no cache).
    async fn restart<W: Wire>(&mut self) {
        self.gw = start(&Self::yaml::<W>(&self.native, &self.backup)).await;
    }

    /// How many attempts on `x` ended with `label`.
    /// Attempts on the model under test with this failure reason (`ok`: answered).
    async fn attempts<W: Wire>(&self, label: &str) -> u64 {
        let text = self.gw.get("/metrics").await.text().await.unwrap();
        let needle = if label == "ok" {
            format!("spillway_attempts_total{{cascade=\"chat\",provider=\"x\",model=\"{}\",result=\"ok\"}} ", W::MODEL)
        } else {
            format!(
                "spillway_attempt_failures_total{{cascade=\"chat\",provider=\"x\",model=\"{}\",reason=\"{label}\"}} ",
                W::MODEL
            )
        };
        text.lines().find_map(|l| l.strip_prefix(&needle)).map_or(0, |n| n.trim().parse().unwrap())
    }
}

/// The OpenAI Python SDK's shape of a tool-offering request.
fn tools_request(stream: bool) -> Value {
    json!({
        "model": "chat",
        "stream": stream,
        "messages": [{"role": "user", "content": "What's the weather in Oslo?"}],
        "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": "Current weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
        "tool_choice": "auto",
    })
}

/// The follow-up turn: the SDK appends the assistant message it got (with
/// `content: null` and `refusal: null`) and a `tool` message. The call id is
/// foreign on purpose: another provider made it.
fn tool_result_request() -> Value {
    let mut req = tools_request(false);
    req["messages"] = json!([
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "What's the weather in Oslo?"},
        {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
            {"id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "call_abc", "content": "{\"temp_c\": 4}"},
    ]);
    req
}

fn stream_chunks(events: &[String]) -> Vec<Value> {
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"), "{events:?}");
    let chunks: Vec<Value> = events[..events.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    for c in &chunks {
        assert_valid("CreateChatCompletionStreamResponse", c);
        assert!(c.get("error").is_none(), "{c}");
    }
    chunks
}

fn finish_reason(chunks: &[Value]) -> Option<String> {
    chunks.iter().find_map(|c| c["choices"][0]["finish_reason"].as_str().map(str::to_string))
}

/// The suite; each function is one test per wire format.
mod suite {
    use super::*;

    pub async fn plain_text<W: Wire>() {
        let rig = Rig::start::<W>().await;
        rig.native.up.push(W::text("Hello from x"));
        let resp = rig.gw.post(&chat("chat", false)).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, "x-spillway-model"), format!("x/{}", W::MODEL));
        let body: Value = resp.json().await.unwrap();
        assert_valid("CreateChatCompletionResponse", &body);
        assert_eq!(body["choices"][0]["message"]["content"], "Hello from x");
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        assert_eq!(rig.native.up.calls(), 1);
    }

    pub async fn usage_present<W: Wire>() {
        let rig = Rig::start::<W>().await;
        rig.native.up.push(W::text("counted"));
        let body: Value = rig.gw.post(&chat("chat", false)).await.json().await.unwrap();
        let (prompt, completion) = W::USAGE;
        assert_eq!(body["usage"]["prompt_tokens"], prompt, "{body}");
        assert_eq!(body["usage"]["completion_tokens"], completion);
        assert_eq!(body["usage"]["total_tokens"], prompt + completion);
    }

    pub async fn streamed_text<W: Wire>() {
        let rig = Rig::start::<W>().await;
        rig.native.up.push(W::stream(&["Hel", "lo", "!"]));
        let mut body = chat("chat", true);
        body["stream_options"] = json!({"include_usage": true});
        let resp = rig.gw.post(&body).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, "content-type"), "text/event-stream");
        let events = sse_events(resp).await;
        let chunks = stream_chunks(&events);
        assert_eq!(common::streamed_text(&events), "Hello!");
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(finish_reason(&chunks).as_deref(), Some("stop"));
        assert!(chunks.iter().all(|c| c["id"] == chunks[0]["id"]));
        let usage = &chunks.last().unwrap()["usage"];
        let (p, c) = (usage["prompt_tokens"].as_u64().unwrap(), usage["completion_tokens"].as_u64().unwrap());
        assert!(p > 0 && c > 0, "{usage}");
        assert_eq!(usage["total_tokens"], p + c);
        // Without include_usage no usage chunk reaches the client.
        rig.native.up.push(W::stream(&["x"]));
        let events = sse_events(rig.gw.post(&chat("chat", true)).await).await;
        assert!(events.iter().all(|e| !e.contains("\"usage\":{")), "{events:?}");
    }

    pub async fn tool_call<W: Wire>() {
        let rig = Rig::start::<W>().await;
        rig.native.up.push(W::tool_call());
        let resp = rig.gw.post(&tools_request(false)).await;
        assert_eq!(resp.status(), 200);
        let body: Value = resp.json().await.unwrap();
        assert_valid("CreateChatCompletionResponse", &body);
        assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
        let call = &body["choices"][0]["message"]["tool_calls"][0];
        assert_eq!(call["type"], "function");
        assert!(!call["id"].as_str().unwrap().is_empty());
        assert_eq!(call["function"]["name"], "get_weather");
        let args: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args, json!({"city": "Oslo"}));
        W::assert_tools_sent(&rig.native.up.requests()[0]);
    }

    pub async fn tool_call_streamed<W: Wire>() {
        let rig = Rig::start::<W>().await;
        rig.native.up.push(W::tool_call_stream());
        let events = sse_events(rig.gw.post(&tools_request(true)).await).await;
        let chunks = stream_chunks(&events);
        let calls: Vec<&Value> =
            chunks.iter().filter_map(|c| c["choices"][0]["delta"]["tool_calls"].as_array()).flatten().collect();
        assert!(calls[0]["id"].as_str().is_some_and(|id| !id.is_empty()), "{chunks:?}");
        assert_eq!(calls[0]["function"]["name"], "get_weather");
        let args: String = calls.iter().filter_map(|c| c["function"]["arguments"].as_str()).collect();
        assert_eq!(serde_json::from_str::<Value>(&args).unwrap(), json!({"city": "Oslo"}));
        assert_eq!(finish_reason(&chunks).as_deref(), Some("tool_calls"));
    }

    pub async fn tool_result_turn<W: Wire>() {
        let rig = Rig::start::<W>().await;
        rig.native.up.push(W::text("It is 4 °C in Oslo."));
        let resp = rig.gw.post(&tool_result_request()).await;
        assert_eq!(resp.status(), 200);
        let body: Value = resp.json().await.unwrap();
        assert_valid("CreateChatCompletionResponse", &body);
        assert_eq!(body["choices"][0]["message"]["content"], "It is 4 °C in Oslo.");
        W::assert_tool_result_sent(&rig.native.up.requests()[0]);
    }

    pub async fn error_classes<W: Wire>() {
        let mut rig = Rig::start::<W>().await;
        for (reply, label) in W::errors() {
            rig.restart::<W>().await;
            rig.native.up.push(reply);
            // Upstream errors are tried streamed too: in-stream error events.
            let stream = label == "upstream_error";
            if stream {
                rig.backup.push(Reply::stream(&["from backup"]));
            }
            let resp = rig.gw.post(&chat("chat", stream)).await;
            assert_eq!(resp.status(), 200, "{label}");
            assert_eq!(header(&resp, "x-spillway-model"), "backup/model-b", "{label}");
            assert_eq!(rig.attempts::<W>(label).await, 1, "{label}");
        }
    }

    pub async fn client_error_is_returned<W: Wire>() {
        let rig = Rig::start::<W>().await;
        rig.native.up.push(W::client_error());
        let resp = rig.gw.post(&chat("chat", false)).await;
        assert!(resp.status().is_client_error(), "{}", resp.status());
        let body: Value = resp.json().await.unwrap();
        assert!(body["error"]["message"].is_string(), "{body}");
        assert_eq!(rig.backup.calls(), 0);
        assert_eq!(rig.attempts::<W>("client_error").await, 1);
    }

    pub async fn auth_failure<W: Wire>() {
        let rig = Rig::start::<W>().await;
        W::script_auth_failure(&rig.native);
        let resp = rig.gw.post(&chat("chat", false)).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, "x-spillway-model"), "backup/model-b");
        assert_eq!(rig.attempts::<W>("unauthorized").await, 1);
    }

    pub async fn broken_upstreams<W: Wire>() {
        let mut rig = Rig::start::<W>().await;
        for (i, (reply, stream)) in W::broken().into_iter().enumerate() {
            rig.restart::<W>().await;
            rig.native.up.push(reply);
            if stream {
                rig.backup.push(Reply::stream(&["from backup"]));
            }
            let resp = rig.gw.post(&chat("chat", stream)).await;
            assert_eq!(resp.status(), 200, "case {i}");
            assert_eq!(header(&resp, "x-spillway-model"), "backup/model-b", "case {i}");
            assert_eq!(rig.attempts::<W>("broken_body").await, 1, "case {i}");
        }
    }
}

/// Instantiates every suite function for every wire format.
macro_rules! conformance {
    ($($module:ident => $wire:ty),* $(,)?) => {$(
        mod $module {
            use super::*;
            #[tokio::test] async fn plain_text() { suite::plain_text::<$wire>().await }
            #[tokio::test] async fn usage_present() { suite::usage_present::<$wire>().await }
            #[tokio::test] async fn streamed_text() { suite::streamed_text::<$wire>().await }
            #[tokio::test] async fn tool_call() { suite::tool_call::<$wire>().await }
            #[tokio::test] async fn tool_call_streamed() { suite::tool_call_streamed::<$wire>().await }
            #[tokio::test] async fn tool_result_turn() { suite::tool_result_turn::<$wire>().await }
            #[tokio::test] async fn error_classes() { suite::error_classes::<$wire>().await }
            #[tokio::test] async fn client_error_is_returned() { suite::client_error_is_returned::<$wire>().await }
            #[tokio::test] async fn auth_failure() { suite::auth_failure::<$wire>().await }
            #[tokio::test] async fn broken_upstreams() { suite::broken_upstreams::<$wire>().await }
        }
    )*};
}

conformance! {
    anthropic => wires::Anthropic,
    gigachat => wires::GigaChat,
    yandex => wires::Yandex,
    azure => wires::Azure,
    gemini => wires::Gemini,
    bedrock => wires::Bedrock,
}
