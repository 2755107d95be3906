//! The JSON Schema vocabulary the schema walks share: which keywords hold
//! subschemas and how each applies, and the limits on a client's schema.
//! Both the bounds check (`bounds/`) and the draft preparation (`draft.rs`)
//! walk schemas by these tables; keeping them here, below both, is what
//! keeps the two from importing each other.

/// Subschemas (schema objects and booleans) one schema may hold. Real
/// schemas hold tens to a few thousand; OpenAI's own limit is 5000 properties.
pub(crate) const MAX_SCHEMA_NODES: usize = 20_000;

/// Nesting of subschemas inside subschemas.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;

/// How a subschema applies, relative to the value its parent checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Applies {
    /// To the same value.
    InPlace,
    /// To a property's value (`properties`; `name` is the property).
    Property,
    /// To members whose name is only known from the value
    /// (`patternProperties`, `additionalProperties`, `unevaluatedProperties`,
    /// `propertyNames`).
    AnyMember,
    /// To the array item at a position (`prefixItems`, tuple `items`).
    Position,
    /// To every item (`items`, `additionalItems`, `contains`, ...).
    AnyItem,
    /// Not applied by itself (`$defs`, `definitions`, `contentSchema`).
    Never,
}

/// Keywords whose value is one schema, or an array of schemas.
pub(crate) const SCHEMA_KEYWORDS: &[(&str, Applies)] = &[
    ("allOf", Applies::InPlace),
    ("anyOf", Applies::InPlace),
    ("oneOf", Applies::InPlace),
    ("not", Applies::InPlace),
    ("if", Applies::InPlace),
    ("then", Applies::InPlace),
    ("else", Applies::InPlace),
    ("additionalProperties", Applies::AnyMember),
    ("unevaluatedProperties", Applies::AnyMember),
    ("propertyNames", Applies::AnyMember),
    ("prefixItems", Applies::Position),
    ("items", Applies::AnyItem),
    ("additionalItems", Applies::AnyItem),
    ("unevaluatedItems", Applies::AnyItem),
    ("contains", Applies::AnyItem),
    ("contentSchema", Applies::Never),
];

/// Keywords whose value is a map of schemas.
pub(crate) const MAP_KEYWORDS: &[(&str, Applies)] = &[
    ("properties", Applies::Property),
    ("patternProperties", Applies::AnyMember),
    ("dependentSchemas", Applies::InPlace),
    // Draft-04..07: a schema value applies in place; an array value is a
    // list of required names and is skipped as not a schema.
    ("dependencies", Applies::InPlace),
    ("$defs", Applies::Never),
    ("definitions", Applies::Never),
];
