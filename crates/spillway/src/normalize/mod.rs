//! JSON normalization: turns a model's answer into the clean JSON the client
//! asked for, or says why it cannot.
//!
//! Where it sits: the cascade runner calls [`normalize`] on every successful
//! attempt whose request carried `response_format` `json_object` /
//! `json_schema` (and on every tool call's `arguments` against the tool's
//! `parameters`). An `Ok` answer is what the client receives; an `Err` moves
//! the request on to the next model with reason `invalid_output` and is *not*
//! a breaker failure (the model is up, it just answered badly).
//!
//! The pipeline, cheapest first:
//!
//! 1. **Fast path**: the whole answer parses with `serde_json` and passes the
//!    check: it is returned unchanged ([`NormalizeResult::Valid`]).
//! 2. **Extraction** ([`extract`]): candidates from fenced code blocks, then
//!    the first balanced JSON value in the surrounding prose, and a JSON string
//!    that itself holds JSON.
//! 3. **Repair** ([`repair`]): a tolerant parser fixes trailing commas, single
//!    and smart quotes, unquoted keys, Python literals, comments and a
//!    truncated tail.
//! 4. **Renaming** ([`rename`]): keys are moved toward the schema's property
//!    names (case, snake/camel/kebab, one-edit near misses).
//! 5. **Validation** ([`validate`]) with the `jsonschema` crate, for the
//!    draft the schema's `$schema` names ([`draft`]; 2020-12 when none),
//!    against a validator compiled once per schema and kept in a
//!    [`SchemaCache`].
//!
//! Every schema is measured before anything walks it ([`bounds`]): a schema
//! too large or deep, with a `$ref` cycle or a reference outside itself, is
//! refused (the client gets a 400 naming the problem). [`sample`] makes a
//! value valid against a schema, for mock models.
//!
//! [`schema_instruction`] renders the prompt text that asks a model without a
//! native `response_format` for the same JSON.

mod bounds;
pub mod draft;
mod extract;
mod instruction;
mod keywords;
mod node;
mod rename;
mod repair;
mod sample;
mod validate;

#[cfg(test)]
mod client_schemas_tests;
#[cfg(test)]
mod corpus_tests;
#[cfg(test)]
mod proptests;

use std::fmt;

pub use bounds::SchemaProblem;
pub use draft::Draft;
pub use instruction::{
    is_russian, schema_instruction, schema_instruction_in, Lang, INSTRUCTION_STARTS, OBJECT_INSTRUCTION_START,
    OBJECT_INSTRUCTION_START_RU, SCHEMA_INSTRUCTION_START, SCHEMA_INSTRUCTION_START_RU,
};
pub use sample::sample;
pub use validate::{
    expected_from_response_format, expected_from_tool, CompiledSchema, ResponseFormatError, SchemaCache,
};

/// What the request asked for.
#[derive(Clone, Debug)]
pub enum Expected {
    /// `response_format: {"type": "json_object"}` or a tool without a
    /// `parameters` schema: any JSON object.
    Object,
    /// `response_format: {"type": "json_schema", ...}` or a tool's
    /// `parameters`: a value valid against the schema.
    Schema {
        /// The compiled schema, shared through the [`SchemaCache`].
        compiled: std::sync::Arc<CompiledSchema>,
        /// OpenAI's `strict` flag. Validation honours the schema exactly as
        /// written either way (we never add rules such as
        /// `additionalProperties: false` that the schema does not state);
        /// the flag changes the wording of the prompt instruction and is kept
        /// for logs.
        strict: bool,
    },
}

/// How an answer came through; the label of the normalization metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormalizeResult {
    /// The answer was valid exactly as the model returned it.
    Valid,
    /// The answer needed extraction, repair or renaming, and is now valid.
    Repaired,
    /// The answer could not be made valid (see [`NormalizeError`]). Never
    /// appears inside [`Normalized`]; it exists so a caller can label a
    /// metric from either arm of the `Result` through one enum.
    Invalid,
}

impl NormalizeResult {
    /// The bounded metric label: `valid`, `repaired` or `invalid`.
    pub fn metric_label(self) -> &'static str {
        match self {
            NormalizeResult::Valid => "valid",
            NormalizeResult::Repaired => "repaired",
            NormalizeResult::Invalid => "invalid",
        }
    }
}

/// One thing the normalizer changed, for logs and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fix {
    /// Taken out of a markdown code fence.
    FencedBlock,
    /// Taken out of prose before and/or after it.
    SurroundingText,
    /// The answer was a JSON string whose content is the JSON.
    UnwrappedString,
    /// A comma before a closing bracket, or a doubled comma, was dropped.
    TrailingComma,
    /// A comma between two members was missing.
    MissingComma,
    /// A string was quoted with `'`.
    SingleQuotes,
    /// A string was quoted with typographic quotes (`“”`, `‘’`, `«»`).
    SmartQuotes,
    /// A `"` inside a string was not escaped.
    UnescapedQuote,
    /// An object key had no quotes.
    UnquotedKey,
    /// `True`, `False`, `None` (or `undefined`, `NaN`, `Infinity`).
    PythonLiteral,
    /// A `//`, `/* */` or `#` comment was dropped.
    Comment,
    /// A number in a form JSON does not allow (`+1`, `.5`, `1.`, `007`).
    NumberFormat,
    /// An invalid escape sequence inside a string.
    BadEscape,
    /// A raw control character (a newline, a tab) inside a string.
    ControlCharacter,
    /// The answer was cut off; open strings, arrays and objects were closed
    /// and a dangling key dropped.
    ClosedTruncated,
    /// A key was renamed toward the schema's property name.
    RenamedField {
        /// The key as the model wrote it.
        from: String,
        /// The schema's property name.
        to: String,
    },
}

impl Fix {
    /// A short bounded label (for logs and debug headers).
    pub fn label(&self) -> &'static str {
        match self {
            Fix::FencedBlock => "fenced_block",
            Fix::SurroundingText => "surrounding_text",
            Fix::UnwrappedString => "unwrapped_string",
            Fix::TrailingComma => "trailing_comma",
            Fix::MissingComma => "missing_comma",
            Fix::SingleQuotes => "single_quotes",
            Fix::SmartQuotes => "smart_quotes",
            Fix::UnescapedQuote => "unescaped_quote",
            Fix::UnquotedKey => "unquoted_key",
            Fix::PythonLiteral => "python_literal",
            Fix::Comment => "comment",
            Fix::NumberFormat => "number_format",
            Fix::BadEscape => "bad_escape",
            Fix::ControlCharacter => "control_character",
            Fix::ClosedTruncated => "closed_truncated",
            Fix::RenamedField { .. } => "renamed_field",
        }
    }
}

impl fmt::Display for Fix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fix::RenamedField { from, to } => write!(f, "renamed_field({from} -> {to})"),
            other => f.write_str(other.label()),
        }
    }
}

/// A normalized answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normalized {
    /// The JSON the client receives. When the answer was valid as returned
    /// this is the model's text (trimmed) byte for byte, so formatting and key
    /// order are untouched; otherwise compact JSON with keys in the model's
    /// order.
    pub json: String,
    /// [`NormalizeResult::Valid`] or [`NormalizeResult::Repaired`].
    pub result: NormalizeResult,
    /// What was changed, in the order first seen; empty when `Valid`.
    pub fixes: Vec<Fix>,
}

/// Why an answer could not be normalized. Every variant means the same for
/// the cascade: next model, reason `invalid_output`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NormalizeError {
    /// Nothing in the answer looks like JSON.
    #[error("no JSON value found in the answer")]
    NoJson,
    /// JSON-like text was found but the repairer could not make sense of it.
    #[error("JSON-like text could not be repaired: {reason} (at byte {offset})")]
    Unrepairable {
        /// What the tolerant parser tripped over.
        reason: &'static str,
        /// Byte offset in the candidate text.
        offset: usize,
    },
    /// `json_object` was asked for and the JSON found is something else.
    #[error("expected a JSON object, found {found}")]
    NotAnObject {
        /// The JSON type found (`array`, `string`, ...).
        found: &'static str,
    },
    /// The JSON does not match the schema, even after renaming.
    #[error("the answer does not match the schema: {}", messages.join("; "))]
    SchemaViolation {
        /// The first few validator messages, each prefixed with the JSON
        /// pointer of the offending value.
        messages: Vec<String>,
    },
}

impl NormalizeError {
    /// The bounded label of the failure reason (for logs and the attempt
    /// record); the normalization metric itself uses
    /// [`NormalizeResult::Invalid`].
    pub fn metric_label(&self) -> &'static str {
        match self {
            NormalizeError::NoJson => "no_json",
            NormalizeError::Unrepairable { .. } => "unrepairable",
            NormalizeError::NotAnObject { .. } => "not_an_object",
            NormalizeError::SchemaViolation { .. } => "schema_violation",
        }
    }

    /// Always [`NormalizeResult::Invalid`]; for labelling the metric from an
    /// `Err` the same way as from an `Ok`.
    pub fn result(&self) -> NormalizeResult {
        NormalizeResult::Invalid
    }
}

/// Normalizes a model's answer (message content or tool-call `arguments`)
/// against what the request expected.
///
/// Never panics, whatever the input; work is bounded (a fixed number of
/// candidates, nesting depth capped) so a hostile answer cannot stall the
/// request path.
pub fn normalize(text: &str, expected: &Expected) -> Result<Normalized, NormalizeError> {
    extract::run(text, expected)
}

/// The JSON type name of a value, for error messages.
pub(crate) fn type_name(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}
