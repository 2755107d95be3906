//! The chunked transfer coding of a response body (RFC 9112, section 7.1),
//! decoded straight out of the connection's read buffer: every chunk's
//! data the buffer holds comes out as one piece, so a socket read that
//! brought a hundred stream events (a chunk each, as upstreams write them)
//! is one piece for the reader, not a hundred.

use bytes::{Buf, Bytes, BytesMut};

/// The longest chunk-size line (with extensions) or trailer line read.
const MAX_LINE: usize = 4096;
/// The most trailer bytes read after the last chunk.
const MAX_TRAILERS: usize = 16 * 1024;

/// Where the decoder is in the body.
#[derive(Debug, Default)]
pub(crate) struct Chunked {
    state: State,
    /// Trailer bytes read so far.
    trailers: usize,
}

#[derive(Debug, Default, PartialEq, Eq)]
enum State {
    /// At a chunk-size line.
    #[default]
    Size,
    /// Inside a chunk's data: this many bytes are left.
    Data(u64),
    /// After a chunk's data: its CRLF.
    DataEnd,
    /// After the last chunk: trailer lines up to an empty one.
    Trailers,
    Done,
}

impl Chunked {
    /// The body has ended (the last chunk and its trailers were read).
    pub(crate) fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Takes everything `buf` holds of the body out of it: the chunks'
    /// data, joined (empty when more must be read first). What follows the
    /// body stays in `buf`.
    ///
    /// Joined in place: each chunk's data after the first is moved down
    /// over the framing before it, within the buffer the socket read into
    /// (still in the cache), and the data is split off that buffer —
    /// nothing is allocated or copied elsewhere.
    pub(crate) fn decode(&mut self, buf: &mut BytesMut) -> Result<Bytes, &'static str> {
        // The data so far lies at `from..to`; `at` is where reading is.
        let (mut from, mut to, mut at) = (None, 0usize, 0usize);
        loop {
            match self.state {
                State::Size => {
                    let Some((size, taken)) = size_line(buf.get(at..).unwrap_or_default())? else { break };
                    at += taken;
                    self.state = if size == 0 { State::Trailers } else { State::Data(size) };
                }
                State::Data(left) => {
                    let ready = buf.len() - at;
                    if ready == 0 {
                        break;
                    }
                    let n = usize::try_from(left).unwrap_or(usize::MAX).min(ready);
                    if from.is_none() {
                        from = Some(at);
                        to = at;
                    }
                    if to != at {
                        buf.copy_within(at..at + n, to);
                    }
                    to += n;
                    at += n;
                    let left = left - n as u64;
                    self.state = if left == 0 { State::DataEnd } else { State::Data(left) };
                }
                State::DataEnd => {
                    match buf.get(at) {
                        None => break,
                        Some(b'\n') => at += 1,
                        Some(b'\r') => match buf.get(at + 1) {
                            None => break,
                            Some(b'\n') => at += 2,
                            Some(_) => return Err("a chunk's data is longer than its size"),
                        },
                        Some(_) => return Err("a chunk's data is longer than its size"),
                    }
                    self.state = State::Size;
                }
                State::Trailers => {
                    let Some((line, taken)) = line_at(buf.get(at..).unwrap_or_default())? else { break };
                    let last = line.is_empty();
                    at += taken;
                    self.trailers += taken;
                    if self.trailers > MAX_TRAILERS {
                        return Err("the trailers are too large");
                    }
                    if last {
                        self.state = State::Done;
                    }
                }
                State::Done => break,
            }
        }
        let mut taken = buf.split_to(at);
        Ok(match from {
            None => Bytes::new(),
            Some(from) => {
                taken.truncate(to);
                taken.advance(from);
                taken.freeze()
            }
        })
    }
}

/// A chunk-size line at the front of `buf`: the size and the bytes the line
/// takes with its end; `None` when it has not all arrived yet. The usual
/// line (hex digits, CRLF) is read in one pass; one with extensions or
/// blanks goes the general way.
fn size_line(buf: &[u8]) -> Result<Option<(u64, usize)>, &'static str> {
    let mut size = 0u64;
    let mut digits = 0;
    while let Some(&b) = buf.get(digits) {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => break,
        };
        if digits == 15 {
            return Err("an invalid chunk size");
        }
        size = size * 16 + u64::from(d);
        digits += 1;
    }
    match (buf.get(digits), buf.get(digits + 1)) {
        (Some(b'\r'), Some(b'\n')) if digits > 0 => return Ok(Some((size, digits + 2))),
        (Some(b'\n'), _) if digits > 0 => return Ok(Some((size, digits + 1))),
        (None, _) | (Some(b'\r'), None) => return Ok(None),
        _ => {}
    }
    let Some((line, taken)) = line_at(buf)? else { return Ok(None) };
    Ok(Some((chunk_size(line)?, taken)))
}

/// The next line at the front of `buf` (without its CRLF or LF) and how
/// many bytes it takes with its end; `None` when it has not all arrived
/// yet. Read in place: nothing is split off per chunk.
fn line_at(buf: &[u8]) -> Result<Option<(&[u8], usize)>, &'static str> {
    let Some(at) = memchr::memchr(b'\n', buf) else {
        return if buf.len() > MAX_LINE { Err("a chunk line is too long") } else { Ok(None) };
    };
    if at > MAX_LINE {
        return Err("a chunk line is too long");
    }
    let line = &buf[..at];
    Ok(Some((line.strip_suffix(b"\r").unwrap_or(line), at + 1)))
}

/// A chunk-size line's size: hex digits, then maybe extensions after `;`.
fn chunk_size(line: &[u8]) -> Result<u64, &'static str> {
    let digits = line.split(|&b| b == b';').next().unwrap_or_default().trim_ascii();
    if digits.is_empty() || digits.len() > 15 {
        return Err("an invalid chunk size");
    }
    digits.iter().try_fold(0u64, |n, &b| {
        let d = (b as char).to_digit(16).ok_or("an invalid chunk size")?;
        Ok(n * 16 + u64::from(d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Decodes `wire` fed in pieces cut at `cuts`; the data, what was left
    /// after the body, and whether it ended.
    fn decode(wire: &[u8], cuts: &[usize]) -> Result<(Vec<u8>, Vec<u8>, bool), &'static str> {
        let mut c = Chunked::default();
        let mut buf = BytesMut::new();
        let mut data = Vec::new();
        let mut from = 0;
        for &to in cuts.iter().chain(std::iter::once(&wire.len())) {
            let to = to.clamp(from, wire.len());
            buf.extend_from_slice(&wire[from..to]);
            from = to;
            data.extend_from_slice(&c.decode(&mut buf)?);
        }
        Ok((data, buf.to_vec(), c.is_done()))
    }

    fn encode(chunks: &[Vec<u8>], trailers: &str) -> Vec<u8> {
        let mut wire = Vec::new();
        for chunk in chunks.iter().filter(|c| !c.is_empty()) {
            wire.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            wire.extend_from_slice(chunk);
            wire.extend_from_slice(b"\r\n");
        }
        wire.extend_from_slice(format!("0\r\n{trailers}\r\n").as_bytes());
        wire
    }

    #[test]
    fn one_read_of_many_chunks_is_one_piece() {
        let events: Vec<Vec<u8>> = (0..100).map(|i| format!("data: {i}\n\n").into_bytes()).collect();
        let wire = encode(&events, "");
        let mut c = Chunked::default();
        let mut buf = BytesMut::from(&wire[..]);
        let piece = c.decode(&mut buf).unwrap();
        assert_eq!(piece, events.concat());
        assert!(c.is_done());
        assert!(buf.is_empty());
    }

    #[test]
    fn extensions_trailers_and_bare_line_feeds_are_read() {
        let wire = b"5;name=value\r\nhello\n3\nabc\r\n0\r\nx-trailer: 1\r\n\r\nNEXT";
        let (data, rest, done) = decode(wire, &[]).unwrap();
        assert_eq!(data, b"helloabc");
        assert_eq!(rest, b"NEXT", "what follows the body stays");
        assert!(done);
    }

    #[test]
    fn broken_framing_is_an_error() {
        for wire in [&b"zz\r\n"[..], b"5\r\nhello!!\r\n", b"\r\n", b"ffffffffffffffffff\r\n"] {
            assert!(decode(wire, &[]).is_err(), "{}", String::from_utf8_lossy(wire));
        }
        assert!(decode(&[b'1'; MAX_LINE + 2], &[]).is_err(), "an endless size line");
    }

    proptest! {
        /// Cut anywhere, a chunked body gives its data in order, whole, and
        /// ends at its end — multi-byte characters split across reads included.
        #[test]
        fn any_cuts_give_the_same_data(
            chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..12),
            text in "[a-zé😀\n]{0,30}",
            mut cuts in prop::collection::vec(0usize..600, 0..8),
        ) {
            let mut chunks = chunks;
            chunks.push(text.into_bytes());
            let wire = encode(&chunks, "t: 1\r\n");
            cuts.sort_unstable();
            let (data, rest, done) = decode(&wire, &cuts).unwrap();
            prop_assert_eq!(data, chunks.concat());
            prop_assert!(rest.is_empty());
            prop_assert!(done);
        }
    }
}
