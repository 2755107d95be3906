//! Cutting a native adapter's streamed body into the units its decoder
//! reads — SSE events (Anthropic, GigaChat, Gemini) or newline-delimited
//! JSON lines (Yandex); Bedrock's binary frames are cut in
//! `super::eventstream` — and driving the decoder so that every upstream hiccup
//! (a cut body, a line that is not UTF-8, an over-long line, a decoder
//! error) comes out as a classified attempt failure, never a panic.
//!
//! Used by `native.rs` once a 2xx stream answer arrives; the items
//! go to the runner as a [`ChunkStream`].

use super::classify::{translate_failure, AttemptErrorSource};
use super::translate::{StreamItem, TranslateError};
use super::types::ChunkStream;
use crate::api::sse::{SseEvent, SseParser};
use crate::outcome::{AttemptError, Failure};
use futures_util::StreamExt;
use std::collections::VecDeque;

/// Upper bound on one NDJSON line, like the SSE parser's: a peer that never
/// sends a newline must not make the gateway buffer without limit.
const MAX_LINE: usize = crate::api::sse::MAX_EVENT_BYTES;

pub(crate) type Items = VecDeque<Result<StreamItem, AttemptError>>;

/// How a byte stream is cut into the units a decoder reads.
pub(crate) trait Framing: Send + 'static {
    /// The content type a streamed answer must have (`text/event-stream`,
    /// Bedrock's `application/vnd.amazon.eventstream`); `None`: not checked.
    const CONTENT_TYPE: Option<&'static str>;
    /// Feeds bytes; translated items go onto `out`.
    fn feed(&mut self, bytes: &[u8], out: &mut Items);
    /// The body ended: flush what is left.
    fn finish(&mut self, out: &mut Items);
}

/// A decoder of SSE events: `(event name, data)` to OpenAI items.
pub(crate) trait EventDecoder: Send + 'static {
    /// Decodes one event.
    fn decode(&mut self, event: Option<&str>, data: &str) -> Result<Vec<StreamItem>, TranslateError>;
}

impl<F> EventDecoder for F
where
    F: FnMut(Option<&str>, &str) -> Result<Vec<StreamItem>, TranslateError> + Send + 'static,
{
    fn decode(&mut self, event: Option<&str>, data: &str) -> Result<Vec<StreamItem>, TranslateError> {
        self(event, data)
    }
}

/// A decoder of lines to OpenAI items.
pub(crate) trait LineDecoder: Send + 'static {
    /// Decodes one line (without its newline).
    fn decode(&mut self, line: &str) -> Result<Vec<StreamItem>, TranslateError>;
}

impl<F> LineDecoder for F
where
    F: FnMut(&str) -> Result<Vec<StreamItem>, TranslateError> + Send + 'static,
{
    fn decode(&mut self, line: &str) -> Result<Vec<StreamItem>, TranslateError> {
        self(line)
    }
}

/// SSE events, each handed to the decoder.
pub(crate) struct Sse<D> {
    parser: SseParser,
    events: Vec<SseEvent>,
    decoder: D,
}

impl<D: EventDecoder> Sse<D> {
    pub(crate) fn new(decoder: D) -> Self {
        Self { parser: SseParser::new(), events: Vec::new(), decoder }
    }

    fn drain(&mut self, out: &mut Items) {
        for ev in self.events.drain(..) {
            push(out, self.decoder.decode(ev.event.as_deref(), &ev.data));
        }
    }
}

impl<D: EventDecoder> Framing for Sse<D> {
    const CONTENT_TYPE: Option<&'static str> = Some("text/event-stream");

    fn feed(&mut self, bytes: &[u8], out: &mut Items) {
        if self.parser.feed(bytes, &mut self.events).is_err() {
            out.push_back(Err(AttemptError::new(Failure::BrokenBody, "an SSE line was too long")));
        }
        self.drain(out);
    }

    fn finish(&mut self, out: &mut Items) {
        self.parser.finish(&mut self.events);
        self.drain(out);
    }
}

/// Newline-delimited lines (Yandex's NDJSON), each handed to the decoder.
pub(crate) struct Lines<D> {
    buf: Vec<u8>,
    decoder: D,
}

impl<D: LineDecoder> Lines<D> {
    pub(crate) fn new(decoder: D) -> Self {
        Self { buf: Vec::new(), decoder }
    }

    fn line(&mut self, line: &[u8], out: &mut Items) {
        match std::str::from_utf8(line) {
            Ok(text) => push(out, self.decoder.decode(text)),
            // Skipped like any event the decoder cannot read.
            Err(_) => out.push_back(Ok(StreamItem::Skipped)),
        }
    }
}

impl<D: LineDecoder> Framing for Lines<D> {
    /// The content type of a line stream is not agreed on (Yandex's is
    /// unverified: `application/json` or NDJSON), so it is not checked:
    /// every line is parsed whatever the header says.
    const CONTENT_TYPE: Option<&'static str> = None;

    fn feed(&mut self, bytes: &[u8], out: &mut Items) {
        self.buf.extend_from_slice(bytes);
        while let Some(at) = self.buf.iter().position(|&b| b == b'\n') {
            let rest = self.buf.split_off(at + 1);
            let line = std::mem::replace(&mut self.buf, rest);
            self.line(&line[..at], out);
        }
        if self.buf.len() > MAX_LINE {
            self.buf.clear();
            out.push_back(Err(AttemptError::new(Failure::BrokenBody, "a stream line was too long")));
        }
    }

    fn finish(&mut self, out: &mut Items) {
        let last = std::mem::take(&mut self.buf);
        if !last.iter().all(u8::is_ascii_whitespace) {
            self.line(&last, out);
        }
    }
}

/// A decoder's items; an event it could not read is skipped (the runner
/// counts it and fails the attempt past `health.streams.max_skipped_events`),
/// any other error ends the stream.
pub(crate) fn push(out: &mut Items, decoded: Result<Vec<StreamItem>, TranslateError>) {
    match decoded {
        Ok(items) => out.extend(items.into_iter().map(Ok)),
        Err(TranslateError::Unreadable { format, detail }) => {
            tracing::debug!(format, detail = %detail, "Skipping a stream event that cannot be read.");
            out.push_back(Ok(StreamItem::Skipped));
        }
        Err(e) => out.push_back(Err(translate_failure(e))),
    }
}

/// Runs `framing` over a body stream. The stream stops after the first
/// terminal item (`Done` or an error); a body that ends without `Done`
/// simply ends, which the runner treats as a broken body unless a finish
/// chunk came first.
pub(crate) fn decoded_stream<S, E, D>(bytes: S, framing: D) -> ChunkStream
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
    E: Into<AttemptErrorSource>,
    D: Framing,
{
    struct State<S, D> {
        bytes: std::pin::Pin<Box<S>>,
        framing: D,
        pending: Items,
        eof: bool,
        finished: bool,
    }
    let state = State { bytes: Box::pin(bytes), framing, pending: VecDeque::new(), eof: false, finished: false };
    futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if st.finished {
                return None;
            }
            if let Some(item) = st.pending.pop_front() {
                st.finished = item.is_err() || matches!(item, Ok(StreamItem::Done));
                return Some((item, st));
            }
            if st.eof {
                return None;
            }
            match st.bytes.next().await {
                Some(Ok(chunk)) => st.framing.feed(&chunk, &mut st.pending),
                Some(Err(e)) => {
                    let src: AttemptErrorSource = e.into();
                    st.pending.push_back(Err(src.0));
                }
                None => {
                    st.framing.finish(&mut st.pending);
                    st.eof = true;
                }
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(parts: &'static [&'static str]) -> Vec<String> {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        let framing = Lines::new(move |line: &str| {
            sink.lock().unwrap().push(line.to_owned());
            Ok(Vec::new())
        });
        let body = futures_util::stream::iter(
            parts.iter().map(|p| Ok::<_, std::convert::Infallible>(bytes::Bytes::from_static(p.as_bytes()))),
        );
        let _: Vec<_> = decoded_stream(body, framing).collect().await;
        let out = seen.lock().unwrap().clone();
        out
    }

    #[tokio::test]
    async fn lines_are_split_across_chunks() {
        assert_eq!(lines(&["{\"a\"", ":1}\n{\"b\":2}\n", "{\"c\":3}"]).await, ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
    }

    #[tokio::test]
    async fn a_malformed_event_is_skipped_and_the_stream_goes_on() {
        let framing = Sse::new(|_: Option<&str>, data: &str| {
            if data == "bad" {
                Err(TranslateError::Unreadable { format: "test", detail: "bad".into() })
            } else {
                Ok(vec![StreamItem::Chunk(serde_json::json!({"choices": []}))])
            }
        });
        let body = futures_util::stream::iter(
            ["data: ok\n\n", "data: bad\n\n", "data: ok\n\n"]
                .map(|p| Ok::<_, std::convert::Infallible>(bytes::Bytes::from_static(p.as_bytes()))),
        );
        let items: Vec<_> = decoded_stream(body, framing).collect().await;
        assert_eq!(items.len(), 3);
        assert_eq!(items[1], Ok(StreamItem::Skipped));
    }

    #[tokio::test]
    async fn a_decoder_error_ends_the_stream() {
        let framing = Sse::new(|_: Option<&str>, data: &str| {
            if data == "bad" {
                Err(TranslateError::Upstream {
                    class: crate::providers::translate::ErrorClass::Upstream,
                    message: "boom".into(),
                })
            } else {
                Ok(vec![StreamItem::Chunk(serde_json::json!({"choices": []}))])
            }
        });
        let body = futures_util::stream::iter(
            ["data: ok\n\n", "data: bad\n\n", "data: ok\n\n"]
                .map(|p| Ok::<_, std::convert::Infallible>(bytes::Bytes::from_static(p.as_bytes()))),
        );
        let items: Vec<_> = decoded_stream(body, framing).collect().await;
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].as_ref().unwrap_err().failure, Failure::Upstream { status: None });
    }
}
