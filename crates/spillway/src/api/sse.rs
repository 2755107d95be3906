//! Server-sent events: one tolerant incremental parser for every upstream,
//! and the encoder for what Spillway sends its clients.
//!
//! Written by hand (about 100 lines) because the parser must be fed raw
//! network chunks, keep partial lines across them, accept `\n`, `\r\n` and
//! `\r`, skip comment keep-alives (`: OPENROUTER PROCESSING`) and remember
//! `event:` names (Anthropic) — and the crates that parse SSE either own the
//! HTTP client or buffer whole responses.

use bytes::Bytes;

/// One parsed event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, if any.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Incremental parser; feed it chunks as they arrive.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of an unfinished line.
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` starting the next one is
    /// part of the same line break.
    after_cr: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

/// The most an upstream may send as one event: an SSE event's lines
/// together (the `data:` lines, and the line still being read), or one
/// NDJSON line. Without a cap on the whole event, a peer that sends `data:`
/// lines and never the blank line that ends the event would make the gateway
/// buffer without limit (each line was capped; their sum was not). Every
/// stream parser uses this one constant. 8 MiB is far above any real chunk.
pub const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// Up to this much of an event's buffer is kept for the next event; a
/// larger one (a rare long event) is let go.
const KEPT_BUFFER: usize = 64 * 1024;

/// The parser met an event larger than [`MAX_EVENT_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an upstream stream event exceeded {MAX_EVENT_BYTES} bytes")]
pub struct EventTooLarge;

impl SseParser {
    /// A parser with no pending input.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk, pushing each completed event onto `out`. After an
    /// error the parser has dropped what it held; the stream is broken.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), EventTooLarge> {
        self.feed_with(chunk, &mut |event, data| {
            out.push(SseEvent { event: event.map(str::to_string), data: String::from_utf8_lossy(data).into_owned() })
        })
    }

    /// Feeds one chunk, calling `on_event` with each completed event's name
    /// and data, borrowed: nothing is allocated per event (the buffers are
    /// reused), for the decoders on the hot path. The data is UTF-8 unless
    /// the upstream sent otherwise: an event read in place is handed over
    /// unchecked (the reader checks what it reads, often less than the
    /// whole: [`crate::api::completion::RawChunk::check_like`]); one put
    /// together from lines was made valid line by line.
    pub fn feed_with(
        &mut self,
        chunk: &[u8],
        on_event: &mut dyn FnMut(Option<&str>, &[u8]),
    ) -> Result<(), EventTooLarge> {
        let mut start = 0;
        while start < chunk.len() {
            if self.after_cr {
                self.after_cr = false;
                if chunk.get(start) == Some(&b'\n') {
                    start += 1;
                    continue;
                }
            }
            // Line ends found with SIMD (`memchr2`), not byte by byte.
            let Some(end) = memchr::memchr2(b'\n', b'\r', &chunk[start..]).map(|off| start + off) else {
                break;
            };
            // The usual event, one `data:` line and its blank line whole in
            // this chunk: handed over in place, without a copy to the
            // event's buffer.
            if let Some(next) = self.whole_event(chunk, start, end, on_event) {
                start = next;
                continue;
            }
            if self.line.is_empty() {
                // The whole line is in this chunk: read in place.
                self.take_line(&chunk[start..end], on_event);
            } else {
                self.line.extend_from_slice(&chunk[start..end]);
                let line = std::mem::take(&mut self.line);
                self.take_line(&line, on_event);
                self.line = line;
                self.line.clear();
            }
            self.bounded()?;
            self.after_cr = chunk.get(end) == Some(&b'\r');
            start = end + 1;
        }
        self.line.extend_from_slice(chunk.get(start..).unwrap_or_default());
        self.bounded()
    }

    /// When the line `chunk[start..end]` is a `data:` line that begins an
    /// event and a blank line follows it in `chunk`, hands the event over
    /// and returns where the input goes on; otherwise `None` and nothing
    /// is taken.
    fn whole_event(
        &mut self,
        chunk: &[u8],
        start: usize,
        end: usize,
        on_event: &mut dyn FnMut(Option<&str>, &[u8]),
    ) -> Option<usize> {
        if !self.line.is_empty() || self.has_data || self.event.is_some() || end - start > MAX_EVENT_BYTES {
            return None;
        }
        let value = chunk.get(start..end)?.strip_prefix(b"data:")?;
        let after = chunk.get(end..)?;
        let next = if after.starts_with(b"\n\n") {
            end + 2
        } else if after.starts_with(b"\r\n\r\n") {
            end + 4
        } else {
            return None;
        };
        on_event(None, value.strip_prefix(b" ").unwrap_or(value));
        Some(next)
    }

    /// Checks the event being read against [`MAX_EVENT_BYTES`], letting go
    /// of its memory when it is over.
    fn bounded(&mut self) -> Result<(), EventTooLarge> {
        if self.line.len() + self.data.len() <= MAX_EVENT_BYTES {
            return Ok(());
        }
        *self = Self::default();
        Err(EventTooLarge)
    }

    /// The stream ended: a final event without its blank line still counts.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        self.finish_with(&mut |event, data| {
            out.push(SseEvent { event: event.map(str::to_string), data: String::from_utf8_lossy(data).into_owned() })
        });
    }

    /// [`Self::finish`], calling `on_event` as [`Self::feed_with`] does.
    pub fn finish_with(&mut self, on_event: &mut dyn FnMut(Option<&str>, &[u8])) {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.take_line(&line, on_event);
        }
        self.dispatch(on_event);
    }

    fn take_line(&mut self, line: &[u8], on_event: &mut dyn FnMut(Option<&str>, &[u8])) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line[0] == b':' {
            return; // a comment / keep-alive
        }
        // Valid UTF-8 (every real stream) is checked by `from_utf8`'s fast
        // path; only a broken line pays for the lossy copy.
        let text = match std::str::from_utf8(line) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            Err(_) => String::from_utf8_lossy(line),
        };
        let (field, value) = match memchr::memchr(b':', text.as_bytes()) {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_string()),
            _ => {} // id, retry and unknown fields carry nothing we use
        }
    }

    /// The blank line: the event is complete. Its buffer is cleared, not
    /// given away, so the next event reuses it.
    fn dispatch(&mut self, on_event: &mut dyn FnMut(Option<&str>, &[u8])) {
        if self.has_data {
            on_event(self.event.as_deref(), self.data.as_bytes());
            self.data.clear();
            if self.data.capacity() > KEPT_BUFFER {
                self.data = String::new();
            }
            self.has_data = false;
        }
        self.event = None;
    }
}

/// Encodes one `data:` event carrying JSON.
pub fn encode_json(value: &serde_json::Value) -> Bytes {
    let mut buf = Vec::with_capacity(256);
    write_json(value, &mut buf);
    Bytes::from(buf)
}

/// Appends one `data:` event carrying JSON to `out` (events batched into
/// one frame).
pub fn write_json(value: &serde_json::Value, out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: ");
    // Serializing a Value into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
    out.extend_from_slice(b"\n\n");
}

/// The final event's bytes, for appending to a batch.
pub const DONE: &[u8] = b"data: [DONE]\n\n";

/// The final `data: [DONE]` event.
pub fn done() -> Bytes {
    Bytes::from_static(DONE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in input.chunks(piece) {
            p.feed(c, &mut out).unwrap();
        }
        p.finish(&mut out);
        out
    }

    #[test]
    fn parses_every_line_ending_and_split() {
        let input =
            b": OPENROUTER PROCESSING\n\ndata: {\"a\":1}\r\n\r\nevent: ping\ndata: x\ndata:y\n\ndata:z\n\ndata: \xff\n\ndata: [DONE]\r\r";
        for piece in 1..input.len() {
            let ev = parse_in_pieces(input, piece);
            assert_eq!(
                ev,
                vec![
                    SseEvent { event: None, data: "{\"a\":1}".into() },
                    SseEvent { event: Some("ping".into()), data: "x\ny".into() },
                    SseEvent { event: None, data: "z".into() },
                    SseEvent { event: None, data: "\u{fffd}".into() },
                    SseEvent { event: None, data: "[DONE]".into() },
                ],
                "piece size {piece}"
            );
        }
    }

    #[test]
    fn an_event_is_capped_as_a_whole_not_only_its_lines() {
        let line = format!("data: {}\n", "x".repeat(64 * 1024));
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let mut fed = 0;
        let failed = loop {
            if let Err(e) = p.feed(line.as_bytes(), &mut out) {
                break e;
            }
            fed += line.len();
            assert!(fed <= MAX_EVENT_BYTES + line.len(), "no cap after {fed} bytes");
        };
        assert_eq!(failed, EventTooLarge);
        assert!(out.is_empty());
        assert_eq!((p.data.capacity(), p.line.capacity()), (0, 0), "the buffers are let go");
        // One long line is capped the same way.
        let mut p = SseParser::new();
        let big = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert_eq!(p.feed(&big, &mut out), Err(EventTooLarge));
        // Events under the cap, however many, pass.
        let mut p = SseParser::new();
        let event = format!("data: {}\n\n", "y".repeat(1024 * 1024));
        for _ in 0..16 {
            p.feed(event.as_bytes(), &mut out).unwrap();
        }
        assert_eq!(out.len(), 16);
    }

    #[test]
    fn final_event_without_blank_line() {
        assert_eq!(parse_in_pieces(b"data: last", 4), vec![SseEvent { event: None, data: "last".into() }]);
    }

    #[test]
    fn encodes() {
        assert_eq!(&encode_json(&serde_json::json!({"a": 1}))[..], b"data: {\"a\":1}\n\n");
        assert_eq!(&done()[..], b"data: [DONE]\n\n");
    }
}
