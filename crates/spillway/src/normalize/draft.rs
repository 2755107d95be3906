//! Which JSON Schema draft a client's schema is written in, and the schema
//! as it is handed to the validator.
//!
//! Where it sits: [`super::validate::CompiledSchema::compile`] asks
//! [`Draft::of`] once per distinct schema; the draft then decides how the
//! schema is validated ([`prepare`]), walked for bounds ([`super::bounds`]),
//! followed for renaming ([`super::rename`]) and sampled by mock models
//! ([`super::sample`]).
//!
//! Clients send every draft: openai-node's `zodResponseFormat` and the AI SDK
//! put `"$schema": "http://json-schema.org/draft-07/schema#"` on every schema
//! and tool, pydantic sends none (2020-12 applies), older tools send draft-04.
//! Forcing one draft on all of them is how the guarantee got lost: the
//! `jsonschema` crate, told "2020-12" for a schema whose `$schema` names
//! draft-07, looks for draft-07's vocabularies, finds none and checks
//! nothing. So the draft comes from `$schema`, and the validator gets the
//! schema without `$schema`, under that draft explicitly (nothing is fetched,
//! nothing depends on a meta-schema lookup).

use serde_json::{Map, Value};

/// A JSON Schema draft.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draft {
    /// `http://json-schema.org/draft-04/schema#`
    Draft4,
    /// `http://json-schema.org/draft-06/schema#`
    Draft6,
    /// `http://json-schema.org/draft-07/schema#` (Zod-based clients)
    Draft7,
    /// `https://json-schema.org/draft/2019-09/schema`
    Draft201909,
    /// `https://json-schema.org/draft/2020-12/schema`, and the default.
    Draft202012,
}

impl Draft {
    /// The draft a schema names in its root `$schema`; 2020-12 when it names
    /// none, or one we do not know (an OpenAPI dialect, a typo): the keywords
    /// clients use mean the same there, and refusing the request would help
    /// no one. `http`/`https`, a trailing `#` and surrounding spaces do not
    /// matter (all three are common in the wild).
    pub fn of(schema: &Value) -> Draft {
        let Some(uri) = schema.get("$schema").and_then(Value::as_str) else {
            return Draft::Draft202012;
        };
        let uri = uri.trim().trim_end_matches('#').trim_end_matches('/');
        let uri = uri.strip_prefix("https://").or_else(|| uri.strip_prefix("http://")).unwrap_or(uri);
        match uri {
            "json-schema.org/draft-04/schema" => Draft::Draft4,
            "json-schema.org/draft-06/schema" => Draft::Draft6,
            "json-schema.org/draft-07/schema" => Draft::Draft7,
            "json-schema.org/draft/2019-09/schema" => Draft::Draft201909,
            _ => Draft::Draft202012,
        }
    }

    /// The name used in logs and error messages.
    pub fn label(self) -> &'static str {
        match self {
            Draft::Draft4 => "draft-04",
            Draft::Draft6 => "draft-06",
            Draft::Draft7 => "draft-07",
            Draft::Draft201909 => "2019-09",
            Draft::Draft202012 => "2020-12",
        }
    }

    pub(crate) fn to_jsonschema(self) -> jsonschema::Draft {
        match self {
            Draft::Draft4 => jsonschema::Draft::Draft4,
            Draft::Draft6 => jsonschema::Draft::Draft6,
            Draft::Draft7 => jsonschema::Draft::Draft7,
            Draft::Draft201909 => jsonschema::Draft::Draft201909,
            Draft::Draft202012 => jsonschema::Draft::Draft202012,
        }
    }

    /// Before 2019-09 a `$ref` replaces its whole object: sibling keywords
    /// are ignored. From 2019-09 on they apply alongside the target.
    pub(crate) fn ref_siblings_apply(self) -> bool {
        matches!(self, Draft::Draft201909 | Draft::Draft202012)
    }

    /// Tuples: `items: [A, B]` (+ `additionalItems`) up to 2019-09,
    /// `prefixItems: [A, B]` (+ `items`) in 2020-12.
    pub(crate) fn array_items_are_tuples(self) -> bool {
        !matches!(self, Draft::Draft202012)
    }

    /// The keyword that names a schema resource (`id` in draft-04).
    pub(crate) fn id_keyword(self) -> &'static str {
        match self {
            Draft::Draft4 => "id",
            _ => "$id",
        }
    }
}

/// The schema as the validator gets it: without the root `$schema` (the
/// draft is passed explicitly), and with OpenAPI's `nullable: true` spelled
/// as JSON Schema (`type: [T, "null"]`, `null` added to an `enum`), since
/// clients that emit OpenAPI-style schemas mean "may be null" and no draft
/// knows the keyword. Runs before [`super::bounds::check`], so it keeps its
/// own fences: at most as many subschemas and as deep as the bounds allow.
pub(crate) fn prepare(schema: &Value) -> Value {
    let mut out = schema.clone();
    if let Value::Object(root) = &mut out {
        root.remove("$schema");
    }
    let mut budget = super::keywords::MAX_SCHEMA_NODES;
    spell_nullable(&mut out, 0, &mut budget);
    out
}

/// Walks schema positions only (the keywords that hold subschemas), so an
/// `enum` value or a `default` that happens to hold `"nullable": true` is
/// left as the client wrote it.
fn spell_nullable(v: &mut Value, depth: usize, budget: &mut usize) {
    use super::keywords::{MAP_KEYWORDS, MAX_SCHEMA_DEPTH, SCHEMA_KEYWORDS};
    if depth > MAX_SCHEMA_DEPTH || *budget == 0 {
        return;
    }
    *budget -= 1;
    let Value::Object(map) = v else { return };
    if map.get("nullable") == Some(&Value::Bool(true)) {
        allow_null(map);
    }
    for (keyword, _) in SCHEMA_KEYWORDS {
        match map.get_mut(*keyword) {
            Some(Value::Array(items)) => items.iter_mut().for_each(|s| spell_nullable(s, depth + 1, budget)),
            Some(sub) => spell_nullable(sub, depth + 1, budget),
            None => {}
        }
    }
    for (keyword, _) in MAP_KEYWORDS {
        if let Some(Value::Object(subs)) = map.get_mut(*keyword) {
            subs.values_mut().for_each(|s| spell_nullable(s, depth + 1, budget));
        }
    }
}

fn allow_null(map: &mut Map<String, Value>) {
    let null = Value::String("null".to_owned());
    match map.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = Value::String(std::mem::take(t));
            map.insert("type".to_owned(), Value::Array(vec![t, null]));
        }
        Some(Value::Array(types)) if !types.contains(&null) => types.push(null),
        _ => {}
    }
    if let Some(Value::Array(options)) = map.get_mut("enum") {
        if !options.contains(&Value::Null) {
            options.push(Value::Null);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn draft_from_schema_uri() {
        let of = |uri: &str| Draft::of(&json!({"$schema": uri}));
        assert_eq!(of("http://json-schema.org/draft-07/schema#"), Draft::Draft7);
        assert_eq!(of("https://json-schema.org/draft-07/schema"), Draft::Draft7);
        assert_eq!(of(" http://json-schema.org/draft-04/schema# "), Draft::Draft4);
        assert_eq!(of("http://json-schema.org/draft-06/schema#"), Draft::Draft6);
        assert_eq!(of("https://json-schema.org/draft/2019-09/schema"), Draft::Draft201909);
        assert_eq!(of("https://json-schema.org/draft/2020-12/schema"), Draft::Draft202012);
        assert_eq!(of("https://spec.openapis.org/oas/3.1/dialect/base"), Draft::Draft202012);
        assert_eq!(Draft::of(&json!({"type": "object"})), Draft::Draft202012);
        assert_eq!(Draft::of(&json!({"$schema": 7})), Draft::Draft202012);
    }

    #[test]
    fn prepare_drops_schema_and_spells_nullable() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "properties": {
                "a": {"type": "string", "nullable": true},
                "b": {"type": ["integer"], "nullable": true},
                "c": {"enum": ["x"], "nullable": true},
                "d": {"type": "string", "nullable": false},
                "e": {"enum": [{"type": "string", "nullable": true}]}
            }
        });
        let prepared = prepare(&schema);
        assert!(prepared.get("$schema").is_none());
        assert_eq!(prepared["properties"]["a"]["type"], json!(["string", "null"]));
        assert_eq!(prepared["properties"]["b"]["type"], json!(["integer", "null"]));
        assert_eq!(prepared["properties"]["c"]["enum"], json!(["x", null]));
        assert_eq!(prepared["properties"]["d"]["type"], json!("string"));
        assert_eq!(prepared["properties"]["e"], schema["properties"]["e"], "enum values are data, not schemas");
    }
}
