//! The body an attempt sends: [`Outgoing`] borrows the client's request and
//! copies it only when something rewrites it; [`WithModel`] serializes a
//! body with `model` replaced, without a copy.

use super::ChatRequest;
use serde_json::{Map, Value};

/// What a whole request read as a stream adds (`cascade::whole`), as the
/// first fields of its body.
pub(super) const STREAM_FIELDS: &str = r#""stream":true,"stream_options":{"include_usage":true},"#;

/// A request body with `model` replaced, serialized without copying it.
pub struct WithModel<'a> {
    /// The body.
    pub body: &'a Map<String, Value>,
    /// The model id to send.
    pub model: &'a str,
    /// With `"stream": true` and `stream_options.include_usage`, in place
    /// of the body's own.
    pub as_stream: bool,
}

impl serde::Serialize for WithModel<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let replaced = |k: &str| k == "model" || (self.as_stream && matches!(k, "stream" | "stream_options"));
        let others = self.body.iter().filter(|(k, _)| !replaced(k));
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        if self.as_stream {
            map.serialize_entry("stream", &true)?;
            map.serialize_entry("stream_options", &StreamOptions { include_usage: true })?;
        }
        for (k, v) in others {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[derive(serde::Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The body one attempt sends: the client's own, or a rewritten copy (a
/// prompt variant, a load profile, a JSON instruction). Reads as a map;
/// copied on the first write.
#[derive(Debug)]
pub struct Outgoing<'a> {
    client: &'a ChatRequest,
    rewritten: Option<Map<String, Value>>,
    /// Sent as a stream with a usage chunk ([`Outgoing::as_stream`]).
    as_stream: bool,
}

impl<'a> Outgoing<'a> {
    /// The client's body, unchanged.
    pub fn new(client: &'a ChatRequest) -> Self {
        Self { client, rewritten: None, as_stream: false }
    }

    /// Asks for the answer as a stream with a usage chunk (a whole answer
    /// read as a stream, `cascade::whole`): `"stream": true` and
    /// `stream_options.include_usage` go into the encoded and the owned
    /// body, without copying the client's (the map read through `Deref`
    /// does not show them).
    pub fn as_stream(&mut self) {
        self.as_stream = true;
    }

    /// The body to change (copied from the client's on first use).
    pub fn to_mut(&mut self) -> &mut Map<String, Value> {
        let client = self.client;
        self.rewritten.get_or_insert_with(|| client.body().clone())
    }

    /// The body, owned.
    pub fn into_owned(self) -> Map<String, Value> {
        let mut body = self.rewritten.unwrap_or_else(|| self.client.body().clone());
        if self.as_stream {
            body.insert("stream".into(), Value::Bool(true));
            body.insert("stream_options".into(), serde_json::json!({"include_usage": true}));
        }
        body
    }

    /// The body as bytes with `model` set to `model_id`.
    pub fn encode_with_model(&self, model_id: &str) -> Result<Vec<u8>, serde_json::Error> {
        match &self.rewritten {
            None => self.client.encode_with_model(model_id, self.as_stream),
            Some(body) => serde_json::to_vec(&WithModel { body, model: model_id, as_stream: self.as_stream }),
        }
    }
}

impl std::ops::Deref for Outgoing<'_> {
    type Target = Map<String, Value>;
    fn deref(&self) -> &Self::Target {
        self.rewritten.as_ref().unwrap_or_else(|| self.client.body())
    }
}
