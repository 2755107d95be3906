//! Fuzzes the client request validator (`ChatRequest::parse`), the first
//! thing that reads a client's bytes: it must not panic; a body it accepts
//! has a `model` without control characters, and the body the gateway
//! sends upstream with `model` replaced (in place, on the client's bytes)
//! is JSON that the validator accepts again, with the new model — and,
//! asked as a stream (a whole answer read as one), with `stream: true` and
//! a usage chunk, and no other field lost.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use spillway::api::ChatRequest;

fuzz_target!(|data: &[u8]| {
    let Ok(req) = ChatRequest::parse(Bytes::copy_from_slice(data)) else {
        return;
    };
    assert!(!req.model.chars().any(char::is_control), "{:?}", req.model);
    for id in ["m", "provider/a \"quoted\" id", "ünï/cødé"] {
        let sent = req.encode_with_model(id, false).expect("re-encoding an accepted body");
        let again = ChatRequest::parse(Bytes::from(sent)).expect("the body sent upstream is valid");
        assert_eq!(again.model, id);
        assert_eq!(again.body().len(), req.body().len(), "fields were lost or added");

        let sent = req.encode_with_model(id, true).expect("re-encoding an accepted body as a stream");
        let again = ChatRequest::parse(Bytes::from(sent)).expect("the stream body sent upstream is valid");
        assert_eq!(again.model, id);
        assert!(again.stream && again.include_usage, "asked as a stream with usage");
        let added = ["stream", "stream_options"].iter().filter(|k| !req.body().contains_key(**k)).count();
        assert_eq!(again.body().len(), req.body().len() + added, "fields were lost or added");
    }
});
