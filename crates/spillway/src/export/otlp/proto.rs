//! The protobuf encoding of OTLP's `ExportTraceServiceRequest`, by hand.
//!
//! Written here rather than generated: the exporter writes one message
//! type and never reads one, and the few field numbers below (from
//! `opentelemetry/proto/{collector/trace,trace,common,resource}/v1/*.proto`)
//! cost less than a code generator, `prost` and their build step. Fields
//! are written in field-number order, empty values left out, as protobuf
//! encoders do; nested messages are encoded into their own buffer and
//! written with their length.

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// A message being written.
#[derive(Debug, Default)]
pub struct Message(pub Vec<u8>);

impl Message {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }

    /// A `bytes` field (left out when empty).
    pub fn bytes(&mut self, field: u32, b: &[u8]) {
        if !b.is_empty() {
            self.key(field, LEN);
            self.varint(b.len() as u64);
            self.0.extend_from_slice(b);
        }
    }

    /// A `string` field (left out when empty).
    pub fn string(&mut self, field: u32, s: &str) {
        self.bytes(field, s.as_bytes());
    }

    /// A varint field: `int64` (two's complement), `bool`, an enum.
    pub fn int(&mut self, field: u32, v: i64) {
        if v != 0 {
            self.key(field, VARINT);
            self.varint(v as u64);
        }
    }

    /// A `fixed64` field.
    pub fn fixed64(&mut self, field: u32, v: u64) {
        if v != 0 {
            self.key(field, FIXED64);
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// A `fixed32` field.
    pub fn fixed32(&mut self, field: u32, v: u32) {
        if v != 0 {
            self.key(field, FIXED32);
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// A `double` field.
    pub fn double(&mut self, field: u32, v: f64) {
        if v != 0.0 {
            self.key(field, FIXED64);
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// A nested message, written by `write` (present even when empty: a
    /// `oneof` member or a repeated element must not vanish).
    pub fn message(&mut self, field: u32, write: impl FnOnce(&mut Message)) {
        let mut inner = Message::default();
        write(&mut inner);
        self.key(field, LEN);
        self.varint(inner.0.len() as u64);
        self.0.extend_from_slice(&inner.0);
    }
}

/// An attribute's value (`AnyValue`).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Bool(bool),
    Int(i64),
    Double(f64),
    StrArray(Vec<String>),
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Self::Str(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Self::Str(s)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Self::Double(v)
    }
}

/// `KeyValue { key = 1; AnyValue value = 2 }`.
pub type Attribute = (&'static str, Value);

fn any_value(m: &mut Message, v: &Value) {
    // AnyValue's oneof: string 1, bool 2, int 3, double 4, array 5. A
    // oneof member is written even when it holds the default value.
    match v {
        Value::Str(s) => {
            m.key(1, LEN);
            m.varint(s.len() as u64);
            m.0.extend_from_slice(s.as_bytes());
        }
        Value::Bool(b) => {
            m.key(2, VARINT);
            m.varint(u64::from(*b));
        }
        Value::Int(i) => {
            m.key(3, VARINT);
            m.varint(*i as u64);
        }
        Value::Double(d) => {
            m.key(4, FIXED64);
            m.0.extend_from_slice(&d.to_le_bytes());
        }
        Value::StrArray(items) => m.message(5, |arr| {
            for s in items {
                arr.message(1, |av| any_value(av, &Value::Str(s.clone())));
            }
        }),
    }
}

/// Repeated `KeyValue`s as field `field`.
pub fn attributes(m: &mut Message, field: u32, attrs: &[Attribute]) {
    for (k, v) in attrs {
        m.message(field, |kv| {
            kv.string(1, k);
            kv.message(2, |av| any_value(av, v));
        });
    }
}

/// `Span.SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Internal = 1,
    Server = 2,
    Client = 3,
}

/// `Status.StatusCode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Unset = 0,
    Ok = 1,
    Error = 2,
}

/// `Span.Event`.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    pub time_unix_ns: u64,
    pub name: &'static str,
    pub attributes: Vec<Attribute>,
}

/// `Span.Link` (to a span of the same trace).
#[derive(Debug, Clone, PartialEq)]
pub struct SpanLink {
    pub span_id: [u8; 8],
    pub attributes: Vec<Attribute>,
}

/// One span, as the exporter builds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub trace_state: Option<String>,
    pub parent_span_id: Option<[u8; 8]>,
    pub name: String,
    pub kind: Kind,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub attributes: Vec<Attribute>,
    pub events: Vec<SpanEvent>,
    pub links: Vec<SpanLink>,
    pub status: Code,
    pub status_message: Option<String>,
}

fn span(m: &mut Message, s: &Span) {
    m.bytes(1, &s.trace_id);
    m.bytes(2, &s.span_id);
    m.string(3, s.trace_state.as_deref().unwrap_or(""));
    m.bytes(4, s.parent_span_id.as_ref().map_or(&[][..], |p| &p[..]));
    m.string(5, &s.name);
    m.int(6, s.kind as i64);
    m.fixed64(7, s.start_unix_ns);
    m.fixed64(8, s.end_unix_ns);
    attributes(m, 9, &s.attributes);
    for e in &s.events {
        m.message(11, |em| {
            em.fixed64(1, e.time_unix_ns);
            em.string(2, e.name);
            attributes(em, 3, &e.attributes);
        });
    }
    for l in &s.links {
        m.message(13, |lm| {
            lm.bytes(1, &s.trace_id);
            lm.bytes(2, &l.span_id);
            attributes(lm, 4, &l.attributes);
        });
    }
    if s.status != Code::Unset {
        m.message(15, |st| {
            st.string(2, s.status_message.as_deref().unwrap_or(""));
            st.int(3, s.status as i64);
        });
    }
    // Flags: bit 8 (0x100) says whether the parent is remote is known; bit
    // 9 (0x200) that it is. Sampled (bit 0): every exported span is.
    let remote = if s.parent_span_id.is_some() && s.kind == Kind::Server { 0x300 } else { 0x100 };
    m.fixed32(16, 0x01 | remote);
}

/// `ExportTraceServiceRequest` of `spans`, under one resource (the
/// gateway, `resource` its attributes) and one scope.
pub fn export_request(resource: &[Attribute], scope: (&str, &str), spans: &[Span]) -> Vec<u8> {
    let mut req = Message::default();
    req.message(1, |rs| {
        rs.message(1, |r| attributes(r, 1, resource));
        rs.message(2, |ss| {
            ss.message(1, |sc| {
                sc.string(1, scope.0);
                sc.string(2, scope.1);
            });
            for s in spans {
                ss.message(2, |sm| span(sm, s));
            }
        });
    });
    req.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_fields_are_written_as_protobuf_does() {
        let mut m = Message::default();
        m.int(1, 150);
        assert_eq!(m.0, [0x08, 0x96, 0x01]);
        let mut m = Message::default();
        m.string(2, "testing");
        assert_eq!(m.0, [0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']);
        let mut m = Message::default();
        m.int(3, -1);
        assert_eq!(m.0.len(), 11, "a negative int64 takes ten bytes");
        let mut m = Message::default();
        m.fixed64(7, 1);
        assert_eq!(m.0, [0x39, 1, 0, 0, 0, 0, 0, 0, 0]);
        let mut m = Message::default();
        m.int(1, 0);
        m.string(2, "");
        assert!(m.0.is_empty(), "defaults are left out");
    }
}
