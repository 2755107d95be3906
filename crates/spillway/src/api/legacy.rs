//! The legacy Completions API (`POST /v1/completions`) as a chat request:
//! many tools still call it, and every cascade is chat.
//!
//! A `prompt` (a string, or a list of one string) becomes one user
//! message; `max_tokens` defaults to 16 as OpenAI's API defines it;
//! `temperature`, `top_p`, `n`, `stop`, the penalties, `seed`, `user`,
//! `logit_bias` and `stream`/`stream_options` pass as they are. What a chat
//! model cannot do is a 400 naming the field: token-id prompts, several
//! prompts, `suffix`, `best_of` above 1, `logprobs`. The answer goes back
//! as a `text_completion` ([`from_completion`]), a stream chunk by chunk
//! ([`Legacy`]: the same object per chunk, the text as increments, the
//! usage chunk and `[DONE]` as they come); `echo: true` puts the prompt
//! before the text.

use super::reframe::{ChatEvent, Reframe};
use super::ApiError;
use bytes::Bytes;
use serde_json::{json, Map, Value};

/// OpenAI's default `max_tokens` for this API.
pub const DEFAULT_MAX_TOKENS: u64 = 16;

fn invalid(param: &str, message: &str) -> ApiError {
    ApiError::InvalidField { param: param.into(), message: message.into() }
}

/// What the answer repeats of the request.
#[derive(Debug, Clone, Default)]
pub struct Echo {
    /// The prompt, when `echo: true`.
    pub prompt: Option<String>,
}

/// Translates a Completions request body into a chat request body.
pub fn to_chat(body: &[u8]) -> Result<(Map<String, Value>, Echo), ApiError> {
    let body = super::responses::history::parse(body)?;
    let prompt = match body.get("prompt") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(list)) if list.len() == 1 && list[0].is_string() => {
            list[0].as_str().unwrap_or_default().to_string()
        }
        Some(Value::Array(list)) if list.iter().all(Value::is_string) => {
            return Err(invalid("prompt", "send one prompt per request (a string)"))
        }
        Some(Value::Array(_)) => {
            return Err(invalid("prompt", "token-id prompts are not supported: send the text (a string)"))
        }
        None | Some(Value::Null) => return Err(invalid("prompt", "missing required field `prompt`")),
        Some(_) => return Err(invalid("prompt", "`prompt` must be a string")),
    };
    if body.get("suffix").is_some_and(|s| s.as_str().is_some_and(|s| !s.is_empty())) {
        return Err(invalid("suffix", "`suffix` (insertion) is not supported by chat models"));
    }
    if body.get("best_of").and_then(Value::as_u64).is_some_and(|n| n > 1) {
        return Err(invalid("best_of", "`best_of` above 1 is not supported"));
    }
    if body.get("logprobs").is_some_and(|l| !l.is_null()) {
        return Err(invalid("logprobs", "`logprobs` is not supported on this endpoint"));
    }
    let mut chat = Map::new();
    chat.insert("model".into(), body.get("model").cloned().unwrap_or(Value::Null));
    chat.insert("messages".into(), json!([{"role": "user", "content": prompt}]));
    let max_tokens = body.get("max_tokens").filter(|v| !v.is_null()).cloned().unwrap_or(json!(DEFAULT_MAX_TOKENS));
    chat.insert("max_tokens".into(), max_tokens);
    for key in [
        "temperature",
        "top_p",
        "n",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "seed",
        "user",
        "logit_bias",
        "stream",
        "stream_options",
    ] {
        if let Some(v) = body.get(key).filter(|v| !v.is_null()) {
            chat.insert(key.into(), v.clone());
        }
    }
    let echo = body.get("echo").and_then(Value::as_bool) == Some(true);
    Ok((chat, Echo { prompt: echo.then_some(prompt) }))
}

/// A `text_completion`'s choices from a chat object's choices: each
/// message's (or delta's) text, with the prompt before it when echoed.
fn choices(chat: &Value, key: &str, echo: Option<&str>) -> Vec<Value> {
    let list = chat.get("choices").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    list.iter()
        .enumerate()
        .map(|(i, c)| {
            let text = c.get(key).and_then(|m| m.get("content")).and_then(Value::as_str).unwrap_or_default();
            let text = match echo {
                Some(p) => format!("{p}{text}"),
                None => text.to_string(),
            };
            json!({"text": text, "index": c.get("index").cloned().unwrap_or(json!(i)), "logprobs": null,
                "finish_reason": c.get("finish_reason").cloned().unwrap_or(Value::Null)})
        })
        .collect()
}

/// The object's head (`id`, `object`, `created`, `model`) from a chat one.
fn head(chat: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    let id = chat.get("id").and_then(Value::as_str).unwrap_or_default();
    m.insert("id".into(), json!(format!("cmpl-{}", id.trim_start_matches("chatcmpl-"))));
    m.insert("object".into(), json!("text_completion"));
    m.insert("created".into(), chat.get("created").cloned().unwrap_or(json!(0)));
    m.insert("model".into(), chat.get("model").cloned().unwrap_or(Value::Null));
    if let Some(fp) = chat.get("system_fingerprint").filter(|v| !v.is_null()) {
        m.insert("system_fingerprint".into(), fp.clone());
    }
    m
}

/// A whole `chat.completion` as a `text_completion`.
pub fn from_completion(chat: &Value, echo: &Echo) -> Value {
    let mut m = head(chat);
    m.insert("choices".into(), Value::Array(choices(chat, "message", echo.prompt.as_deref())));
    if let Some(u) = chat.get("usage").filter(|u| u.is_object()) {
        m.insert("usage".into(), u.clone());
    }
    Value::Object(m)
}

/// The chat stream as the Completions stream.
#[derive(Debug, Default)]
pub struct Legacy {
    echo: Echo,
    finished: bool,
}

impl Legacy {
    /// A stream that echoes as `echo` says.
    pub fn new(echo: Echo) -> Self {
        Self { echo, finished: false }
    }
}

fn data(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

impl Reframe for Legacy {
    fn event(&mut self, ev: ChatEvent, out: &mut Vec<Bytes>) {
        match ev {
            ChatEvent::Chunk(chunk) => {
                // The prompt goes before the first text, once.
                let echo = self.echo.prompt.take();
                let mut m = head(&chunk);
                m.insert("choices".into(), Value::Array(choices(&chunk, "delta", echo.as_deref())));
                if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
                    m.insert("usage".into(), u.clone());
                }
                out.push(data(&Value::Object(m)));
            }
            ChatEvent::Done => {
                out.push(Bytes::from_static(b"data: [DONE]\n\n"));
                self.finished = true;
            }
            ChatEvent::Failed { message, code } => {
                let e = json!({"error": {"message": message, "type": "server_error", "param": null,
                    "code": code.unwrap_or_else(|| "server_error".into())}});
                out.push(data(&e));
                self.finished = true;
            }
        }
    }

    fn finished(&self) -> bool {
        self.finished
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(body: Value) -> String {
        match to_chat(body.to_string().as_bytes()) {
            Err(ApiError::InvalidField { param, .. }) => param,
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn a_prompt_is_one_user_message_with_the_apis_defaults() {
        let (c, echo) =
            to_chat(br#"{"model":"m","prompt":["Say hi"],"temperature":0.2,"stop":["\n"],"echo":true}"#).unwrap();
        assert_eq!(c["messages"], json!([{"role": "user", "content": "Say hi"}]));
        assert_eq!((c["max_tokens"].as_u64(), c["temperature"].as_f64()), (Some(16), Some(0.2)));
        assert_eq!(echo.prompt.as_deref(), Some("Say hi"));
        assert_eq!(param(json!({"model": "m", "prompt": [1, 2]})), "prompt");
        assert_eq!(param(json!({"model": "m", "prompt": ["a", "b"]})), "prompt");
        assert_eq!(param(json!({"model": "m", "prompt": "a", "best_of": 3})), "best_of");
        assert_eq!(param(json!({"model": "m", "prompt": "a", "logprobs": 2})), "logprobs");
        assert_eq!(param(json!({"model": "m"})), "prompt");
    }

    #[test]
    fn answers_are_text_completions_whole_and_streamed() {
        let chat = json!({"id": "chatcmpl-1", "created": 5, "model": "p/m", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}});
        let t = from_completion(&chat, &Echo { prompt: Some("Say ".into()) });
        assert_eq!((t["id"].as_str(), t["object"].as_str()), (Some("cmpl-1"), Some("text_completion")));
        assert_eq!(
            (t["choices"][0]["text"].as_str(), t["choices"][0]["finish_reason"].as_str()),
            (Some("Say Hi"), Some("length"))
        );
        let mut l = Legacy::new(Echo::default());
        let mut out = Vec::new();
        l.event(ChatEvent::Chunk(json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": "H"}, "finish_reason": null}]})), &mut out);
        l.event(ChatEvent::Done, &mut out);
        let first: Value =
            serde_json::from_str(std::str::from_utf8(&out[0]).unwrap().trim().trim_start_matches("data: ")).unwrap();
        assert_eq!(
            (first["object"].as_str(), first["choices"][0]["text"].as_str()),
            (Some("text_completion"), Some("H"))
        );
        assert_eq!(&out[1][..], b"data: [DONE]\n\n");
        assert!(l.finished());
    }
}
