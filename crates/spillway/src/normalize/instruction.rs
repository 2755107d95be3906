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

/// The language of an instruction: the system prompt's, when that is
/// Russian (an English line after a Russian prefix confuses small models).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// English.
    En,
    /// Russian.
    Ru,
}

/// The instruction for a `response_format`, or `None` when it asks for no
/// JSON (`text`, missing or malformed: those are rejected or ignored
/// elsewhere).
pub fn schema_instruction(response_format: &Value) -> Option<String> {
    schema_instruction_in(response_format, Lang::En)
}

/// [`schema_instruction`] in `lang`.
pub fn schema_instruction_in(response_format: &Value, lang: Lang) -> Option<String> {
    match response_format.get("type").and_then(Value::as_str)? {
        "json_object" => Some(object_instruction(lang)),
        "json_schema" => {
            let spec = response_format.get("json_schema")?;
            match spec.get("schema").filter(|s| !s.is_null()) {
                Some(schema) => Some(schema_text(spec, schema, lang)),
                None => Some(object_instruction(lang)),
            }
        }
        _ => None,
    }
}

/// Whether `text` reads as Russian: more Cyrillic letters than Latin ones
/// among its first 2,000 characters (cheap; no dictionary).
pub fn is_russian(text: &str) -> bool {
    let (mut cyrillic, mut latin) = (0u32, 0u32);
    for c in text.chars().take(2_000) {
        if c.is_ascii_alphabetic() {
            latin += 1;
        } else if ('\u{0400}'..='\u{04FF}').contains(&c) {
            cyrillic += 1;
        }
    }
    cyrillic > latin
}

/// How the `json_object` instruction starts; mock models recognise a JSON
/// request by it when the gateway moved `response_format` into the prompt.
pub const OBJECT_INSTRUCTION_START: &str = "Respond with a single valid JSON object and nothing else";

/// How the `json_schema` instruction starts (the schema follows it).
pub const SCHEMA_INSTRUCTION_START: &str = "Respond with a single JSON value that conforms to the JSON Schema below";

/// The Russian `json_object` instruction's start.
pub const OBJECT_INSTRUCTION_START_RU: &str = "Ответь одним корректным JSON-объектом и ничем больше";

/// The Russian `json_schema` instruction's start.
pub const SCHEMA_INSTRUCTION_START_RU: &str = "Ответь одним JSON-значением, соответствующим JSON Schema ниже";

/// Every way an instruction starts, in every language: what a mock model
/// looks for to tell a JSON request moved into the prompt.
pub const INSTRUCTION_STARTS: [&str; 4] =
    [OBJECT_INSTRUCTION_START, SCHEMA_INSTRUCTION_START, OBJECT_INSTRUCTION_START_RU, SCHEMA_INSTRUCTION_START_RU];

fn object_instruction(lang: Lang) -> String {
    match lang {
        Lang::En => format!(
            "{OBJECT_INSTRUCTION_START}: no markdown code fences, no text before or after it, no comments. \
             Use double quotes for all keys and strings."
        ),
        Lang::Ru => format!(
            "{OBJECT_INSTRUCTION_START_RU}: без markdown-блоков кода, без текста до или после него, \
             без комментариев. Все ключи и строки — в двойных кавычках."
        ),
    }
}

fn schema_text(spec: &Value, schema: &Value, lang: Lang) -> String {
    if lang == Lang::Ru {
        return schema_text_ru(spec, schema);
    }
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

fn schema_text_ru(spec: &Value, schema: &Value) -> String {
    let strict = spec.get("strict").and_then(Value::as_bool).unwrap_or(false);
    let rendered = serde_json::to_string_pretty(schema).unwrap_or_else(|_| schema.to_string());
    let mut out = format!(
        "{SCHEMA_INSTRUCTION_START_RU}, и ничем больше: без markdown-блоков кода, без текста до или \
         после него, без комментариев. Все ключи и строки — в двойных кавычках, имена свойств — точно \
         как в схеме."
    );
    if strict {
        out.push_str(" Схема строгая: включи все обязательные свойства и никаких свойств, которых схема не допускает.");
    }
    let name = spec.get("name").and_then(Value::as_str).filter(|n| !n.is_empty());
    let description = spec.get("description").and_then(Value::as_str).filter(|d| !d.is_empty());
    if let Some(name) = name {
        out.push_str("\n\nИмя схемы: ");
        out.push_str(name);
    }
    if let Some(description) = description {
        out.push_str(if name.is_some() { "\nНазначение: " } else { "\n\nНазначение: " });
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
    fn russian_prompts_get_a_russian_instruction() {
        assert!(is_russian("Ты — помощник банка. Отвечай кратко."));
        assert!(!is_russian("You are a bank assistant. Ответ: да"));
        assert!(!is_russian(""));
        let rf =
            json!({"type": "json_schema", "json_schema": {"name": "x", "strict": true, "schema": {"type": "object"}}});
        let ru = schema_instruction_in(&rf, Lang::Ru).unwrap();
        assert!(
            ru.starts_with(SCHEMA_INSTRUCTION_START_RU) && ru.contains("Схема строгая") && ru.contains("Имя схемы: x"),
            "{ru}"
        );
        let obj = schema_instruction_in(&json!({"type": "json_object"}), Lang::Ru).unwrap();
        assert!(obj.starts_with(OBJECT_INSTRUCTION_START_RU));
        assert!(INSTRUCTION_STARTS.iter().any(|s| obj.starts_with(s)));
    }

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
