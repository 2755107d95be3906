//! Schema compilation, the cache that keeps compiled schemas, and reading
//! what a request expects from its `response_format` or tool definition.
//!
//! Where it sits: when a request arrives the handler turns its
//! `response_format` (and each tool's `parameters`) into an [`Expected`]
//! once, through the shared [`SchemaCache`]; every attempt of the cascade
//! then validates against the same compiled schema. Compiling a schema costs
//! far more than validating an answer, and clients send the same few schemas
//! over and over, so compilation happens once per distinct schema.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::normalize::bounds::{self, work, Bounds, SchemaProblem};
use crate::normalize::draft::{self, Draft};
use crate::normalize::Expected;

/// How many validator messages an error keeps: enough to see what is wrong,
/// few enough for a log line.
const MAX_MESSAGES: usize = 3;

/// Default number of compiled schemas kept.
const DEFAULT_CAPACITY: usize = 256;

/// Backtracking steps one `pattern` may take on one string before the match
/// counts as failed (the crate's default is a million; a hostile pattern
/// such as `(a+)+$` on a long answer would spend them all on every string).
const REGEX_BACKTRACK_LIMIT: usize = 20_000;

/// Bytes a compiled `pattern` may take (the `regex` crate's default is
/// 10 MiB per pattern, and a schema may hold thousands).
const REGEX_SIZE_LIMIT: usize = 256 * 1024;

/// A client's JSON Schema, measured ([`bounds`]), compiled for the draft it
/// names, and kept as sent for field renaming and mock answers.
pub struct CompiledSchema {
    schema: Value,
    draft: Draft,
    bounds: Bounds,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("draft", &self.draft)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Measures and compiles a schema, for the draft its `$schema` names
    /// (2020-12 when none). `format` is an annotation in every draft: an
    /// answer is not rejected for a date the validator would not parse, as
    /// 2020-12 has it and as clients expect. Remote `$ref`s are refused
    /// before compiling (the crate is built without resolvers, so the request
    /// path never touches the network).
    pub fn compile(schema: &Value) -> Result<Self, ResponseFormatError> {
        let draft = Draft::of(schema);
        let prepared = draft::prepare(schema);
        let bounds = bounds::check(&prepared, draft).map_err(ResponseFormatError::Unusable)?;
        let patterns = jsonschema::PatternOptions::fancy_regex()
            .backtrack_limit(REGEX_BACKTRACK_LIMIT)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT);
        let validator = jsonschema::options()
            .with_draft(draft.to_jsonschema())
            .should_validate_formats(false)
            .with_pattern_options(patterns)
            .build(&prepared)
            .map_err(|e| ResponseFormatError::InvalidSchema(e.to_string()))?;
        Ok(CompiledSchema { schema: schema.clone(), draft, bounds, validator })
    }

    /// The schema as the client sent it.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The draft it is validated with.
    pub fn draft(&self) -> Draft {
        self.draft
    }

    /// Validates; on failure the first few messages, each prefixed with the
    /// JSON pointer of the offending value (`/items/0/price: ...`). An answer
    /// whose validation would cost more than the work budget (a deep answer
    /// against a recursive schema) fails without being validated.
    pub(crate) fn check(&self, value: &Value) -> Result<(), Vec<String>> {
        if let Some(model) = &self.bounds.work {
            if work::needs_estimate(self.bounds.expanded, self.bounds.recursive, value)
                && !work::within_budget(model, value)
            {
                return Err(vec![format!(
                    "/: the answer is too large or too deep to validate against this schema \
                     (more than {} schema checks)",
                    work::MAX_VALIDATION_WORK
                )]);
            }
        }
        if self.validator.is_valid(value) {
            return Ok(());
        }
        let messages = self
            .validator
            .iter_errors(value)
            .take(MAX_MESSAGES)
            .map(|e| {
                let path = e.instance_path.to_string();
                let path = if path.is_empty() { "/".to_owned() } else { path };
                format!("{path}: {e}")
            })
            .collect();
        Err(messages)
    }
}

/// Compiled schemas keyed by their canonical JSON text, bounded, shared
/// across requests (`Arc<SchemaCache>` in the server state).
///
/// A `std::sync::Mutex` rather than a `tokio` one or a `RwLock`: the
/// critical section is a hash lookup and a counter bump, never held across
/// an `.await` or a compilation (compiling happens outside the lock; two
/// requests racing on a new schema both compile and one insert wins, which
/// is harmless). Every lookup also writes the recency counter, so a
/// read-write lock would buy nothing.
#[derive(Debug)]
pub struct SchemaCache {
    capacity: usize,
    inner: Mutex<CacheInner>,
}

#[derive(Debug, Default)]
struct CacheInner {
    entries: HashMap<u64, Entry>,
    /// Monotonic use counter; the entry with the smallest `last_used` is
    /// evicted when the cache is full.
    tick: u64,
}

#[derive(Debug)]
struct Entry {
    /// The canonical text, compared on a hit so a hash collision can never
    /// hand back the wrong schema.
    text: String,
    compiled: Arc<CompiledSchema>,
    last_used: u64,
}

impl Default for SchemaCache {
    fn default() -> Self {
        SchemaCache::new(DEFAULT_CAPACITY)
    }
}

impl SchemaCache {
    /// A cache that keeps at most `capacity` compiled schemas (at least one).
    pub fn new(capacity: usize) -> Self {
        SchemaCache { capacity: capacity.max(1), inner: Mutex::new(CacheInner::default()) }
    }

    /// Number of compiled schemas held.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The compiled form of `schema`, compiling it on first sight.
    pub fn get_or_compile(&self, schema: &Value) -> Result<Arc<CompiledSchema>, ResponseFormatError> {
        // `serde_json::Map` is sorted, so the text is canonical: the same
        // schema with keys in another order hits the same entry.
        let text = schema.to_string();
        let mut hasher = DefaultHasher::new();
        text.hash(&mut hasher);
        let key = hasher.finish();
        {
            let mut inner = self.lock();
            inner.tick += 1;
            let tick = inner.tick;
            if let Some(entry) = inner.entries.get_mut(&key).filter(|e| e.text == text) {
                entry.last_used = tick;
                return Ok(Arc::clone(&entry.compiled));
            }
        }
        let compiled = Arc::new(CompiledSchema::compile(schema)?);
        let mut inner = self.lock();
        if inner.entries.len() >= self.capacity && !inner.entries.contains_key(&key) {
            let oldest = inner.entries.iter().min_by_key(|(_, e)| e.last_used).map(|(k, _)| *k);
            if let Some(oldest) = oldest {
                inner.entries.remove(&oldest);
            }
        }
        inner.tick += 1;
        let last_used = inner.tick;
        let entry = Entry { text, compiled: Arc::clone(&compiled), last_used };
        inner.entries.insert(key, entry);
        Ok(compiled)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheInner> {
        // Nothing panics while holding the lock, and the map stays consistent
        // at every step, so a poisoned lock is still safe to use.
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A `response_format` or tool definition the gateway cannot honour; the
/// client's mistake (HTTP 400), found before any model is called.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResponseFormatError {
    /// Not an object with a string `type`.
    #[error("response_format must be an object with a string \"type\"")]
    Malformed,
    /// A `type` other than `text`, `json_object`, `json_schema`.
    #[error("unsupported response_format type {0:?}")]
    UnknownType(String),
    /// The schema does not compile.
    #[error("invalid JSON Schema: {0}")]
    InvalidSchema(String),
    /// The schema compiles but no component may walk it: too large, too
    /// deep, a `$ref` cycle or one that leads outside the document.
    #[error("unusable JSON Schema: {0}")]
    Unusable(SchemaProblem),
}

impl ResponseFormatError {
    /// Bounded label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            ResponseFormatError::Malformed => "malformed",
            ResponseFormatError::UnknownType(_) => "unknown_type",
            ResponseFormatError::InvalidSchema(_) => "invalid_schema",
            ResponseFormatError::Unusable(_) => "unusable_schema",
        }
    }
}

/// Reads OpenAI's `response_format`: `{"type":"text"}` (or nothing to do) is
/// `None`; `{"type":"json_object"}` is [`Expected::Object`];
/// `{"type":"json_schema","json_schema":{"name","schema","strict"}}` is a
/// compiled schema. A `json_schema` without a `schema` asks only for JSON
/// and is treated as `json_object`.
pub fn expected_from_response_format(
    response_format: &Value,
    cache: &SchemaCache,
) -> Result<Option<Expected>, ResponseFormatError> {
    let kind = response_format.get("type").and_then(Value::as_str).ok_or(ResponseFormatError::Malformed)?;
    match kind {
        "text" => Ok(None),
        "json_object" => Ok(Some(Expected::Object)),
        "json_schema" => {
            let spec = response_format.get("json_schema");
            let strict = spec.and_then(|s| s.get("strict")).and_then(Value::as_bool);
            match spec.and_then(|s| s.get("schema")) {
                None | Some(Value::Null) => Ok(Some(Expected::Object)),
                Some(schema) => Ok(Some(Expected::Schema {
                    compiled: cache.get_or_compile(schema)?,
                    strict: strict.unwrap_or(false),
                })),
            }
        }
        other => Err(ResponseFormatError::UnknownType(other.to_owned())),
    }
}

/// What a tool call's `arguments` must be: the tool's `parameters` schema,
/// or any object when it has none. Accepts an entry of the request's `tools`
/// (`{"type":"function","function":{...}}`) or the function object itself.
pub fn expected_from_tool(tool: &Value, cache: &SchemaCache) -> Result<Expected, ResponseFormatError> {
    let function = tool.get("function").unwrap_or(tool);
    let strict = function.get("strict").and_then(Value::as_bool).unwrap_or(false);
    match function.get("parameters") {
        None | Some(Value::Null) => Ok(Expected::Object),
        Some(schema) => Ok(Expected::Schema { compiled: cache.get_or_compile(schema)?, strict }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cache_reuses_and_evicts() {
        let cache = SchemaCache::new(2);
        let a = cache.get_or_compile(&json!({"type": "object"})).unwrap();
        let a2 = cache.get_or_compile(&json!({"type": "object"})).unwrap();
        assert!(Arc::ptr_eq(&a, &a2));
        cache.get_or_compile(&json!({"type": "array"})).unwrap();
        cache.get_or_compile(&json!({"type": "object"})).unwrap();
        cache.get_or_compile(&json!({"type": "string"})).unwrap();
        assert_eq!(cache.len(), 2);
        // "array" was the least recently used and went.
        let a3 = cache.get_or_compile(&json!({"type": "object"})).unwrap();
        assert!(Arc::ptr_eq(&a, &a3));
    }

    #[test]
    fn response_formats() {
        let cache = SchemaCache::default();
        assert!(expected_from_response_format(&json!({"type": "text"}), &cache).unwrap().is_none());
        let obj = expected_from_response_format(&json!({"type": "json_object"}), &cache).unwrap();
        assert!(matches!(obj, Some(Expected::Object)));
        let rf = json!({"type": "json_schema", "json_schema": {"name": "x", "strict": true,
            "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}});
        let Some(Expected::Schema { strict, compiled }) = expected_from_response_format(&rf, &cache).unwrap() else {
            panic!("expected a schema");
        };
        assert!(strict);
        assert!(compiled.check(&json!({"a": 1})).is_ok());
        let messages = compiled.check(&json!({"a": "x"})).unwrap_err();
        assert!(messages[0].starts_with("/a: "), "{messages:?}");
        let err = expected_from_response_format(&json!({"type": "yaml"}), &cache).unwrap_err();
        assert_eq!(err.metric_label(), "unknown_type");
        let bad = json!({"type": "json_schema", "json_schema": {"schema": {"type": 12}}});
        let err = expected_from_response_format(&bad, &cache).unwrap_err();
        assert_eq!(err.metric_label(), "invalid_schema");
        assert_eq!(expected_from_response_format(&json!("json"), &cache).unwrap_err(), ResponseFormatError::Malformed);
    }

    #[test]
    fn tools() {
        let cache = SchemaCache::default();
        let tool = json!({"type": "function", "function": {"name": "f",
            "parameters": {"type": "object", "required": ["city"]}}});
        assert!(matches!(expected_from_tool(&tool, &cache).unwrap(), Expected::Schema { .. }));
        let bare = json!({"name": "g"});
        assert!(matches!(expected_from_tool(&bare, &cache).unwrap(), Expected::Object));
    }
}
