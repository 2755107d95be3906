//! Hostile upstreams: replies that try to hurt the gateway rather than fail
//! politely (the "Hardening" issue), and a fake that echoes what it was sent.

pub mod wall;

use crate::reply::{Reply, Step};
use bytes::Bytes;

/// An SSE stream that sends `data:` lines of `line_bytes` each, `lines`
/// of them, and never the blank line that would end the event; then hangs.
/// The steps share one buffer, so a large total costs the test nothing.
pub fn endless_event(line_bytes: usize, lines: usize) -> Reply {
    let mut line = b"data: ".to_vec();
    line.resize(line_bytes.saturating_sub(1).max(line.len()), b'x');
    line.push(b'\n');
    let line = Bytes::from(line);
    let mut reply = Reply::sse_raw(&[]);
    for _ in 0..lines {
        reply = reply.then(Step::Bytes(line.clone()));
    }
    reply.then(Step::Hang)
}

/// An upstream that quotes the request's `Authorization` header in every
/// answer, as a careless proxy in front of a provider might: an error body
/// of `status`, or for 200 a stream whose first event is an in-band error.
pub struct EchoUpstream {
    addr: std::net::SocketAddr,
}

impl EchoUpstream {
    /// Starts one on an ephemeral port.
    pub async fn start(status: u16) -> Self {
        Self::serve(status, false).await
    }

    /// One that streams a first token and then the error event: an error
    /// that arrives mid-stream, after the client has had content.
    pub async fn start_mid_stream() -> Self {
        Self::serve(200, true).await
    }

    async fn serve(status: u16, token_first: bool) -> Self {
        let app = axum::Router::new()
            .fallback(move |headers: http::HeaderMap| async move { echo(status, token_first, &headers) });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("addr: {e}"));
        #[allow(clippy::disallowed_methods)]
        // test infrastructure: lives as long as the test runtime
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr }
    }

    /// `http://127.0.0.1:PORT/v1`, the `base_url` of a provider.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

fn echo(status: u16, token_first: bool, headers: &http::HeaderMap) -> axum::response::Response {
    let auth = headers.get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("");
    let key = auth.strip_prefix("Bearer ").unwrap_or(auth);
    let message = format!("rejected headers {{authorization: {auth}}}; the key {key} is not allowed here");
    let error = serde_json::json!({"error": {
        "message": message, "type": "invalid_request_error", "code": "bad_header", "param": "messages"
    }});
    let token = serde_json::json!({"id": "echo", "object": "chat.completion.chunk", "created": 0, "model": "echo",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hello"}, "finish_reason": null}]});
    let (content_type, body) = if status == 200 && token_first {
        ("text/event-stream", format!("data: {token}\n\ndata: {error}\n\n"))
    } else if status == 200 {
        ("text/event-stream", format!("data: {error}\n\n"))
    } else {
        ("application/json", error.to_string())
    };
    axum::response::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(axum::body::Body::from(body))
        .unwrap_or_default()
}
