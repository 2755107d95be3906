//! Fuzzes the Gemini stream decoder behind the gateway's SSE parser:
//! whatever bytes an upstream sends, decoding must not panic, every chunk
//! it emits must be a JSON object with a `choices` array, and nothing may
//! follow the end of the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spillway::api::sse::SseParser;
use spillway::providers::gemini::StreamDecoder;

fuzz_target!(|data: &[u8]| {
    // The first byte picks where the network cut the body in two.
    let Some((&cut, body)) = data.split_first() else {
        return;
    };
    let at = usize::from(cut).min(body.len());
    for include_usage in [false, true] {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        let _ = parser.feed(&body[..at], &mut events);
        let _ = parser.feed(&body[at..], &mut events);
        parser.finish(&mut events);
        let mut decoder = StreamDecoder::new(include_usage);
        let mut ended = false;
        for ev in &events {
            let Ok(items) = decoder.on_data(&ev.data) else {
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
