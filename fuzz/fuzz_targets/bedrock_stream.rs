//! Fuzzes the AWS event-stream frame reader and the Bedrock ConverseStream
//! decoder behind it: whatever bytes an upstream sends, reading frames must
//! not panic (a bad CRC or length is an error, after which nothing more is
//! read), a frame fed in two pieces must read as when fed whole, every
//! chunk the decoder emits must have a `choices` array, and nothing may
//! follow the end of the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spillway::providers::bedrock::StreamDecoder;
use spillway::providers::eventstream::FrameReader;

fn frames(pieces: &[&[u8]]) -> (Vec<spillway::providers::eventstream::Message>, bool) {
    let mut reader = FrameReader::new();
    let mut out = Vec::new();
    for piece in pieces {
        reader.feed(piece);
        loop {
            match reader.next_message() {
                Ok(Some(m)) => out.push(m),
                Ok(None) => break,
                Err(_) => return (out, true),
            }
        }
    }
    (out, false)
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, body)) = data.split_first() else {
        return;
    };
    let at = usize::from(cut).min(body.len());
    let (split, split_lost) = frames(&[&body[..at], &body[at..]]);
    let (whole, whole_lost) = frames(&[body]);
    assert_eq!(split, whole, "the same frames however the body was cut");
    assert_eq!(split_lost, whole_lost);
    for include_usage in [false, true] {
        let mut decoder = StreamDecoder::new(include_usage);
        let mut ended = false;
        for m in &whole {
            let Ok(items) = decoder.on_message(m) else {
                continue;
            };
            for item in items {
                assert!(!ended, "an item after the end of the stream");
                match item.into_value() {
                    Some(c) => assert!(c["choices"].is_array(), "{c}"),
                    None => ended = true,
                }
            }
        }
    }
});
