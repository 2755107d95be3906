//! The native wire formats and the cloud kinds as the conformance suite sees them: how to
//! start a fake upstream for each, how to point a provider at it, and the
//! scripted replies and request checks that differ per format.

use super::common::{FakeUpstream, Reply};
use serde_json::{json, Value};
use test_upstreams::{anthropic, azure, bedrock, gemini, gigachat, yandex};

/// Fake upstreams behind one native provider.
pub struct Native {
    /// The chat (or messages, or completion) endpoint.
    pub up: FakeUpstream,
    /// GigaChat's OAuth endpoint.
    pub oauth: Option<FakeUpstream>,
}

/// What the suite needs to know about one wire format.
pub trait Wire {
    /// The model id at the provider.
    const MODEL: &'static str;
    /// Usage of [`Wire::text`] after normalization: prompt, completion.
    const USAGE: (u64, u64);
    async fn start() -> Native;
    /// The provider block (named `x`).
    fn provider(n: &Native) -> String;
    fn text(text: &str) -> Reply;
    fn stream(pieces: &[&str]) -> Reply;
    /// A call of `get_weather` with `{"city":"Oslo"}`.
    fn tool_call() -> Reply;
    fn tool_call_stream() -> Reply;
    /// Errors the runner moves on from, with the attempt label they get.
    fn errors() -> Vec<(Reply, &'static str)>;
    /// An error that is the client's, returned to it.
    fn client_error() -> Reply;
    /// Scripts a wrong key.
    fn script_auth_failure(n: &Native);
    /// Replies that break the format, non-streamed and streamed.
    fn broken() -> Vec<(Reply, bool)>;
    /// The upstream request offered `get_weather` in its own syntax.
    fn assert_tools_sent(req: &Value);
    /// The upstream request carried the result of `get_weather`.
    fn assert_tool_result_sent(req: &Value);
}

/// Whether `pred` holds for `v` or anything nested in it.
fn has(v: &Value, pred: impl Fn(&Value) -> bool) -> bool {
    fn walk(v: &Value, pred: &dyn Fn(&Value) -> bool) -> bool {
        pred(v)
            || match v {
                Value::Array(a) => a.iter().any(|x| walk(x, pred)),
                Value::Object(o) => o.values().any(|x| walk(x, pred)),
                _ => false,
            }
    }
    walk(v, &pred)
}

fn oslo() -> Value {
    json!({"city": "Oslo"})
}

pub struct Anthropic;

impl Wire for Anthropic {
    const MODEL: &'static str = "claude-x";
    const USAGE: (u64, u64) = (120, 40);
    async fn start() -> Native {
        Native { up: FakeUpstream::start_at("/v1/messages").await, oauth: None }
    }
    fn provider(n: &Native) -> String {
        format!(
            "  x:\n    kind: anthropic\n    base_url: {}\n    api_key: test-key-x\n    default_max_tokens: 512\n",
            n.up.origin()
        )
    }
    fn text(text: &str) -> Reply {
        anthropic::text(text)
    }
    fn stream(pieces: &[&str]) -> Reply {
        anthropic::stream(pieces)
    }
    fn tool_call() -> Reply {
        anthropic::tool_call("toolu_01", "get_weather", oslo())
    }
    fn tool_call_stream() -> Reply {
        anthropic::tool_stream("toolu_01", "get_weather", &["{\"city\": \"Os", "lo\"}"])
    }
    fn errors() -> Vec<(Reply, &'static str)> {
        vec![
            (anthropic::error(429, "rate_limit_error", "slow down").header("retry-after", "7"), "rate_limited"),
            (anthropic::error(529, "overloaded_error", "Overloaded"), "upstream_error"),
            (anthropic::error(500, "api_error", "boom"), "upstream_error"),
            (anthropic::error(404, "not_found_error", "model: claude-x"), "not_found"),
            (anthropic::error(403, "permission_error", "no"), "forbidden"),
            (anthropic::error(402, "billing_error", "pay up"), "quota_exhausted"),
            (
                anthropic::error(400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum"),
                "context_length",
            ),
            (anthropic::error_event("overloaded_error", "Overloaded"), "upstream_error"),
        ]
    }
    fn client_error() -> Reply {
        anthropic::error(400, "invalid_request_error", "top_k: must be positive")
    }
    fn script_auth_failure(n: &Native) {
        n.up.push(anthropic::error(401, "authentication_error", "invalid x-api-key"));
    }
    fn broken() -> Vec<(Reply, bool)> {
        let bad_data = Reply::sse_raw(&[
            &anthropic::event(
                "message_start",
                &json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
            ),
            "event: content_block_delta\ndata: not json\n\n",
        ]);
        vec![
            (Reply::garbage(), false),
            (Reply::json(json!({"type": "message", "content": "not blocks"})), false),
            (bad_data, true),
            (anthropic::stream(&["never"]).cut_after(2), true),
        ]
    }
    fn assert_tools_sent(req: &Value) {
        assert_eq!(req["tools"][0]["name"], "get_weather", "{req}");
        assert_eq!(req["tools"][0]["input_schema"]["required"][0], "city");
        assert_eq!(req["max_tokens"], 512, "the default max_tokens is always sent");
    }
    fn assert_tool_result_sent(req: &Value) {
        assert!(has(req, |v| v["type"] == "tool_use" && v["id"] == "call_abc" && v["input"] == oslo()), "{req}");
        assert!(has(req, |v| v["type"] == "tool_result" && v["tool_use_id"] == "call_abc"), "{req}");
        assert!(req["system"].is_string(), "system lifted out: {req}");
    }
}

pub struct GigaChat;

impl Wire for GigaChat {
    const MODEL: &'static str = "GigaChat-Pro";
    const USAGE: (u64, u64) = (138, 21);
    async fn start() -> Native {
        let oauth = FakeUpstream::start_at(gigachat::OAUTH_PATH).await;
        oauth.set_default(gigachat::token("tok-default", gigachat::expiry_in(1800)));
        Native { up: FakeUpstream::start_at(gigachat::CHAT_PATH).await, oauth: Some(oauth) }
    }
    fn provider(n: &Native) -> String {
        let oauth = n.oauth.as_ref().map(FakeUpstream::origin).unwrap_or_default();
        format!(
            "  x:\n    kind: gigachat\n    base_url: {}/api/v1\n    auth_url: {oauth}{}\n    auth_key: dGVzdDp0ZXN0\n    scope: GIGACHAT_API_PERS\n",
            n.up.origin(),
            gigachat::OAUTH_PATH
        )
    }
    fn text(text: &str) -> Reply {
        gigachat::text(text)
    }
    fn stream(pieces: &[&str]) -> Reply {
        gigachat::stream(pieces)
    }
    fn tool_call() -> Reply {
        gigachat::function_call("get_weather", oslo())
    }
    fn tool_call_stream() -> Reply {
        gigachat::function_call_stream("get_weather", oslo())
    }
    fn errors() -> Vec<(Reply, &'static str)> {
        vec![
            (gigachat::error(429, "Too many requests").header("retry-after", "3"), "rate_limited"),
            (gigachat::error(500, "Internal error"), "upstream_error"),
            (gigachat::error(503, "Unavailable"), "upstream_error"),
            (gigachat::error(404, "No such model"), "not_found"),
            (gigachat::error(402, "Payment required"), "quota_exhausted"),
            (gigachat::error(413, "Request too large"), "context_length"),
            (gigachat::blacklist(), "content_filter"),
        ]
    }
    fn client_error() -> Reply {
        gigachat::error(422, "Invalid params: top_p")
    }
    fn script_auth_failure(n: &Native) {
        if let Some(o) = &n.oauth {
            o.push(gigachat::token_error());
        }
    }
    fn broken() -> Vec<(Reply, bool)> {
        vec![
            (Reply::garbage(), false),
            (Reply::json(json!({"choices": "nope"})), false),
            (Reply::sse_raw(&["data: not json\n\n"]), true),
            (gigachat::stream(&["never"]).cut_after(0), true),
        ]
    }
    fn assert_tools_sent(req: &Value) {
        assert_eq!(req["functions"][0]["name"], "get_weather", "{req}");
        assert!(req.get("tools").is_none());
    }
    fn assert_tool_result_sent(req: &Value) {
        assert!(
            has(req, |v| v["function_call"]["name"] == "get_weather" && v["function_call"]["arguments"] == oslo()),
            "{req}"
        );
        assert!(has(req, |v| v["role"] == "function" && v["name"] == "get_weather"), "{req}");
        assert_eq!(req["messages"][0]["role"], "system");
    }
}

pub struct Yandex;

impl Wire for Yandex {
    const MODEL: &'static str = "yandexgpt/latest";
    const USAGE: (u64, u64) = (26, 11);
    async fn start() -> Native {
        Native { up: FakeUpstream::start_at(yandex::COMPLETION_PATH).await, oauth: None }
    }
    fn provider(n: &Native) -> String {
        format!(
            "  x:\n    kind: yandex\n    base_url: {}\n    api_key: test-key-x\n    folder_id: b1gfolder\n",
            n.up.origin()
        )
    }
    fn text(text: &str) -> Reply {
        yandex::text(text)
    }
    fn stream(pieces: &[&str]) -> Reply {
        yandex::stream(pieces)
    }
    fn tool_call() -> Reply {
        yandex::tool_call("get_weather", oslo())
    }
    fn tool_call_stream() -> Reply {
        yandex::tool_call_stream("get_weather", oslo())
    }
    fn errors() -> Vec<(Reply, &'static str)> {
        vec![
            (
                yandex::error(429, 8, "ai.textGenerationCompletionSessionsCount.count gauge quota limit exceed"),
                "rate_limited",
            ),
            (yandex::error(500, 13, "internal"), "upstream_error"),
            (yandex::error(503, 14, "unavailable"), "upstream_error"),
            (yandex::error(404, 5, "model not found"), "not_found"),
        ]
    }
    fn client_error() -> Reply {
        yandex::error(400, 3, "temperature out of range")
    }
    fn script_auth_failure(n: &Native) {
        n.up.push(yandex::error(401, 16, "Unknown api key"));
    }
    fn broken() -> Vec<(Reply, bool)> {
        vec![
            (Reply::garbage(), false),
            (Reply::json(json!({"result": {"usage": {}}})), false),
            (Reply::raw(200, "application/json", "not json\n"), true),
            (yandex::stream(&["never", " mind"]).cut_after(0), true),
        ]
    }
    fn assert_tools_sent(req: &Value) {
        assert_eq!(req["tools"][0]["function"]["name"], "get_weather", "{req}");
        assert_eq!(req["modelUri"], "gpt://b1gfolder/yandexgpt/latest");
        assert!(
            req["completionOptions"]["maxTokens"].is_string() || req["completionOptions"].get("maxTokens").is_none()
        );
    }
    fn assert_tool_result_sent(req: &Value) {
        assert!(has(req, |v| v["functionCall"]["name"] == "get_weather"), "{req}");
        assert!(has(req, |v| v["functionResult"]["name"] == "get_weather"), "{req}");
        assert_eq!(req["messages"][0]["text"], "Answer briefly.");
    }
}

pub struct Azure;

impl Wire for Azure {
    const MODEL: &'static str = "gpt-4o-eu";
    const USAGE: (u64, u64) = (5, 2);
    async fn start() -> Native {
        Native { up: FakeUpstream::start().await, oauth: None }
    }
    fn provider(n: &Native) -> String {
        format!(
            "  x:\n    kind: azure\n    base_url: {}\n    api_key: test-key-x\n    api_version: 2024-10-21\n    models: [ {{ id: gpt-4o-eu }} ]\n",
            n.up.origin()
        )
    }
    fn text(text: &str) -> Reply {
        azure::text(text)
    }
    fn stream(pieces: &[&str]) -> Reply {
        azure::stream(pieces)
    }
    fn tool_call() -> Reply {
        azure::tool_call("call_az1", "get_weather", oslo())
    }
    fn tool_call_stream() -> Reply {
        azure::tool_call_stream("call_az1", "get_weather", &["{\"city\": \"Os", "lo\"}"])
    }
    fn errors() -> Vec<(Reply, &'static str)> {
        vec![
            (azure::rate_limited(6), "rate_limited"),
            (azure::error(429, "429", "Please retry after 86400 seconds."), "quota_exhausted"),
            (azure::error(500, "InternalServerError", "boom"), "upstream_error"),
            (azure::error(503, "ServiceUnavailable", "busy"), "upstream_error"),
            (
                azure::error(404, "DeploymentNotFound", "The API deployment for this resource does not exist."),
                "not_found",
            ),
            (azure::content_filtered(), "content_filter"),
            (
                azure::error(400, "context_length_exceeded", "This model's maximum context length is 128000 tokens."),
                "context_length",
            ),
        ]
    }
    fn client_error() -> Reply {
        Reply::error(400, "invalid_value", "Invalid value for 'temperature'")
    }
    fn script_auth_failure(n: &Native) {
        n.up.push(azure::error(401, "401", "Access denied due to invalid subscription key or wrong API endpoint."));
    }
    fn broken() -> Vec<(Reply, bool)> {
        vec![
            (Reply::garbage(), false),
            (Reply::sse_raw(&["data: not json\n\n"]), true),
            (azure::stream(&["never"]).cut_after(2), true),
        ]
    }
    fn assert_tools_sent(req: &Value) {
        assert_eq!(req["tools"][0]["function"]["name"], "get_weather", "{req}");
        assert_eq!(req["model"], "gpt-4o-eu", "the deployment in the body too");
    }
    fn assert_tool_result_sent(req: &Value) {
        assert!(has(req, |v| v["role"] == "tool" && v["tool_call_id"] == "call_abc"), "{req}");
        assert_eq!(req["messages"][0]["role"], "system");
    }
}

pub struct Gemini;

impl Wire for Gemini {
    const MODEL: &'static str = "gemini-2.5-flash";
    const USAGE: (u64, u64) = (21, 19);
    async fn start() -> Native {
        Native { up: FakeUpstream::start_at_any(&gemini::PATHS).await, oauth: None }
    }
    fn provider(n: &Native) -> String {
        format!("  x:\n    kind: gemini\n    base_url: {}{}\n    api_key: test-key-x\n", n.up.origin(), gemini::ROOT)
    }
    fn text(text: &str) -> Reply {
        gemini::text(text)
    }
    fn stream(pieces: &[&str]) -> Reply {
        gemini::stream(pieces)
    }
    fn tool_call() -> Reply {
        gemini::function_call("get_weather", oslo())
    }
    fn tool_call_stream() -> Reply {
        gemini::function_call_stream("get_weather", oslo())
    }
    fn errors() -> Vec<(Reply, &'static str)> {
        vec![
            (gemini::rate_limited("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "3.5s"), "rate_limited"),
            (gemini::rate_limited("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "60s"), "quota_exhausted"),
            (gemini::error(500, "INTERNAL", "An internal error has occurred.", json!([])), "upstream_error"),
            (gemini::error(503, "UNAVAILABLE", "The model is overloaded.", json!([])), "upstream_error"),
            (gemini::error(404, "NOT_FOUND", "models/gemini-2.5-flash is not found", json!([])), "not_found"),
            (gemini::error(403, "PERMISSION_DENIED", "Permission denied", json!([])), "forbidden"),
            (
                gemini::error(
                    400,
                    "INVALID_ARGUMENT",
                    "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                    json!([]),
                ),
                "context_length",
            ),
            (gemini::blocked_prompt(), "content_filter"),
            (
                Reply::sse_raw(&[
                    "data: {\"error\":{\"code\":503,\"message\":\"overloaded\",\"status\":\"UNAVAILABLE\"}}\n\n",
                ]),
                "upstream_error",
            ),
        ]
    }
    fn client_error() -> Reply {
        gemini::error(400, "INVALID_ARGUMENT", "Invalid value at 'generation_config.temperature'", json!([]))
    }
    fn script_auth_failure(n: &Native) {
        n.up.push(gemini::invalid_key());
    }
    fn broken() -> Vec<(Reply, bool)> {
        vec![
            (Reply::garbage(), false),
            (Reply::json(json!({"candidates": [{"content": {"parts": "nope"}, "finishReason": "STOP"}]})), false),
            (Reply::sse_raw(&["data: not json\n\n"]), true),
            (gemini::stream(&["never", " ends"]).cut_after(0), true),
        ]
    }
    fn assert_tools_sent(req: &Value) {
        let declaration = &req["tools"][0]["functionDeclarations"][0];
        assert_eq!(declaration["name"], "get_weather", "{req}");
        assert_eq!(declaration["parametersJsonSchema"]["required"][0], "city");
        assert_eq!(req["toolConfig"]["functionCallingConfig"]["mode"], "AUTO");
    }
    fn assert_tool_result_sent(req: &Value) {
        assert!(
            has(req, |v| v["functionCall"]["name"] == "get_weather" && v["functionCall"]["args"] == oslo()),
            "{req}"
        );
        assert!(
            has(req, |v| v["functionResponse"]["name"] == "get_weather"
                && v["functionResponse"]["response"] == json!({"temp_c": 4})),
            "{req}"
        );
        assert_eq!(req["systemInstruction"]["parts"][0]["text"], "Answer briefly.");
    }
}

pub struct Bedrock;

impl Wire for Bedrock {
    const MODEL: &'static str = "anthropic.claude-3-5-sonnet-20240620-v1:0";
    const USAGE: (u64, u64) = (31, 9);
    async fn start() -> Native {
        Native { up: FakeUpstream::start_at_any(&bedrock::PATHS).await, oauth: None }
    }
    fn provider(n: &Native) -> String {
        format!(
            "  x:\n    kind: bedrock\n    base_url: {}\n    region: us-east-1\n    aws_access_key_id: AKIDEXAMPLE\n    aws_secret_access_key: test-secret-x\n    models: [ {{ id: '{}' }} ]\n",
            n.up.origin(),
            Self::MODEL
        )
    }
    fn text(text: &str) -> Reply {
        bedrock::text(text)
    }
    fn stream(pieces: &[&str]) -> Reply {
        bedrock::stream(pieces)
    }
    fn tool_call() -> Reply {
        bedrock::tool_use("tooluse_01", "get_weather", oslo())
    }
    fn tool_call_stream() -> Reply {
        bedrock::tool_use_stream("tooluse_01", "get_weather", &["{\"city\": \"Os", "lo\"}"])
    }
    fn errors() -> Vec<(Reply, &'static str)> {
        vec![
            (
                bedrock::error(429, "ThrottlingException", "Too many requests, please wait before trying again."),
                "rate_limited",
            ),
            (
                bedrock::error(400, "ServiceQuotaExceededException", "Your account has reached its quota"),
                "quota_exhausted",
            ),
            (bedrock::error(500, "InternalServerException", "boom"), "upstream_error"),
            (bedrock::error(503, "ServiceUnavailableException", "later"), "upstream_error"),
            (bedrock::error(404, "ResourceNotFoundException", "Could not resolve the foundation model"), "not_found"),
            (bedrock::error(403, "AccessDeniedException", "You don't have access to the model"), "forbidden"),
            (bedrock::error(400, "ValidationException", "Input is too long for requested model."), "context_length"),
            (Reply::json(bedrock::converse(json!([]), "guardrail_intervened")), "content_filter"),
            (
                bedrock::frames(vec![
                    bedrock::event("messageStart", json!({"role": "assistant"})),
                    bedrock::exception("modelStreamErrorException", "The model stopped"),
                ]),
                "upstream_error",
            ),
        ]
    }
    fn client_error() -> Reply {
        bedrock::error(400, "ValidationException", "temperature: must be less than or equal to 1")
    }
    fn script_auth_failure(n: &Native) {
        n.up.push(bedrock::error(
            403,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        ));
    }
    fn broken() -> Vec<(Reply, bool)> {
        let mut damaged = bedrock::event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "x"}}));
        let last = damaged.len() - 1;
        damaged[last] ^= 0xff;
        vec![
            (Reply::garbage(), false),
            (Reply::json(json!({"output": {}})), false),
            (bedrock::frames(vec![bedrock::event("messageStart", json!({"role": "assistant"})), damaged]), true),
            (
                bedrock::frames(vec![bedrock::frame(
                    &[(":message-type", "event"), (":event-type", "contentBlockDelta")],
                    b"not json",
                )]),
                true,
            ),
            (bedrock::stream(&["never"]).cut_after(1), true),
        ]
    }
    fn assert_tools_sent(req: &Value) {
        assert_eq!(req["toolConfig"]["tools"][0]["toolSpec"]["name"], "get_weather", "{req}");
        assert_eq!(req["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["required"][0], "city");
        assert_eq!(req["toolConfig"]["toolChoice"], json!({"auto": {}}));
    }
    fn assert_tool_result_sent(req: &Value) {
        assert!(has(req, |v| v["toolUse"]["toolUseId"] == "call_abc" && v["toolUse"]["input"] == oslo()), "{req}");
        assert!(
            has(req, |v| v["toolResult"]["toolUseId"] == "call_abc"
                && v["toolResult"]["content"][0]["json"] == json!({"temp_c": 4})),
            "{req}"
        );
        assert_eq!(req["system"][0]["text"], "Answer briefly.");
    }
}
