//! Fuzzes the gateway's SSE parser (`spillway::api::sse`), which reads
//! every streamed upstream answer: whatever bytes arrive, in whatever
//! pieces, it must not panic, must give the same events however the bytes
//! were cut, and must refuse an event over `MAX_EVENT_BYTES` rather than
//! buffer it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spillway::api::sse::{SseEvent, SseParser, MAX_EVENT_BYTES};

/// Feeds `body` in pieces of the sizes `cuts` gives (cycled).
fn parse(body: &[u8], cuts: &[u8]) -> Result<Vec<SseEvent>, ()> {
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    let mut rest = body;
    let mut sizes = cuts.iter().map(|&c| usize::from(c).max(1)).cycle();
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(rest.len()).min(rest.len());
        let (piece, tail) = rest.split_at(n);
        parser.feed(piece, &mut events).map_err(|_| ())?;
        rest = tail;
    }
    parser.finish(&mut events);
    Ok(events)
}

fuzz_target!(|data: &[u8]| {
    // The first byte says how many of the next bytes are piece sizes.
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let (cuts, body) = rest.split_at(usize::from(n % 16).min(rest.len()));
    let whole = parse(body, &[]);
    let pieces = parse(body, if cuts.is_empty() { &[1] } else { cuts });
    assert_eq!(whole, pieces, "the events depend on how the body was cut");
    if let Ok(events) = whole {
        for ev in events {
            assert!(ev.data.len() <= MAX_EVENT_BYTES);
        }
    }
});
