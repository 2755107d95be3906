use super::*;
use crate::api::completion::shape::tests::{integer, json, string};
use proptest::prelude::*;

/// The changing values of one OpenAI stream (`include_usage` and
/// `obfuscation` on, as OpenAI sends them by default).
struct Values {
    id: String,
    created: String,
    /// One `obfuscation` string a chunk, used in turn.
    pads: Vec<String>,
    contents: Vec<String>,
    /// `prompt_tokens`, `completion_tokens`, `total_tokens`, `cached_tokens`.
    usage: [String; 4],
}

impl Values {
    fn plain(n: u64, contents: &[&str]) -> Self {
        Self {
            id: json(&format!("chatcmpl-{n}")),
            created: (1_760_000_000 + n).to_string(),
            pads: (0..4).map(|i| json(&format!("pad{n}x{i}"))).collect(),
            contents: contents.iter().map(|c| json(c)).collect(),
            usage: [(10 * n).to_string(), n.to_string(), (11 * n).to_string(), (n % 3).to_string()],
        }
    }

    /// The stream's events' data: the role's chunk, one a content, the
    /// finish, the usage chunk.
    fn events(&self) -> Vec<String> {
        let pad = |i: usize| self.pads[i % self.pads.len()].as_str();
        let head = format!(
            r#"{{"id":{},"object":"chat.completion.chunk","created":{},"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":["#,
            self.id, self.created
        );
        let choice = |delta: &str, finish: &str| {
            format!(r#"{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish}}}],"usage":null"#)
        };
        let mut out = vec![choice(r#"{"role":"assistant","content":"","refusal":null}"#, "null")];
        out.extend(self.contents.iter().map(|c| choice(&format!(r#"{{"content":{c}}}"#), "null")));
        out.push(choice("{}", r#""stop""#));
        let [p, c, t, k] = &self.usage;
        out.push(format!(
            r#"],"usage":{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{t},"prompt_tokens_details":{{"cached_tokens":{k},"audio_tokens":0}},"completion_tokens_details":{{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}}"#
        ));
        out.iter().enumerate().map(|(i, rest)| format!(r#"{head}{rest},"obfuscation":{}}}"#, pad(i))).collect()
    }
}

/// How many shapes the provider has.
fn count(shared: &Arc<ChunkShapes>) -> usize {
    shared.last.load().as_ref().map_or(0, |s| s.len())
}

/// A provider's first stream makes a shape of each kind of chunk; every
/// chunk of its next streams — another id, `created`, `obfuscation` in
/// every chunk, content and counts — fits one and gives what the whole
/// check gives, its tail a slice of the upstream's read.
#[test]
fn a_providers_next_streams_fit_the_shapes_its_first_made() {
    let shared = Arc::new(ChunkShapes::default());
    let mut first = ChunkShape::of(&shared);
    for data in Values::plain(1, &["Hello", " world"]).events() {
        assert!(first.fill(data.as_bytes()).is_none() || data.contains("world"), "{data}");
        assert_eq!(RawChunk::check_like(data.as_bytes(), &mut first), RawChunk::check(&data), "{data}");
    }
    assert_eq!(count(&shared), 4, "the role's, content, the finish, usage");
    let texts = ["Hi", "", "line\none \"quoted\" \u{e9}\u{1F600}", "\\", "Привет", " and more"];
    for n in 2..5 {
        let values = Values {
            pads: vec![json(""), json("x"), json("a-longer-pad"), json("\u{e9}")],
            ..Values::plain(n * 1000, &texts)
        };
        let mut next = ChunkShape::of(&shared);
        for data in values.events() {
            let read = Bytes::from(format!("data: {data}\n\n"));
            let in_read = &read[6..6 + data.len()];
            let filled = next.fill_in(in_read, Some(&read)).unwrap_or_else(|| panic!("does not fit: {data}"));
            let whole = RawChunk::check(&data).unwrap();
            assert_eq!(filled, whole, "{data}");
            assert_eq!(filled.content(), whole.content());
            assert_eq!(filled.usage_json(), whole.usage_json());
            let (base, at) = (read.as_ptr() as usize, filled.tail().as_ptr() as usize);
            assert!(at >= base && at < base + read.len(), "the tail was copied: {data}");
        }
    }
    assert_eq!(count(&shared), 4, "no shape more");
    // The counts are the chunk's own.
    let last = Values::plain(7, &["x"]).events().pop().unwrap();
    let tokens = ChunkShape::of(&shared).fill(last.as_bytes()).and_then(|c| c.tokens());
    assert_eq!(tokens, Some(Tokens { input: 70, output: 7 }));
}

/// A chunk that differs from every shape outside the slots — another
/// finish reason, a field more, a value of another kind in a slot — takes
/// the whole check, and gives what it gives.
#[test]
fn a_chunk_unlike_every_shape_takes_the_whole_check() {
    let shared = Arc::new(ChunkShapes::default());
    let events = Values::plain(1, &["Hi"]).events();
    let mut shape = ChunkShape::of(&shared);
    for data in &events {
        RawChunk::check_like(data.as_bytes(), &mut shape);
    }
    let content = &events[1];
    let unlike = [
        content.replace(r#""finish_reason":null"#, r#""finish_reason":"length""#),
        content.replace(r#""logprobs":null"#, r#""logprobs":null,"x":1"#),
        content.replace(r#""content":"Hi""#, r#""content":null"#),
        content.replace(r#""content":"Hi""#, r#""content":"a	b""#),
        content.replace(r#""content":"Hi""#, r#""content":"a\ud800""#),
        content.replace(r#""created":1760000001"#, r#""created":1.5"#),
        content.replace(r#""created":1760000001"#, r#""created":-1"#),
        content.replace(r#""obfuscation":"pad1x1""#, r#""obfuscation":7"#),
        content.replace(r#""content":"Hi""#, r#""tool_calls":[]"#),
        content.replace("}],", r#"},{"index":1,"delta":{"content":"b"},"finish_reason":null}],"#),
        content.replace(r#""usage":null"#, r#""usage":null,"error":{"message":"boom"}"#),
        format!("{content} x"),
    ];
    for data in unlike {
        let mut next = ChunkShape::of(&shared);
        assert!(next.fill(data.as_bytes()).is_none(), "fits: {data}");
        assert_eq!(RawChunk::check_like(data.as_bytes(), &mut next), RawChunk::check(&data), "{data}");
    }
}

/// Chunks that never fit (a value no slot holds, new in every chunk) make
/// a new shape on one miss in `RETRY` once a stream has made `STRIKES`
/// that nothing fitted; such shapes are the first a full provider drops,
/// so the shapes of its usual chunks stay.
#[test]
fn chunks_that_never_fit_make_few_shapes_and_keep_none_from_the_usual() {
    let shared = Arc::new(ChunkShapes::default());
    for n in 1..3 {
        let mut stream = ChunkShape::of(&shared);
        for data in Values::plain(n, &["Hi", "there"]).events() {
            RawChunk::check_like(data.as_bytes(), &mut stream);
        }
    }
    assert_eq!(count(&shared), 4);
    for s in 0..3 {
        let mut odd = ChunkShape::of(&shared);
        let (mut last, mut made) = (None, 0);
        for i in 0..64 {
            let data = Values::plain(1, &["Hi"]).events()[1]
                .replace(r#""usage":null"#, &format!(r#""usage":null,"x_time":0.{s}{i}1"#));
            assert_eq!(RawChunk::check_like(data.as_bytes(), &mut odd), RawChunk::check(&data));
            let now = odd.made.as_ref().map(Arc::as_ptr);
            if now != last {
                (last, made) = (now, made + 1);
            }
        }
        assert!(count(&shared) <= MAX_SHAPES);
        assert!(made <= (STRIKES as usize + 1) + 64 / RETRY as usize, "{made} shapes made");
    }
    let mut usual = ChunkShape::of(&shared);
    for data in Values::plain(9, &["again"]).events() {
        assert!(usual.fill(data.as_bytes()).is_some(), "a usual chunk lost its shape: {data}");
    }
}

/// A chunk past `MAX_MOLDED` is checked whole and makes no shape (a shape
/// keeps a copy of its chunk).
#[test]
fn a_very_long_chunk_makes_no_shape() {
    let shared = Arc::new(ChunkShapes::default());
    let long = Values::plain(1, &[&"x".repeat(MAX_MOLDED)]).events().swap_remove(1);
    let mut stream = ChunkShape::of(&shared);
    assert_eq!(RawChunk::check_like(long.as_bytes(), &mut stream), RawChunk::check(&long));
    assert_eq!(count(&shared), 0, "a long chunk made a shape");
    // (Another kind: a chunk like the long one but for its content fits
    // the stream's last chunk.)
    let short = Values::plain(1, &["x"]).events().swap_remove(0);
    RawChunk::check_like(short.as_bytes(), &mut stream);
    assert_eq!(count(&shared), 1);
}

proptest! {
    /// Whatever the values in a stream's slots, and whatever one byte of
    /// one of its chunks is changed to, every chunk checked against the
    /// provider's shapes is what the whole check gives.
    #[test]
    fn the_shapes_chunk_is_the_whole_check_s(
        streams in proptest::collection::vec(
            (string(), integer(), proptest::collection::vec(string(), 1..4), proptest::collection::vec(string(), 1..4),
                (integer(), integer(), integer(), integer())),
            1..4),
        damage in proptest::option::of((any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<u8>())),
    ) {
        let shared = Arc::new(ChunkShapes::default());
        let mut stream = ChunkShape::of(&shared);
        for data in Values::plain(1, &["Hi"]).events() {
            RawChunk::check_like(data.as_bytes(), &mut stream);
        }
        for (s, (id, created, pads, contents, (p, c, t, k))) in streams.into_iter().enumerate() {
            let values = Values { id, created, pads, contents, usage: [p, c, t, k] };
            let mut events: Vec<Vec<u8>> = values.events().into_iter().map(String::into_bytes).collect();
            if let Some((which, at, byte)) = damage.filter(|_| s == 0) {
                let which = which.index(events.len());
                let event = &mut events[which];
                let at = at.index(event.len());
                event[at] = byte;
            }
            let mut stream = ChunkShape::of(&shared);
            for data in events {
                let whole = std::str::from_utf8(&data).ok().and_then(RawChunk::check);
                let read = Bytes::from([b"data: ", &data[..], b"\n\n"].concat());
                let like = RawChunk::check_like_in(&read[6..6 + data.len()], Some(&read), &mut stream);
                prop_assert_eq!(&like, &whole, "{}", String::from_utf8_lossy(&data));
                if let (Some(like), Some(whole)) = (like, whole) {
                    prop_assert_eq!(like.content(), whole.content());
                    prop_assert_eq!(like.usage_json(), whole.usage_json());
                }
            }
        }
    }
}
