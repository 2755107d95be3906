//! The fault wall: one OpenAI-compatible upstream whose request's `model`
//! picks the fault — the sixteen provider faults of issue 18 (a public
//! failover benchmark's list) plus a healthy model that finishes any
//! partial answer it is handed.
//!
//! It speaks HTTP/1.1 by hand (one request per connection, `connection:
//! close`, chunked bodies) so it can do what a framework hides: reset the
//! connection before the response head, cut a chunked body mid-answer,
//! hold a connection open in silence. Every call is recorded per model
//! with the time it arrived (tokio's clock: tests may pause it), so tests
//! assert attempt counts and spacing.
//!
//! | model | what it does |
//! |---|---|
//! | `healthy` | the [`answer`] (60 tokens); handed a partial answer (a trailing assistant message, or one followed by the continuation instruction), it sends the rest — in instruct mode repeating the seam's last token, as models do |
//! | `f01-retry-after-once` | first call: 429 `Retry-After: 2`; then healthy |
//! | `f02-rate-limited` | always 429, no `Retry-After` |
//! | `f03-500-once` | first call: 500; then healthy |
//! | `f04-503` | always 503 |
//! | `f05-reset-once` | first call: TCP reset before the response head; then healthy |
//! | `f06-silent` | reads the request, never answers |
//! | `f07-first-token-20s` | stream: the head and role at once, the first token after 20 s; whole: the answer after 20 s |
//! | `f08-cut-40-of-60` | stream: 40 of the 60 tokens, then the connection breaks; whole: two thirds of the body, then the break |
//! | `f09-stall-60s` | 20 tokens, 60 s of silence with the connection open, then the rest |
//! | `f10-one-garbage` | 20 tokens, one event that is not JSON, the rest |
//! | `f10-garbage-5` | 20 tokens, five events that are not JSON, the rest |
//! | `f11-no-done` | the whole stream with usage in the finish chunk, then the body ends without `[DONE]` |
//! | `f11-no-done-open` | the same, then the connection stays open and silent |
//! | `f12-context-length` | 400 `context_length_exceeded` |
//! | `f13-content-filter` | 400 `content_filter` (Azure's and OpenAI's shape) |
//! | `f14-rejects-prefill` | 400 when the last message is the assistant's; otherwise healthy |
//! | `f15-down-60s` | 503 for 60 s from its first call; then healthy |
//! | `slow-60s` | the healthy answer, one token a second: a minute-long generation |

use bytes::Bytes;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// Tokens of the healthy answer.
pub const TOKENS: usize = 60;

/// The healthy answer: `w1 w2 … w60 `.
pub fn answer() -> String {
    tokens().concat()
}

fn tokens() -> Vec<String> {
    (1..=TOKENS).map(|i| format!("w{i} ")).collect()
}

/// One call the wall received.
#[derive(Clone, Debug)]
pub struct Call {
    /// When it arrived, from the wall's start.
    pub at: Duration,
    /// The request body.
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    calls: Mutex<HashMap<String, Vec<Call>>>,
}

/// A running fault wall.
#[derive(Clone)]
pub struct FaultWall {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    started: Instant,
}

impl FaultWall {
    /// Starts one on an ephemeral port.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("addr: {e}"));
        let wall = Self { addr, shared: Arc::default(), started: Instant::now() };
        let me = wall.clone();
        #[allow(clippy::disallowed_methods)]
        // test infrastructure: lives as long as the test runtime
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let me = me.clone();
                #[allow(clippy::disallowed_methods)]
                tokio::spawn(async move { me.serve(conn).await });
            }
        });
        wall
    }

    /// `http://127.0.0.1:PORT/v1`, the `base_url` of a provider.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The calls `model` received, in order.
    pub fn calls_of(&self, model: &str) -> Vec<Call> {
        lock(&self.shared.calls).get(model).cloned().unwrap_or_default()
    }

    /// How many calls `model` received.
    pub fn calls(&self, model: &str) -> usize {
        self.calls_of(model).len()
    }

    /// Time since the wall started (tokio's clock).
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    async fn serve(&self, mut conn: TcpStream) {
        let Some((path, body)) = read_request(&mut conn).await else { return };
        if !path.ends_with("/chat/completions") {
            let _ = write_json(&mut conn, 404, &[], &json!({"error": {"message": "no such route"}})).await;
            return;
        }
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let model = body["model"].as_str().unwrap_or_default().to_string();
        let (nth, first_at) = {
            let mut calls = lock(&self.shared.calls);
            let list = calls.entry(model.clone()).or_default();
            list.push(Call { at: self.started.elapsed(), body: body.clone() });
            (list.len(), list[0].at)
        };
        let _ = self.fault(&mut conn, &model, nth, first_at, &body).await;
    }

    async fn fault(
        &self,
        conn: &mut TcpStream,
        model: &str,
        nth: usize,
        first_at: Duration,
        body: &Value,
    ) -> std::io::Result<()> {
        let stream = body["stream"].as_bool().unwrap_or(false);
        let usage = body["stream_options"]["include_usage"].as_bool().unwrap_or(false);
        let healthy = Script::healthy(body);
        match model {
            "f01-retry-after-once" if nth == 1 => {
                error(conn, 429, &[("retry-after", "2")], "rate_limit_exceeded").await
            }
            "f02-rate-limited" => error(conn, 429, &[], "rate_limit_exceeded").await,
            "f03-500-once" if nth == 1 => error(conn, 500, &[], "server_error").await,
            "f04-503" => error(conn, 503, &[], "overloaded").await,
            "f15-down-60s" if self.started.elapsed() < first_at + Duration::from_secs(60) => {
                error(conn, 503, &[], "overloaded").await
            }
            "f05-reset-once" if nth == 1 => {
                conn.set_zero_linger()?;
                Ok(())
            }
            "f06-silent" => {
                std::future::pending::<()>().await;
                Ok(())
            }
            "f07-first-token-20s" => {
                let wait = Duration::from_secs(20);
                if stream {
                    Script::full(&tokens()).wait_at(0, wait).send(conn, usage).await
                } else {
                    tokio::time::sleep(wait).await;
                    healthy.send_whole(conn).await
                }
            }
            "f08-cut-40-of-60" if stream => Script::full(&tokens()).cut_at(41).send(conn, usage).await,
            "f08-cut-40-of-60" => {
                let whole = completion(&answer()).to_string();
                let cut = &whole.as_bytes()[..whole.len() * 2 / 3];
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    whole.len()
                );
                conn.write_all(head.as_bytes()).await?;
                conn.write_all(cut).await?;
                conn.flush().await?;
                conn.shutdown().await
            }
            "f09-stall-60s" => {
                Script::full(&tokens()).wait_at(21, Duration::from_secs(60)).send_as(conn, stream, usage).await
            }
            "f10-one-garbage" => Script::full(&tokens()).garbage_at(21, 1).send_as(conn, stream, usage).await,
            "f10-garbage-5" => Script::full(&tokens()).garbage_at(21, 5).send_as(conn, stream, usage).await,
            "f11-no-done" => Script::full(&tokens()).usage_in_finish().no_done().send_as(conn, stream, false).await,
            "f11-no-done-open" => {
                Script::full(&tokens()).usage_in_finish().no_done().hang().send_as(conn, stream, false).await
            }
            "f12-context-length" => {
                let e = json!({"error": {"message": "This model's maximum context length is 8192 tokens.",
                    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
                write_json(conn, 400, &[], &e).await
            }
            "f13-content-filter" => {
                let e = json!({"error": {"message": "The response was filtered due to the prompt triggering the content management policy.",
                    "type": "invalid_request_error", "param": "prompt", "code": "content_filter"}});
                write_json(conn, 400, &[], &e).await
            }
            "f14-rejects-prefill" if last_role(body) == Some("assistant") => {
                let e = json!({"error": {"message": "This model does not support assistant message prefill.",
                    "type": "invalid_request_error", "param": "messages", "code": null}});
                write_json(conn, 400, &[], &e).await
            }
            "slow-60s" => {
                let mut slow = Script::full(&[]);
                for t in tokens() {
                    slow.pieces.push(Piece::Wait(Duration::from_secs(1)));
                    slow.pieces.push(Piece::Token(t));
                }
                slow.send_as(conn, stream, usage).await
            }
            _ => healthy.send_as(conn, stream, usage).await,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn last_role(body: &Value) -> Option<&str> {
    body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["role"].as_str())
}

/// The partial answer a continuation hands over, and whether it was
/// instructed (the continuation instruction after it) rather than prefilled.
fn partial(body: &Value) -> Option<(String, bool)> {
    let messages = body["messages"].as_array()?;
    let last = messages.last()?;
    if last["role"] == "assistant" {
        return last["content"].as_str().map(|c| (c.to_string(), false));
    }
    let instructed = last["content"].as_str().is_some_and(|c| c.contains("Continue exactly"));
    let before = messages.get(messages.len().checked_sub(2)?)?;
    if !instructed || before["role"] != "assistant" {
        return None;
    }
    before["content"].as_str().map(|c| (c.to_string(), true))
}

/// One step of a scripted stream.
#[derive(Clone)]
enum Piece {
    Token(String),
    Wait(Duration),
    Garbage,
    Cut,
}

/// A scripted answer: its tokens and faults.
struct Script {
    pieces: Vec<Piece>,
    usage_in_finish: bool,
    done: bool,
    hang: bool,
}

impl Script {
    fn full(tokens: &[String]) -> Self {
        Self {
            pieces: tokens.iter().cloned().map(Piece::Token).collect(),
            usage_in_finish: false,
            done: true,
            hang: false,
        }
    }

    /// The healthy model's answer to this request: the whole answer, or the
    /// rest of a partial one.
    fn healthy(body: &Value) -> Self {
        let all = tokens();
        let Some((had, instructed)) = partial(body) else { return Self::full(&all) };
        let mut sent = 0;
        let mut at = 0;
        while sent < all.len() && had[at..].starts_with(&all[sent]) {
            at += all[sent].len();
            sent += 1;
        }
        let from = if instructed { sent.saturating_sub(1) } else { sent };
        Self::full(&all[from..])
    }

    fn wait_at(mut self, i: usize, d: Duration) -> Self {
        self.pieces.insert(i.min(self.pieces.len()), Piece::Wait(d));
        self
    }

    fn cut_at(mut self, i: usize) -> Self {
        self.pieces.truncate(i.saturating_sub(1));
        self.pieces.push(Piece::Cut);
        self
    }

    fn garbage_at(mut self, i: usize, n: usize) -> Self {
        for _ in 0..n {
            self.pieces.insert(i.min(self.pieces.len()), Piece::Garbage);
        }
        self
    }

    fn usage_in_finish(mut self) -> Self {
        self.usage_in_finish = true;
        self
    }

    fn no_done(mut self) -> Self {
        self.done = false;
        self
    }

    fn hang(mut self) -> Self {
        self.hang = true;
        self
    }

    fn text(&self) -> String {
        self.pieces.iter().filter_map(|p| if let Piece::Token(t) = p { Some(t.as_str()) } else { None }).collect()
    }

    fn token_count(&self) -> usize {
        self.pieces.iter().filter(|p| matches!(p, Piece::Token(_))).count()
    }

    async fn send_as(self, conn: &mut TcpStream, stream: bool, usage: bool) -> std::io::Result<()> {
        if stream {
            self.send(conn, usage).await
        } else {
            for p in &self.pieces {
                if let Piece::Wait(d) = p {
                    tokio::time::sleep(*d).await;
                }
            }
            self.send_whole(conn).await
        }
    }

    async fn send_whole(self, conn: &mut TcpStream) -> std::io::Result<()> {
        let mut body = completion(&self.text());
        body["usage"] = usage_of(self.token_count());
        write_json(conn, 200, &[], &body).await
    }

    /// As SSE: the role chunk, the pieces, a finish chunk, a usage chunk
    /// when asked for, `[DONE]`.
    async fn send(self, conn: &mut TcpStream, usage: bool) -> std::io::Result<()> {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
        conn.write_all(head.as_bytes()).await?;
        chunk(conn, &event(&delta(json!({"role": "assistant", "content": ""}), None))).await?;
        let n = self.token_count();
        for p in &self.pieces {
            match p {
                Piece::Token(t) => chunk(conn, &event(&delta(json!({"content": t}), None))).await?,
                Piece::Wait(d) => tokio::time::sleep(*d).await,
                Piece::Garbage => chunk(conn, "data: {\"choices\": [{\"delta\": {\"content\": \"bro\n\n").await?,
                // The body ends without its last chunk: a cut the client
                // sees only after reading everything sent before it (a
                // reset would drop what it has not read yet).
                Piece::Cut => {
                    conn.flush().await?;
                    return conn.shutdown().await;
                }
            }
        }
        let mut finish = delta(json!({}), Some("stop"));
        if self.usage_in_finish {
            finish["usage"] = usage_of(n);
        }
        chunk(conn, &event(&finish)).await?;
        if usage {
            let mut u = delta(json!({}), None);
            u["choices"] = json!([]);
            u["usage"] = usage_of(n);
            chunk(conn, &event(&u)).await?;
        }
        if self.done {
            chunk(conn, "data: [DONE]\n\n").await?;
        }
        if self.hang {
            conn.flush().await?;
            std::future::pending::<()>().await;
        }
        conn.write_all(b"0\r\n\r\n").await?;
        conn.flush().await
    }
}

fn usage_of(completion_tokens: usize) -> Value {
    json!({"prompt_tokens": 5, "completion_tokens": completion_tokens, "total_tokens": 5 + completion_tokens})
}

fn completion(content: &str) -> Value {
    let mut v = crate::reply::completion(content);
    v["model"] = json!("wall");
    v
}

fn delta(delta: Value, finish: Option<&str>) -> Value {
    crate::reply::chunk(delta, finish)
}

fn event(v: &Value) -> String {
    format!("data: {v}\n\n")
}

async fn chunk(conn: &mut TcpStream, data: &str) -> std::io::Result<()> {
    let framed = format!("{:x}\r\n{data}\r\n", data.len());
    conn.write_all(framed.as_bytes()).await?;
    conn.flush().await
}

async fn error(conn: &mut TcpStream, status: u16, headers: &[(&str, &str)], code: &str) -> std::io::Result<()> {
    let e = json!({"error": {"message": format!("fault wall: {code}"), "type": "server_error", "param": null, "code": code}});
    write_json(conn, status, headers, &e).await
}

async fn write_json(conn: &mut TcpStream, status: u16, headers: &[(&str, &str)], body: &Value) -> std::io::Result<()> {
    let body = Bytes::from(body.to_string());
    let mut head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes()).await?;
    conn.write_all(&body).await?;
    conn.flush().await?;
    let _ = conn.shutdown().await;
    Ok(())
}

/// Reads one request: its path and body (`content-length` framing, which
/// is what Spillway's client sends).
async fn read_request(conn: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = conn.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let path = head.split_whitespace().nth(1)?.to_string();
    let length = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[end..].to_vec();
    while body.len() < length {
        let n = conn.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    Some((path, body))
}
