//! Scripted replies: status, headers, a delay, and a body made of steps
//! (bytes, pauses, a hang, a cut connection).

use bytes::Bytes;
use serde_json::{json, Value};
use std::time::Duration;

/// One piece of a reply body.
#[derive(Clone, Debug)]
pub enum Step {
    /// Send these bytes.
    Bytes(Bytes),
    /// Pause.
    Wait(Duration),
    /// Never send anything more (the connection stays open).
    Hang,
    /// Break the connection (the client sees a truncated body).
    Cut,
}

/// A scripted reply.
#[derive(Clone, Debug)]
pub struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) delay: Duration,
    pub(crate) steps: Vec<Step>,
}

/// A `chat.completion` body with one text answer.
pub fn completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_760_000_000,
        "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": null},
                     "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    })
}

/// A `chat.completion.chunk` body.
pub fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_760_000_000,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

fn sse(v: &Value) -> Step {
    Step::Bytes(Bytes::from(format!("data: {v}\n\n")))
}

impl Reply {
    /// A 200 with a JSON body.
    pub fn json(body: Value) -> Self {
        Self::raw(200, "application/json", body.to_string())
    }

    /// Any status, content type and body.
    pub fn raw(status: u16, content_type: &str, body: impl Into<Bytes>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            delay: Duration::ZERO,
            steps: vec![Step::Bytes(body.into())],
        }
    }

    /// A 200 `chat.completion` answering `content`.
    pub fn text(content: &str) -> Self {
        Self::json(completion(content))
    }

    /// A 200 `chat.completion` with no content and no tool calls.
    pub fn empty() -> Self {
        Self::json(completion(""))
    }

    /// An OpenAI-shaped error.
    pub fn error(status: u16, code: &str, message: &str) -> Self {
        let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}});
        Self::raw(status, "application/json", body.to_string())
    }

    /// A 200 whose body is not JSON (a proxy's HTML page).
    pub fn garbage() -> Self {
        Self::raw(200, "text/html", "<html><body>502 Bad Gateway</body></html>")
    }

    /// A stream: a role chunk, one chunk per piece, a finish chunk, `[DONE]`.
    pub fn stream(pieces: &[&str]) -> Self {
        let mut steps = vec![sse(&chunk(json!({"role": "assistant", "content": ""}), None))];
        steps.extend(pieces.iter().map(|p| sse(&chunk(json!({"content": p}), None))));
        steps.push(sse(&chunk(json!({}), Some("stop"))));
        steps.push(Step::Bytes(Bytes::from_static(b"data: [DONE]\n\n")));
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            delay: Duration::ZERO,
            steps,
        }
    }

    /// A stream of raw SSE text (for malformed or provider-specific streams).
    pub fn sse_raw(events: &[&str]) -> Self {
        let steps = events.iter().map(|e| Step::Bytes(Bytes::from(e.to_string()))).collect();
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            delay: Duration::ZERO,
            steps,
        }
    }

    /// Waits before sending status and headers.
    pub fn delay(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Pauses after the `n`-th body step (for streams, step 0 is the role chunk).
    pub fn pause_after(mut self, n: usize, d: Duration) -> Self {
        let at = (n + 1).min(self.steps.len());
        self.steps.insert(at, Step::Wait(d));
        self
    }

    /// Keeps only the first `n` body steps, then breaks the connection.
    pub fn cut_after(mut self, n: usize) -> Self {
        self.steps.truncate(n);
        // A pause first, so hyper flushes what was sent before it aborts.
        self.steps.push(Step::Wait(Duration::from_millis(20)));
        self.steps.push(Step::Cut);
        self
    }

    /// Keeps only the first `n` body steps, then hangs.
    pub fn hang_after(mut self, n: usize) -> Self {
        self.steps.truncate(n);
        self.steps.push(Step::Hang);
        self
    }

    /// Never answers at all.
    pub fn hang() -> Self {
        Self { status: 200, headers: Vec::new(), delay: Duration::ZERO, steps: vec![Step::Hang] }
    }

    /// Appends a raw step.
    pub fn then(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }
}
