//! Re-framing a streamed chat answer as another API's events, as it passes.
//!
//! The Responses and Messages entry points run the chat core and get the
//! chat SSE stream the client of `/v1/chat/completions` would get — chunks,
//! the error event of a stream that failed after its first byte, `[DONE]`.
//! [`reframe`] wraps that byte stream: it parses each chat event as it
//! arrives (the shared [`SseParser`]), hands it to the format's
//! [`Reframe`] state machine, and sends whatever events that produced at
//! once, in one frame (the chat stream's frames hold every event one
//! upstream read brought; their translations go out together too). Nothing
//! is held back: a chat frame becomes its translated events before the
//! next frame is read.
//!
//! In a request's life this is the last step before the client's socket:
//! fallback, settlement and cost happen upstream of it, in the chat stream
//! it wraps.

use super::sse::{SseEvent, SseParser};
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use serde_json::Value;
use std::convert::Infallible;

/// One event of the chat stream, as a translator sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEvent {
    /// A `chat.completion.chunk` (usage chunks included).
    Chunk(Value),
    /// The stream failed after its first byte (the gateway's error event).
    Failed {
        /// What went wrong, for the client.
        message: String,
        /// The failure's bounded reason, when given.
        code: Option<String>,
    },
    /// `[DONE]`: the answer is complete.
    Done,
}

impl ChatEvent {
    /// Reads one chat SSE event's data.
    fn read(data: &str) -> Option<Self> {
        let data = data.trim();
        if data == "[DONE]" {
            return Some(Self::Done);
        }
        let v: Value = serde_json::from_str(data).ok()?;
        match v.get("error").filter(|e| !e.is_null()) {
            Some(e) => Some(Self::Failed {
                message: e.get("message").and_then(Value::as_str).unwrap_or("the upstream failed").to_string(),
                code: e.get("code").and_then(Value::as_str).map(str::to_string),
            }),
            None => Some(Self::Chunk(v)),
        }
    }
}

/// A format's translation of the chat stream.
pub trait Reframe: Send + 'static {
    /// Translates one chat event, pushing the format's events onto `out`.
    fn event(&mut self, ev: ChatEvent, out: &mut Vec<Bytes>);
    /// Whether the format's stream has ended (later chat events are ignored).
    fn finished(&self) -> bool;
}

struct State<R> {
    inner: BoxStream<'static, Result<Bytes, Infallible>>,
    parser: SseParser,
    events: Vec<SseEvent>,
    out: Vec<Bytes>,
    reframe: R,
    eof: bool,
}

/// The chat SSE stream `inner`, translated event by event by `reframe`.
pub fn reframe<R: Reframe>(
    inner: BoxStream<'static, Result<Bytes, Infallible>>,
    reframe: R,
) -> BoxStream<'static, Result<Bytes, Infallible>> {
    let state = State { inner, parser: SseParser::new(), events: Vec::new(), out: Vec::new(), reframe, eof: false };
    futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(frame) = joined(&mut st.out) {
                return Some((Ok(frame), st));
            }
            if st.eof {
                return None;
            }
            match st.inner.next().await {
                Some(Ok(chunk)) => {
                    if st.parser.feed(&chunk, &mut st.events).is_err() {
                        let failed = ChatEvent::Failed { message: "a stream event was too long".into(), code: None };
                        st.reframe.event(failed, &mut st.out);
                    }
                }
                Some(Err(never)) => match never {},
                None => {
                    st.parser.finish(&mut st.events);
                    st.eof = true;
                }
            }
            for ev in st.events.drain(..) {
                if st.reframe.finished() {
                    break;
                }
                if let Some(ev) = ChatEvent::read(&ev.data) {
                    st.reframe.event(ev, &mut st.out);
                }
            }
            if st.eof && !st.reframe.finished() {
                // The chat stream always ends in `[DONE]` or its error event;
                // anything else is a cut the client must see.
                let cut = ChatEvent::Failed { message: "the stream ended early".into(), code: None };
                st.reframe.event(cut, &mut st.out);
            }
        }
    })
    .boxed()
}

/// The translated events as one frame (`None` when there are none).
fn joined(out: &mut Vec<Bytes>) -> Option<Bytes> {
    match out.len() {
        0 => None,
        1 => out.pop(),
        _ => {
            let mut frame = BytesMut::with_capacity(out.iter().map(Bytes::len).sum());
            for b in out.drain(..) {
                frame.extend_from_slice(&b);
            }
            Some(frame.freeze())
        }
    }
}

/// One named SSE event: `event: <name>` and its JSON `data:` (the Responses
/// and Messages streams both name every event).
pub fn named_event(name: &str, data: &Value) -> Bytes {
    let mut buf = BytesMut::with_capacity(128).writer();
    buf.get_mut().extend_from_slice(b"event: ");
    buf.get_mut().extend_from_slice(name.as_bytes());
    buf.get_mut().extend_from_slice(b"\ndata: ");
    // Serializing a Value into a buffer cannot fail.
    let _ = serde_json::to_writer(&mut buf, data);
    let mut buf = buf.into_inner();
    buf.extend_from_slice(b"\n\n");
    buf.freeze()
}

/// A fresh id: `prefix` and 24 random hex digits (`resp_…`, `msg_…`, `fc_…`).
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{:016x}{:08x}", fastrand::u64(..), fastrand::u32(..))
}

/// A chat answer's token counts, as every format reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    /// `prompt_tokens_details.cached_tokens`.
    pub cached: u64,
    /// `completion_tokens_details.reasoning_tokens`.
    pub reasoning: u64,
}

impl Usage {
    /// Reads a chat `usage` object (missing counts are 0).
    pub fn of(u: &Value) -> Self {
        let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
        Self {
            prompt: n(u.get("prompt_tokens")),
            completion: n(u.get("completion_tokens")),
            cached: n(u.get("prompt_tokens_details").and_then(|d| d.get("cached_tokens"))),
            reasoning: n(u.get("completion_tokens_details").and_then(|d| d.get("reasoning_tokens"))),
        }
    }
}

/// One `tool_calls` entry of a chunk: its index, and the id, name and
/// arguments fragment it carries (the id and name only in the first).
pub type CallDelta<'a> = (u64, Option<&'a str>, Option<&'a str>, Option<&'a str>);

/// The parts of a chat chunk's first choice a translator reads.
pub struct Delta<'a> {
    pub content: Option<&'a str>,
    pub refusal: Option<&'a str>,
    pub tool_calls: Vec<CallDelta<'a>>,
    pub finish_reason: Option<&'a str>,
    pub usage: Option<&'a Value>,
}

impl<'a> Delta<'a> {
    /// Reads a chunk (one choice: Spillway's clients ask for one).
    pub fn of(chunk: &'a Value) -> Self {
        let choice = chunk.get("choices").and_then(Value::as_array).and_then(|c| c.first());
        let delta = choice.and_then(|c| c.get("delta"));
        let s = |v: Option<&'a Value>, k: &str| v.and_then(|v| v.get(k)).and_then(Value::as_str);
        let tool_calls = delta
            .and_then(|d| d.get("tool_calls"))
            .and_then(Value::as_array)
            .map(|calls| {
                calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let f = c.get("function");
                        let index = c.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
                        (index, s(Some(c), "id"), s(f, "name"), s(f, "arguments"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            content: s(delta, "content").filter(|t| !t.is_empty()),
            refusal: s(delta, "refusal").filter(|t| !t.is_empty()),
            tool_calls,
            finish_reason: s(choice, "finish_reason"),
            usage: chunk.get("usage").filter(|u| u.is_object()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Echoes each chat event as a named event; ends at `[DONE]` or a failure.
    struct Echo(bool);

    impl Reframe for Echo {
        fn event(&mut self, ev: ChatEvent, out: &mut Vec<Bytes>) {
            let name = match &ev {
                ChatEvent::Chunk(_) => "chunk",
                ChatEvent::Failed { .. } => "failed",
                ChatEvent::Done => "done",
            };
            self.0 = !matches!(ev, ChatEvent::Chunk(_));
            out.push(named_event(name, &json!({})));
        }
        fn finished(&self) -> bool {
            self.0
        }
    }

    async fn run(parts: Vec<&'static str>) -> String {
        let inner = futures_util::stream::iter(parts.into_iter().map(|p| Ok(Bytes::from_static(p.as_bytes())))).boxed();
        let out: Vec<_> = reframe(inner, Echo(false)).collect().await;
        out.into_iter().map(|b| String::from_utf8(b.unwrap().to_vec()).unwrap()).collect()
    }

    #[tokio::test]
    async fn translates_each_event_and_stops_at_the_end() {
        let text = run(vec!["data: {\"choices\":[]}\n\ndata: [DO", "NE]\n\ndata: {}\n\n"]).await;
        assert_eq!(text, "event: chunk\ndata: {}\n\nevent: done\ndata: {}\n\n");
        let text = run(vec!["data: {\"error\":{\"message\":\"cut\",\"code\":\"broken_body\"}}\n\n"]).await;
        assert_eq!(text, "event: failed\ndata: {}\n\n");
    }

    #[tokio::test]
    async fn a_stream_without_its_end_fails() {
        let text = run(vec!["data: {\"choices\":[]}\n\n"]).await;
        assert!(text.ends_with("event: failed\ndata: {}\n\n"), "{text}");
    }

    #[test]
    fn reads_the_first_choice() {
        let c = json!({"choices":[{"delta":{"content":"a","tool_calls":[{"index":1,"id":"c","function":{"name":"f","arguments":"{"}}]},"finish_reason":null}]});
        let d = Delta::of(&c);
        assert_eq!((d.content, d.tool_calls[0]), (Some("a"), (1, Some("c"), Some("f"), Some("{"))));
        let u =
            Usage::of(&json!({"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}));
        assert_eq!(u, Usage { prompt: 5, completion: 2, cached: 1, reasoning: 0 });
    }
}
