//! The prompt text that asks for JSON when a provider has no native
//! `response_format`.
//!
//! Where it sits: when the cascade sends a JSON request to a model whose
//! provider cannot enforce `response_format` (GigaChat, Yandex, many local
//! servers), the provider adapter appends this text to the system message.
//! The answer is still normalized and validated afterwards; the instruction
//! only makes a valid answer likelier.
//!
//! A pure function of the `response_format` value, so the same request always
//! renders the same prompt (prompt caches upstream stay warm) and the text
//! can be checked in tests and in `spillway check`.

use serde_json::Value;

/// The instruction for a `response_format`, or `None` when it asks for no
/// JSON (`text`, missing or malformed: those are rejected or ignored
/// elsewhere).
pub fn schema_instruction(response_format: &Value) -> Option<String> {
    match response_format.get("type").and_then(Value::as_str)? {
        "json_object" => Some(object_instruction()),
        "json_schema" => {
            let spec = response_format.get("json_schema")?;
            match spec.get("schema").filter(|s| !s.is_null()) {
                Some(schema) => Some(schema_text(spec, schema)),
                None => Some(object_instruction()),
            }
        }
        _ => None,
    }
}

/// How the `json_object` instruction starts; mock models recognise a JSON
/// request by it when the gateway moved `response_format` into the prompt.
pub const OBJECT_INSTRUCTION_START: &str = "Respond with a single valid JSON object and nothing else";

/// How the `json_schema` instruction starts (the schema follows it).
pub const SCHEMA_INSTRUCTION_START: &str = "Respond with a single JSON value that conforms to the JSON Schema below";

fn object_instruction() -> String {
    format!(
        "{OBJECT_INSTRUCTION_START}: no markdown code fences, no text before or after it, no comments. \
         Use double quotes for all keys and strings."
    )
}

fn schema_text(spec: &Value, schema: &Value) -> String {
    let strict = spec.get("strict").and_then(Value::as_bool).unwrap_or(false);
    // Pretty-printed: models follow an indented schema more reliably than a
    // one-line one. Serializing a `Value` cannot fail; the fallback is the
    // compact form.
    let rendered = serde_json::to_string_pretty(schema).unwrap_or_else(|_| schema.to_string());
    let mut out = format!(
        "{SCHEMA_INSTRUCTION_START}, and nothing else: no markdown code fences, no text before or \
         after it, no comments. Use double quotes for all keys and strings and use the property \
         names exactly as written in the schema."
    );
    if strict {
        out.push_str(
            " The schema is strict: include every required property and no property the schema \
             does not allow.",
        );
    }
    let name = spec.get("name").and_then(Value::as_str).filter(|n| !n.is_empty());
    let description = spec.get("description").and_then(Value::as_str).filter(|d| !d.is_empty());
    if let Some(name) = name {
        out.push_str("\n\nSchema name: ");
        out.push_str(name);
    }
    if let Some(description) = description {
        out.push_str(if name.is_some() { "\nPurpose: " } else { "\n\nPurpose: " });
        out.push_str(description);
    }
    out.push_str("\n\nJSON Schema:\n");
    out.push_str(&rendered);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn none_for_text() {
        assert_eq!(schema_instruction(&json!({"type": "text"})), None);
        assert_eq!(schema_instruction(&json!(null)), None);
    }

    #[test]
    fn object_mode() {
        let text = schema_instruction(&json!({"type": "json_object"})).unwrap();
        assert!(text.contains("single valid JSON object"));
    }

    #[test]
    fn schema_mode_renders_schema_name_and_strictness() {
        let rf = json!({"type": "json_schema", "json_schema": {
            "name": "invoice", "description": "An invoice.", "strict": true,
            "schema": {"type": "object", "properties": {"total": {"type": "number"}},
                       "required": ["total"], "additionalProperties": false}}});
        let text = schema_instruction(&rf).unwrap();
        assert!(text.contains("Schema name: invoice\nPurpose: An invoice."));
        assert!(text.contains("The schema is strict"));
        assert!(text.contains("\"total\": {\n"), "{text}");
        // Pure: the same input renders the same text.
        assert_eq!(schema_instruction(&rf).unwrap(), text);
        let loose = json!({"type": "json_schema", "json_schema": {"name": "x", "schema": {}}});
        assert!(!schema_instruction(&loose).unwrap().contains("strict"));
    }
}
