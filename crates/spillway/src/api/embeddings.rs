//! The OpenAI embeddings wire format (`POST /v1/embeddings`, SPEC §5):
//! the client's request, validated ([`EmbeddingRequest::parse`]), the
//! vectors an upstream returned ([`Vectors`]), and the body the client
//! gets ([`encode`]), floats or base64.
//!
//! In a request's life: the embeddings route parses the body here, the
//! embedding runner (`cascade::embed`) hands the request to each model's
//! adapter in turn, and [`fit`] checks and shortens what came back before
//! the route encodes it. At the bottom of the layering with the chat wire
//! types: it imports nothing of the crate above `api/`.

use super::ApiError;
use base64::Engine as _;
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

/// Inputs per request, as OpenAI allows (`CreateEmbeddingRequest.input`).
pub const MAX_INPUTS: usize = 2048;

/// The largest `dimensions` accepted: far above any embedding model, low
/// enough that a client cannot make the gateway allocate for it.
pub const MAX_DIMENSIONS: u32 = 65_536;

/// What to embed: texts, or token ids (one array per input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedInput {
    /// Strings.
    Texts(Vec<String>),
    /// Token-id arrays. Passed on as given: a fallback model with another
    /// tokenizer reads other tokens, so clients should prefer text.
    Tokens(Vec<Vec<u32>>),
}

impl EmbedInput {
    /// How many vectors the answer must hold.
    pub fn len(&self) -> usize {
        match self {
            Self::Texts(t) => t.len(),
            Self::Tokens(t) => t.len(),
        }
    }

    /// Never true for a parsed request (`input` must not be empty).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The input as the upstream receives it: always an array.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Texts(t) => Value::from(t.clone()),
            Self::Tokens(t) => Value::from(t.iter().map(|ids| Value::from(ids.clone())).collect::<Vec<_>>()),
        }
    }

    /// Its size in tokens: counted for token ids, estimated for text.
    pub fn tokens(&self) -> u64 {
        match self {
            Self::Texts(t) => t.iter().map(|s| super::tokens::estimate_tokens(s.chars().count())).sum(),
            Self::Tokens(t) => t.iter().map(|ids| ids.len() as u64).sum(),
        }
    }
}

/// A validated embeddings request.
#[derive(Debug, Clone)]
pub struct EmbeddingRequest {
    /// An embedding cascade, a model ref or `auto`.
    pub model: String,
    pub input: EmbedInput,
    /// `encoding_format: "base64"` (openai-python's default).
    pub base64: bool,
    /// Shorten the vectors to this many values.
    pub dimensions: Option<u32>,
    /// Passed on to the upstream.
    pub user: Option<String>,
    /// The client key that sent it, when clients have keys.
    pub caller: Option<crate::secret::Secret>,
    /// The request's id, sent upstream as `x-request-id`.
    pub request_id: Option<crate::telemetry::RequestId>,
    /// The request's journal (request log, traces), when they are on.
    pub journal: Option<std::sync::Arc<crate::journal::Journal>>,
}

fn invalid(param: &str, message: impl Into<String>) -> ApiError {
    ApiError::InvalidField { param: param.to_string(), message: message.into() }
}

impl EmbeddingRequest {
    /// Parses and validates a request body.
    pub fn parse(bytes: &[u8]) -> Result<Self, ApiError> {
        let body: Value = serde_json::from_slice(bytes).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
        let Value::Object(body) = body else {
            return Err(ApiError::InvalidJson("the body must be a JSON object".into()));
        };
        let model = match body.get("model") {
            Some(Value::String(m)) if !m.is_empty() => m.clone(),
            Some(_) => return Err(invalid("model", "`model` must be a non-empty string")),
            None => return Err(invalid("model", "missing required field `model`")),
        };
        let input = parse_input(body.get("input"))?;
        let base64 = match body.get("encoding_format") {
            None | Some(Value::Null) => false,
            Some(Value::String(f)) if f == "float" => false,
            Some(Value::String(f)) if f == "base64" => true,
            Some(_) => return Err(invalid("encoding_format", "expected `float` or `base64`")),
        };
        let dimensions = match body.get("dimensions") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64().and_then(|d| u32::try_from(d).ok()) {
                Some(d) if (1..=MAX_DIMENSIONS).contains(&d) => Some(d),
                _ => return Err(invalid("dimensions", format!("must be an integer from 1 to {MAX_DIMENSIONS}"))),
            },
        };
        let user = match body.get("user") {
            None | Some(Value::Null) => None,
            Some(Value::String(u)) => Some(u.clone()),
            Some(_) => return Err(invalid("user", "`user` must be a string")),
        };
        Ok(Self { model, input, base64, dimensions, user, caller: None, request_id: None, journal: None })
    }

    /// The body sent to an OpenAI-compatible upstream for `model_id`.
    /// Always floats: the gateway encodes base64 itself, so an upstream
    /// that ignores `encoding_format` cannot hand the client the wrong form.
    pub fn upstream_body(&self, model_id: &str) -> Value {
        let mut body =
            serde_json::json!({"model": model_id, "input": self.input.to_value(), "encoding_format": "float"});
        if let Some(d) = self.dimensions {
            body["dimensions"] = d.into();
        }
        if let Some(u) = &self.user {
            body["user"] = u.as_str().into();
        }
        body
    }
}

/// `input`: a string, an array of strings, an array of token ids, or an
/// array of token-id arrays; never empty, at most [`MAX_INPUTS`] entries.
fn parse_input(v: Option<&Value>) -> Result<EmbedInput, ApiError> {
    let token = |v: &Value| v.as_u64().and_then(|n| u32::try_from(n).ok());
    let items = match v {
        None => return Err(invalid("input", "missing required field `input`")),
        Some(Value::String(s)) if s.is_empty() => return Err(invalid("input", "`input` must not be empty")),
        Some(Value::String(s)) => return Ok(EmbedInput::Texts(vec![s.clone()])),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(invalid("input", "`input` must be a string or an array")),
    };
    if items.is_empty() {
        return Err(invalid("input", "`input` must not be empty"));
    }
    if items.len() > MAX_INPUTS {
        return Err(invalid("input", format!("at most {MAX_INPUTS} inputs per request")));
    }
    match &items[0] {
        Value::String(_) => {
            let mut texts = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) if !s.is_empty() => texts.push(s.clone()),
                    _ => return Err(invalid(&format!("input[{i}]"), "each input must be a non-empty string")),
                }
            }
            Ok(EmbedInput::Texts(texts))
        }
        Value::Number(_) => {
            let ids: Option<Vec<u32>> = items.iter().map(token).collect();
            ids.map(|ids| EmbedInput::Tokens(vec![ids]))
                .ok_or_else(|| invalid("input", "token ids must be integers from 0 to 4294967295"))
        }
        Value::Array(_) => {
            let mut all = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let ids: Option<Vec<u32>> = item.as_array().and_then(|a| a.iter().map(token).collect());
                match ids {
                    Some(ids) if !ids.is_empty() => all.push(ids),
                    _ => {
                        return Err(invalid(
                            &format!("input[{i}]"),
                            "each input must be a non-empty array of token ids",
                        ))
                    }
                }
            }
            Ok(EmbedInput::Tokens(all))
        }
        _ => Err(invalid("input[0]", "inputs must be strings or token ids")),
    }
}

/// What an upstream returned: one vector per input, in input order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vectors {
    pub data: Vec<Vec<f32>>,
    /// `usage.prompt_tokens`, when the upstream gave it.
    pub prompt_tokens: Option<u64>,
    /// The id the upstream gave its answer, when it sent one.
    pub upstream_request_id: Option<String>,
}

/// Why an upstream's vectors cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unfit {
    /// Not one vector per input, empty vectors, or vectors of mixed lengths.
    #[error("{0}")]
    Malformed(String),
    /// Shorter than the client asked for, or not the model's configured length.
    #[error("{0}")]
    WrongDimension(String),
}

/// Checks `v` against the request — one vector per input, all of one
/// length, that length the model's known one (`expected`) — and shortens
/// each to `dimensions` when it is longer: the first values, scaled back
/// to unit length, which is what OpenAI documents for `dimensions` on
/// text-embedding-3 (meaningful for Matryoshka-trained models; other
/// upstreams are asked for `dimensions` first and may refuse it).
pub fn fit(v: &mut Vectors, inputs: usize, expected: Option<u32>, dimensions: Option<u32>) -> Result<(), Unfit> {
    if v.data.len() != inputs {
        return Err(Unfit::Malformed(format!("{} vectors for {inputs} inputs", v.data.len())));
    }
    let len = v.data.first().map_or(0, Vec::len);
    if len == 0 || v.data.iter().any(|x| x.len() != len) {
        return Err(Unfit::Malformed("empty vectors or vectors of different lengths".into()));
    }
    // A NaN or an infinity (a value past f32's range such as 1e39, or one
    // decoded from base64) would reach the client as `null`, or poison its
    // similarity search: the answer is broken, and the next model may serve.
    if let Some(i) = v.data.iter().position(|x| x.iter().any(|a| !a.is_finite())) {
        return Err(Unfit::Malformed(format!("vector {i} holds NaN or an infinite value")));
    }
    let want = dimensions.map(|d| d as usize);
    // An upstream that honoured `dimensions` returns that length already.
    if let Some(e) = expected.map(|e| e as usize).filter(|&e| e != len && Some(len) != want) {
        return Err(Unfit::WrongDimension(format!("vectors of {len} values, the model's dimension is {e}")));
    }
    let Some(want) = want else { return Ok(()) };
    if len < want {
        return Err(Unfit::WrongDimension(format!("vectors of {len} values, {want} asked for")));
    }
    if len > want {
        for x in &mut v.data {
            x.truncate(want);
            normalize(x);
        }
    }
    Ok(())
}

/// Scales `x` to unit length (a zero vector stays zero).
pub fn normalize(x: &mut [f32]) {
    let norm = x.iter().map(|a| f64::from(*a) * f64::from(*a)).sum::<f64>().sqrt();
    if norm > 0.0 {
        for a in x {
            *a = (f64::from(*a) / norm) as f32;
        }
    }
}

/// One vector as base64 of its little-endian `f32`s (what openai-python
/// decodes with `np.frombuffer(..., dtype="float32")`).
pub fn to_base64(x: &[f32]) -> String {
    let mut bytes = Vec::with_capacity(x.len() * 4);
    for a in x {
        bytes.extend_from_slice(&a.to_le_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The inverse of [`to_base64`] (for upstreams that answer in base64).
pub fn from_base64(s: &str) -> Option<Vec<f32>> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
    if bytes.len() % 4 != 0 {
        return None;
    }
    Some(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

#[derive(Serialize)]
struct Body<'a> {
    object: &'static str,
    data: Vec<Item<'a>>,
    model: &'a str,
    usage: Usage,
}

#[derive(Serialize)]
struct Item<'a> {
    object: &'static str,
    index: usize,
    embedding: Embedding<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Embedding<'a> {
    Floats(&'a [f32]),
    Base64(String),
}

#[derive(Serialize)]
struct Usage {
    prompt_tokens: u64,
    total_tokens: u64,
}

/// The client's `CreateEmbeddingResponse`; `model` is the model ref that answered.
pub fn encode(model: &str, vectors: &[Vec<f32>], base64: bool, prompt_tokens: u64) -> Bytes {
    let data = vectors
        .iter()
        .enumerate()
        .map(|(index, x)| Item {
            object: "embedding",
            index,
            embedding: if base64 { Embedding::Base64(to_base64(x)) } else { Embedding::Floats(x) },
        })
        .collect();
    let body = Body { object: "list", data, model, usage: Usage { prompt_tokens, total_tokens: prompt_tokens } };
    // Serializing plain structs of numbers and strings cannot fail.
    Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(body: &str) -> String {
        match EmbeddingRequest::parse(body.as_bytes()) {
            Err(ApiError::InvalidField { param, .. }) => param,
            Err(ApiError::InvalidJson(_)) => "<json>".into(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn accepts_every_input_form() {
        let p = |b: &str| EmbeddingRequest::parse(b.as_bytes()).unwrap().input;
        assert_eq!(p(r#"{"model":"e","input":"hi"}"#), EmbedInput::Texts(vec!["hi".into()]));
        assert_eq!(p(r#"{"model":"e","input":["a","b"]}"#), EmbedInput::Texts(vec!["a".into(), "b".into()]));
        assert_eq!(p(r#"{"model":"e","input":[1,2]}"#), EmbedInput::Tokens(vec![vec![1, 2]]));
        assert_eq!(p(r#"{"model":"e","input":[[1],[2,3]]}"#), EmbedInput::Tokens(vec![vec![1], vec![2, 3]]));
    }

    #[test]
    fn names_the_bad_field() {
        assert_eq!(param("[]"), "<json>");
        assert_eq!(param(r#"{"input":"x"}"#), "model");
        assert_eq!(param(r#"{"model":"e"}"#), "input");
        assert_eq!(param(r#"{"model":"e","input":""}"#), "input");
        assert_eq!(param(r#"{"model":"e","input":[]}"#), "input");
        assert_eq!(param(r#"{"model":"e","input":["a",""]}"#), "input[1]");
        assert_eq!(param(r#"{"model":"e","input":["a",1]}"#), "input[1]");
        assert_eq!(param(r#"{"model":"e","input":[1,-1]}"#), "input");
        assert_eq!(param(r#"{"model":"e","input":[[1],[]]}"#), "input[1]");
        assert_eq!(param(r#"{"model":"e","input":"x","encoding_format":"hex"}"#), "encoding_format");
        assert_eq!(param(r#"{"model":"e","input":"x","dimensions":0}"#), "dimensions");
        let many = format!(r#"{{"model":"e","input":[{}]}}"#, vec!["\"a\""; MAX_INPUTS + 1].join(","));
        assert_eq!(param(&many), "input");
    }

    #[test]
    fn base64_is_little_endian_f32() {
        let x = [1.0f32, -0.5, 0.25];
        let s = to_base64(&x);
        assert_eq!(s, "AACAPwAAAL8AAIA+");
        assert_eq!(from_base64(&s).unwrap(), x);
        assert_eq!(from_base64("AAA="), None);
    }

    #[test]
    fn non_finite_values_are_unfit() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut v = Vectors { data: vec![vec![0.5, 0.5], vec![0.1, bad]], ..Vectors::default() };
            let err = fit(&mut v, 2, None, None).unwrap_err();
            assert_eq!(err, Unfit::Malformed("vector 1 holds NaN or an infinite value".into()));
        }
        let mut ok = Vectors { data: vec![vec![f32::MAX, f32::MIN_POSITIVE]], ..Vectors::default() };
        assert_eq!(fit(&mut ok, 1, None, None), Ok(()));
    }

    #[test]
    fn fit_checks_and_shortens() {
        let mut v = Vectors { data: vec![vec![3.0, 4.0, 12.0]], prompt_tokens: None, upstream_request_id: None };
        fit(&mut v, 1, Some(3), Some(2)).unwrap();
        assert_eq!(v.data, vec![vec![0.6, 0.8]]);
        let mut v = Vectors { data: vec![vec![1.0, 0.0]], prompt_tokens: None, upstream_request_id: None };
        assert!(matches!(fit(&mut v, 1, Some(3), None), Err(Unfit::WrongDimension(_))));
        assert!(matches!(fit(&mut v, 1, None, Some(3)), Err(Unfit::WrongDimension(_))));
        assert!(matches!(fit(&mut v, 2, None, None), Err(Unfit::Malformed(_))));
        // An upstream that honoured `dimensions` is not held to the full length.
        let mut v = Vectors { data: vec![vec![1.0, 0.0]], prompt_tokens: None, upstream_request_id: None };
        fit(&mut v, 1, Some(3), Some(2)).unwrap();
    }

    #[test]
    fn encodes_both_forms() {
        let v: Value = serde_json::from_slice(&encode("p/m", &[vec![0.5, 1.0]], false, 3)).unwrap();
        assert_eq!(v["data"][0]["embedding"], serde_json::json!([0.5, 1.0]));
        assert_eq!((v["model"].as_str(), v["usage"]["total_tokens"].as_u64()), (Some("p/m"), Some(3)));
        let v: Value = serde_json::from_slice(&encode("p/m", &[vec![0.5, 1.0]], true, 3)).unwrap();
        assert_eq!(from_base64(v["data"][0]["embedding"].as_str().unwrap()).unwrap(), vec![0.5, 1.0]);
    }
}
