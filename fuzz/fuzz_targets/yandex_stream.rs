//! Fuzzes the Yandex native stream decoder (cumulative NDJSON): whatever
//! lines an upstream sends, decoding must not panic, every chunk it emits
//! must be a JSON object with a `choices` array, and nothing may follow the
//! end of the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spillway::providers::yandex::StreamDecoder;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for include_usage in [false, true] {
        let mut decoder = StreamDecoder::new(include_usage);
        let mut ended = false;
        for line in text.split('\n') {
            let Ok(items) = decoder.on_line(line) else {
                break;
            };
            for item in items {
                assert!(!ended, "an item after the end of the stream");
                // `Chunk` and `Raw` both read as a chunk tree; `Done` as none.
                match item.into_value() {
                    Some(c) => assert!(c["choices"].is_array(), "{c}"),
                    None => ended = true,
                }
            }
        }
    }
});
