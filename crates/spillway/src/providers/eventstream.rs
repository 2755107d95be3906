//! AWS's binary event stream (`application/vnd.amazon.eventstream`), the
//! body of Bedrock's `ConverseStream`: frames cut from the byte stream,
//! each checked by its two CRC-32s, its headers read, and handed to a
//! [`MessageDecoder`] (round3.md §3.4).
//!
//! A frame: total length (u32 BE, both CRCs included), headers length (u32
//! BE), the prelude's CRC-32 (of those 8 bytes), the headers, the payload,
//! and the message CRC-32 (of everything before it). A header: name length
//! (u8), name, value type (u8), value. A CRC that does not match, a length
//! out of bounds or a header that runs past its block means the framing is
//! lost: nothing after it can be trusted, so the stream fails as a broken
//! body — unlike an unreadable payload, which is skipped and counted.
//!
//! Runs where the SSE parser runs for the text formats: between the body
//! stream and the format's decoder, driven by `framing::decoded_stream`.

use super::framing::{push, Framing, Items};
use super::translate::{StreamItem, TranslateError};
use crate::outcome::{AttemptError, Failure};

/// The content type of an event stream.
pub const CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

/// Headers of one frame may take this many bytes (botocore's cap).
pub const MAX_HEADERS: usize = 128 * 1024;
/// A frame's payload may take this many bytes (botocore's cap).
pub const MAX_PAYLOAD: usize = 24 * 1024 * 1024;
/// Prelude (12 bytes) plus the message CRC (4).
const OVERHEAD: usize = 16;

/// CRC-32 as zlib computes it (IEEE 802.3, reflected, polynomial
/// 0xEDB88320), by a table of 256 entries built at compile time. Written
/// here because nothing in the dependency tree offers one (no `crc32fast`
/// or `crc` in Cargo.lock) and eight lines do not justify a new crate.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// The CRC-32 (zlib's) of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |c, &b| CRC_TABLE[usize::from((c as u8) ^ b)] ^ (c >> 8))
}

/// A header's value, by its type byte (0–9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderValue {
    Bool(bool),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    Bytes(Vec<u8>),
    String(String),
    /// Milliseconds since the epoch.
    Timestamp(i64),
    Uuid([u8; 16]),
}

/// One frame, checked and read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub headers: Vec<(String, HeaderValue)>,
    pub payload: Vec<u8>,
}

impl Message {
    /// A string header's value (`:message-type`, `:event-type`, …).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).and_then(|(_, v)| match v {
            HeaderValue::String(s) => Some(s.as_str()),
            _ => None,
        })
    }
}

/// Why the framing is lost.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("event-stream frame length {0} is out of bounds")]
    Length(usize),
    #[error("event-stream prelude CRC mismatch")]
    PreludeCrc,
    #[error("event-stream message CRC mismatch")]
    MessageCrc,
    #[error("event-stream headers are malformed: {0}")]
    Headers(&'static str),
}

/// Cuts frames from bytes fed in pieces of any size.
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// Where the next frame starts in `buf`.
    at: usize,
}

impl FrameReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends bytes (what was read is dropped first, so the buffer holds
    /// at most one partial frame plus the new bytes).
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.at > 0 {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes of a frame that has not arrived whole.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.at
    }

    /// The next whole frame, `None` until one has arrived.
    pub fn next_message(&mut self) -> Result<Option<Message>, FrameError> {
        let rest = &self.buf[self.at..];
        let Some(prelude) = rest.get(..12) else { return Ok(None) };
        let total = be32(&prelude[0..4]);
        let headers_len = be32(&prelude[4..8]);
        // Checked before the lengths are believed: a wrong length must not
        // make the reader wait for (or buffer) megabytes that never come.
        if crc32(&prelude[..8]) != be32(&prelude[8..12]) as u32 {
            return Err(FrameError::PreludeCrc);
        }
        if !(OVERHEAD..=OVERHEAD + MAX_HEADERS + MAX_PAYLOAD).contains(&total) {
            return Err(FrameError::Length(total));
        }
        if headers_len > MAX_HEADERS || headers_len > total - OVERHEAD || total - OVERHEAD - headers_len > MAX_PAYLOAD {
            return Err(FrameError::Length(headers_len));
        }
        let Some(frame) = rest.get(..total) else { return Ok(None) };
        let (body, crc) = frame.split_at(total - 4);
        if crc32(body) != be32(crc) as u32 {
            return Err(FrameError::MessageCrc);
        }
        let headers = read_headers(&body[12..12 + headers_len])?;
        let payload = body[12 + headers_len..].to_vec();
        self.at += total;
        Ok(Some(Message { headers, payload }))
    }
}

fn be32(b: &[u8]) -> usize {
    b.iter().take(4).fold(0usize, |n, &x| (n << 8) | usize::from(x))
}

fn read_headers(mut b: &[u8]) -> Result<Vec<(String, HeaderValue)>, FrameError> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Result<&'a [u8], FrameError> {
        if b.len() < n {
            return Err(FrameError::Headers("a header runs past the headers block"));
        }
        let (head, rest) = b.split_at(n);
        *b = rest;
        Ok(head)
    }
    fn int<const N: usize>(b: &mut &[u8]) -> Result<[u8; N], FrameError> {
        let mut out = [0u8; N];
        out.copy_from_slice(take(b, N)?);
        Ok(out)
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let name_len = usize::from(take(&mut b, 1)?[0]);
        let name = std::str::from_utf8(take(&mut b, name_len)?)
            .map_err(|_| FrameError::Headers("a header name is not UTF-8"))?
            .to_owned();
        let value = match take(&mut b, 1)?[0] {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Byte(i8::from_be_bytes(int::<1>(&mut b)?)),
            3 => HeaderValue::Short(i16::from_be_bytes(int::<2>(&mut b)?)),
            4 => HeaderValue::Int(i32::from_be_bytes(int::<4>(&mut b)?)),
            5 => HeaderValue::Long(i64::from_be_bytes(int::<8>(&mut b)?)),
            kind @ (6 | 7) => {
                let len = usize::from(u16::from_be_bytes(int::<2>(&mut b)?));
                let data = take(&mut b, len)?;
                if kind == 6 {
                    HeaderValue::Bytes(data.to_vec())
                } else {
                    let s =
                        std::str::from_utf8(data).map_err(|_| FrameError::Headers("a string header is not UTF-8"))?;
                    HeaderValue::String(s.to_owned())
                }
            }
            8 => HeaderValue::Timestamp(i64::from_be_bytes(int::<8>(&mut b)?)),
            9 => HeaderValue::Uuid(int::<16>(&mut b)?),
            _ => return Err(FrameError::Headers("an unknown header value type")),
        };
        out.push((name, value));
    }
    Ok(out)
}

/// A decoder of event-stream messages to OpenAI items.
pub(crate) trait MessageDecoder: Send + 'static {
    fn decode(&mut self, message: &Message) -> Result<Vec<StreamItem>, TranslateError>;
}

/// The [`Framing`] of an event stream: frames to the decoder; a lost
/// framing or a body that ends inside a frame fails the attempt.
pub(crate) struct EventStream<D> {
    frames: FrameReader,
    decoder: D,
    /// The framing was lost: nothing more is read.
    lost: bool,
}

impl<D: MessageDecoder> EventStream<D> {
    pub(crate) fn new(decoder: D) -> Self {
        Self { frames: FrameReader::new(), decoder, lost: false }
    }
}

impl<D: MessageDecoder> Framing for EventStream<D> {
    const CONTENT_TYPE: Option<&'static str> = Some(CONTENT_TYPE);

    fn feed(&mut self, bytes: &[u8], out: &mut Items) {
        if self.lost {
            return;
        }
        self.frames.feed(bytes);
        loop {
            match self.frames.next_message() {
                Ok(Some(message)) => push(out, self.decoder.decode(&message)),
                Ok(None) => break,
                Err(e) => {
                    self.lost = true;
                    out.push_back(Err(AttemptError::new(Failure::BrokenBody, e.to_string())));
                    break;
                }
            }
        }
    }

    fn finish(&mut self, out: &mut Items) {
        if !self.lost && self.frames.pending() > 0 {
            out.push_back(Err(AttemptError::new(Failure::BrokenBody, "the event stream ended inside a frame")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// aws-c-event-stream's `encoded/positive/empty_message`.
    const EMPTY: [u8; 16] = [0, 0, 0, 0x10, 0, 0, 0, 0, 0x05, 0xc2, 0x48, 0xeb, 0x7d, 0x98, 0xc8, 0xff];
    /// Its payload-only vector: `{'foo':'bar'}`.
    const PAYLOAD: [u8; 29] = [
        0, 0, 0, 0x1d, 0, 0, 0, 0, 0xfd, 0x52, 0x8c, 0x5a, b'{', b'\'', b'f', b'o', b'o', b'\'', b':', b'\'', b'b',
        b'a', b'r', b'\'', b'}', 0xc3, 0x65, 0x39, 0x36,
    ];

    /// A frame built by hand: the test's own encoder, byte by byte.
    fn frame(headers: &[(&str, u8, &[u8])], payload: &[u8]) -> Vec<u8> {
        let mut h = Vec::new();
        for (name, kind, value) in headers {
            h.push(name.len() as u8);
            h.extend_from_slice(name.as_bytes());
            h.push(*kind);
            h.extend_from_slice(value);
        }
        let total = (16 + h.len() + payload.len()) as u32;
        let mut out = total.to_be_bytes().to_vec();
        out.extend_from_slice(&(h.len() as u32).to_be_bytes());
        let prelude_crc = crc32(&out);
        out.extend_from_slice(&prelude_crc.to_be_bytes());
        out.extend_from_slice(&h);
        out.extend_from_slice(payload);
        let crc = crc32(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    fn string(s: &str) -> Vec<u8> {
        let mut v = (s.len() as u16).to_be_bytes().to_vec();
        v.extend_from_slice(s.as_bytes());
        v
    }

    #[test]
    fn crc32_is_zlib_s() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn published_vectors_decode() {
        let mut r = FrameReader::new();
        r.feed(&EMPTY);
        r.feed(&PAYLOAD);
        assert_eq!(r.next_message().unwrap(), Some(Message { headers: vec![], payload: vec![] }));
        assert_eq!(r.next_message().unwrap().unwrap().payload, b"{'foo':'bar'}");
        assert_eq!(r.next_message().unwrap(), None);
        assert_eq!(frame(&[], b""), EMPTY, "the test encoder agrees with the vector");
    }

    #[test]
    fn frames_split_anywhere_and_every_header_type_reads() {
        let ts = 1_700_000_000_000i64.to_be_bytes();
        let bytes = frame(
            &[
                (":message-type", 7, &string("event")),
                (":event-type", 7, &string("contentBlockDelta")),
                ("t", 0, &[]),
                ("f", 1, &[]),
                ("b", 2, &[0xff]),
                ("s", 3, &[0, 7]),
                ("i", 4, &[0, 0, 1, 0]),
                ("l", 5, &ts),
                ("raw", 6, &[0, 2, 1, 2]),
                ("at", 8, &ts),
                ("id", 9, &[7; 16]),
            ],
            b"{\"contentBlockIndex\":0}",
        );
        let twice = [bytes.clone(), bytes].concat();
        for cut in 0..twice.len() {
            let mut r = FrameReader::new();
            r.feed(&twice[..cut]);
            let mut got = Vec::new();
            while let Some(m) = r.next_message().unwrap() {
                got.push(m);
            }
            r.feed(&twice[cut..]);
            while let Some(m) = r.next_message().unwrap() {
                got.push(m);
            }
            assert_eq!(got.len(), 2, "cut at {cut}");
            assert_eq!(got[1].header(":event-type"), Some("contentBlockDelta"));
            assert_eq!(got[1].headers[4].1, HeaderValue::Byte(-1));
            assert_eq!(got[1].headers[6].1, HeaderValue::Int(256));
            assert_eq!(got[1].headers[8].1, HeaderValue::Bytes(vec![1, 2]));
            assert_eq!(got[1].headers[10].1, HeaderValue::Uuid([7; 16]));
        }
    }

    #[test]
    fn damaged_frames_lose_the_framing() {
        let good = frame(&[(":message-type", 7, &string("event"))], b"{}");
        let mut bad_prelude = good.clone();
        bad_prelude[3] ^= 1;
        let mut bad_message = good.clone();
        let last = bad_message.len() - 5;
        bad_message[last] ^= 1;
        let mut huge = vec![0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0];
        let crc = crc32(&huge);
        huge.extend_from_slice(&crc.to_be_bytes());
        let mut long_header = frame(&[], b"{}");
        // Claims a header block longer than the frame (CRCs fixed up).
        long_header[4..8].copy_from_slice(&100u32.to_be_bytes());
        let crc = crc32(&long_header[..8]);
        long_header[8..12].copy_from_slice(&crc.to_be_bytes());
        for (bytes, expected) in [
            (bad_prelude, FrameError::PreludeCrc),
            (bad_message, FrameError::MessageCrc),
            (huge, FrameError::Length(0x7fff_ffff)),
            (long_header, FrameError::Length(100)),
        ] {
            let mut r = FrameReader::new();
            r.feed(&bytes);
            assert_eq!(r.next_message(), Err(expected));
        }
        let mut r = FrameReader::new();
        r.feed(&frame(&[("x", 7, &[0, 9, b'a'])], b""));
        assert!(matches!(r.next_message(), Err(FrameError::Headers(_))));
    }
}
