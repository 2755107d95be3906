//! W3C Trace Context (`traceparent`, `tracestate`): what a client's trace
//! says, and what the upstream calls carry on.

/// A request's place in a trace: its own span, and the client's when the
/// client sent a `traceparent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: [u8; 16],
    /// The request's span.
    pub span_id: [u8; 8],
    /// The client's span, when it sent one.
    pub parent_span_id: Option<[u8; 8]>,
    /// The client's `tracestate`, passed on as is.
    pub tracestate: Option<String>,
    /// Its spans are exported; an unsampled one only passes the client's
    /// trace on upstream.
    pub sampled: bool,
}

/// A `traceparent` as the client sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// Flag bit 0: the client's side recorded it.
    pub sampled: bool,
}

fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let b = s.as_bytes();
    if b.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in b.chunks_exact(2).enumerate() {
        let d = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        out[i] = d(pair[0])? << 4 | d(pair[1])?;
    }
    Some(out)
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// Reads `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`); `None` for
/// anything the spec says to ignore: another length for version 00, the
/// invalid version `ff`, upper-case hex, all-zero ids. A later version
/// is read by its first four fields, as the spec asks.
pub fn parse_traceparent(value: &str) -> Option<Parent> {
    let mut parts = value.trim().split('-');
    let version = parts.next()?;
    let (trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?);
    let version: [u8; 1] = unhex(version)?;
    if version[0] == 0xff || (version[0] == 0 && parts.next().is_some()) {
        return None;
    }
    let trace_id: [u8; 16] = unhex(trace)?;
    let span_id: [u8; 8] = unhex(span)?;
    let flags: [u8; 1] = unhex(flags)?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some(Parent { trace_id, span_id, sampled: flags[0] & 1 == 1 })
}

/// A `tracestate` worth passing on: printable, at most 512 bytes (the
/// spec's list of 32 entries fits; longer may be dropped).
pub fn usable_tracestate(value: &str) -> Option<String> {
    let v = value.trim();
    (!v.is_empty() && v.len() <= 512 && v.bytes().all(|b| (0x20..0x7f).contains(&b))).then(|| v.to_string())
}

/// The `traceparent` of a call whose parent span is `span_id`.
pub fn traceparent(trace_id: &[u8; 16], span_id: &[u8; 8], sampled: bool) -> String {
    format!("00-{}-{}-0{}", hex(trace_id), hex(span_id), u8::from(sampled))
}

/// A random non-zero span id.
pub fn new_span_id() -> [u8; 8] {
    fastrand::u64(1..).to_le_bytes()
}

/// A random non-zero trace id.
pub fn new_trace_id() -> [u8; 16] {
    (u128::from(fastrand::u64(1..)) << 64 | u128::from(fastrand::u64(..))).to_le_bytes()
}

impl TraceContext {
    /// A new span of the client's trace, or the root of a new trace.
    pub fn child_of(parent: Option<Parent>, tracestate: Option<String>, sampled: bool) -> Self {
        let span_id = new_span_id();
        match parent {
            Some(p) => Self { trace_id: p.trace_id, span_id, parent_span_id: Some(p.span_id), tracestate, sampled },
            None => Self { trace_id: new_trace_id(), span_id, parent_span_id: None, tracestate: None, sampled },
        }
    }

    /// The `traceparent` an upstream call whose span is `attempt_span`
    /// carries: that span when sampled; unsampled, the client's own
    /// (the gateway takes no part in the trace, it passes it on).
    pub fn upstream(&self, attempt_span: &[u8; 8]) -> String {
        match (self.sampled, self.parent_span_id) {
            (false, Some(client)) => traceparent(&self.trace_id, &client, false),
            _ => traceparent(&self.trace_id, attempt_span, self.sampled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_is_read_as_the_spec_says() {
        let p = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(hex(&p.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex(&p.span_id), "00f067aa0ba902b7");
        assert!(p.sampled);
        assert!(!parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap().sampled);
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "garbage",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad}");
        }
        // A later version: its first four fields.
        assert!(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what").is_some());
        assert_eq!(
            traceparent(&p.trace_id, &p.span_id, true),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
    }

    #[test]
    fn upstream_calls_carry_the_attempt_span_or_the_clients_own() {
        let p = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
        let unsampled = TraceContext::child_of(p, None, false);
        assert_eq!(unsampled.upstream(&[1; 8]), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
        let sampled = TraceContext::child_of(p, Some("k=v".into()), true);
        assert_eq!(sampled.upstream(&[1; 8]), "00-4bf92f3577b34da6a3ce929d0e0e4736-0101010101010101-01");
        let root = TraceContext::child_of(None, Some("dropped".into()), true);
        assert!(root.parent_span_id.is_none() && root.tracestate.is_none());
    }
}
