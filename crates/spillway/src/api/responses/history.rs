//! What a Responses request takes from stored responses: the conversation
//! before it (`previous_response_id`) and the items it names by id
//! (`item_reference`), folded into its `input` before it is translated to
//! chat — and the items of its own that the gateway stores with the answer.
//!
//! Pure: [`references`] says what to look up, the handler reads the store,
//! [`expand`] puts what it found in place. An input item that holds only
//! an `id` (no `type`, or `type: item_reference`) is a reference (OpenAI's
//! `ItemReferenceParam` has an optional, nullable `type`).

use super::super::reframe::new_id;
use super::super::ApiError;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The most input items one request may name by reference.
pub const MAX_REFERENCES: usize = 1024;

/// What a request refers to.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Refs {
    /// `previous_response_id`.
    pub previous: Option<String>,
    /// The ids of `item_reference` items, in order.
    pub items: Vec<String>,
}

impl Refs {
    /// Whether the request needs nothing from the store.
    pub fn is_empty(&self) -> bool {
        self.previous.is_none() && self.items.is_empty()
    }
}

fn invalid(param: impl Into<String>, message: impl Into<String>) -> ApiError {
    ApiError::InvalidField { param: param.into(), message: message.into() }
}

/// The id an input item refers to, when it is a reference.
pub(super) fn reference(item: &Value) -> Option<&str> {
    let obj = item.as_object()?;
    let id = obj.get("id")?.as_str()?;
    match obj.get("type") {
        Some(Value::String(t)) if t == "item_reference" => Some(id),
        None | Some(Value::Null) if obj.keys().all(|k| k == "id" || k == "type") => Some(id),
        _ => None,
    }
}

/// Parses a Responses request body into its JSON object.
pub fn parse(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::InvalidJson("the body must be a JSON object".into())),
        Err(e) => Err(ApiError::InvalidJson(e.to_string())),
    }
}

/// What `body` refers to in the store.
pub fn references(body: &Map<String, Value>) -> Result<Refs, ApiError> {
    let previous = match body.get("previous_response_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
        Some(_) => return Err(invalid("previous_response_id", "`previous_response_id` must be a response id")),
    };
    if previous.is_some() && body.get("conversation").is_some_and(|c| !c.is_null()) {
        return Err(invalid("previous_response_id", "`previous_response_id` cannot be used with `conversation`"));
    }
    let items: Vec<String> = match body.get("input") {
        Some(Value::Array(items)) => items.iter().filter_map(reference).map(str::to_string).collect(),
        _ => Vec::new(),
    };
    if items.len() > MAX_REFERENCES {
        return Err(invalid("input", format!("at most {MAX_REFERENCES} items can be references")));
    }
    Ok(Refs { previous, items })
}

/// Whether the client asked that nothing be stored (`store: false`).
pub fn store_refused(body: &Map<String, Value>) -> bool {
    body.get("store").and_then(Value::as_bool) == Some(false)
}

/// The request's own input as items, each with an id (a string `input` is
/// one user message), references replaced by the items they name. An
/// unknown reference is a 400 naming it.
pub fn own_items(body: &Map<String, Value>, found: &HashMap<String, Value>) -> Result<Vec<Value>, ApiError> {
    let items = match body.get("input") {
        Some(Value::String(s)) => {
            return Ok(vec![json!({"id": new_id("msg_"), "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": s}]})]);
        }
        Some(Value::Array(items)) => items,
        // `to_chat` names what is wrong with it.
        _ => return Ok(Vec::new()),
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if let Some(id) = reference(item) {
            match found.get(id) {
                Some(stored) => out.push(stored.clone()),
                None => return Err(invalid(format!("input[{i}]"), format!("Item with id '{id}' not found."))),
            }
            continue;
        }
        let mut item = item.clone();
        if let Some(obj) = item.as_object_mut() {
            if !obj.get("id").is_some_and(Value::is_string) {
                let prefix = match obj.get("type").and_then(Value::as_str) {
                    Some("function_call") => "fc_",
                    Some("function_call_output") => "fco_",
                    Some("reasoning") => "rs_",
                    _ => "msg_",
                };
                obj.insert("id".into(), json!(new_id(prefix)));
            }
        }
        out.push(item);
    }
    Ok(out)
}

/// `body` with the conversation before it (`history`) and its own items
/// (`own`) as its `input`, and without `previous_response_id`: what
/// `to_chat` translates.
pub fn expand(mut body: Map<String, Value>, history: Vec<Value>, own: &[Value]) -> Map<String, Value> {
    body.remove("previous_response_id");
    let mut input = history;
    input.extend(own.iter().cloned());
    body.insert("input".into(), Value::Array(input));
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn references_are_items_holding_only_an_id_or_typed_so() {
        let body = map(json!({"previous_response_id": "resp_1", "input": [
            {"type": "item_reference", "id": "msg_a"},
            {"id": "fc_b"},
            {"id": "msg_c", "type": null},
            {"id": "msg_d", "role": "user", "content": "hi"},
            {"type": "function_call_output", "call_id": "c", "output": "x"}
        ]}));
        let refs = references(&body).unwrap();
        assert_eq!(refs.previous.as_deref(), Some("resp_1"));
        assert_eq!(refs.items, ["msg_a", "fc_b", "msg_c"]);
        assert!(references(&map(json!({"input": "hi"}))).unwrap().is_empty());
        let bad = map(json!({"previous_response_id": 3, "input": "x"}));
        assert!(
            matches!(references(&bad), Err(ApiError::InvalidField { param, .. }) if param == "previous_response_id")
        );
    }

    #[test]
    fn own_items_get_ids_and_references_their_items() {
        let found = HashMap::from([(
            "msg_a".to_string(),
            json!({"id": "msg_a", "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "Hi"}]}),
        )]);
        let body = map(json!({"input": [{"type": "item_reference", "id": "msg_a"},
            {"role": "user", "content": "again"},
            {"type": "function_call_output", "call_id": "c", "output": "x"}]}));
        let own = own_items(&body, &found).unwrap();
        assert_eq!(own[0]["content"][0]["text"], "Hi");
        assert!(own[1]["id"].as_str().unwrap().starts_with("msg_"));
        assert!(own[2]["id"].as_str().unwrap().starts_with("fco_"));
        let missing = map(json!({"input": ["ignored", {"id": "msg_zz"}]}));
        match own_items(&missing, &found) {
            Err(ApiError::InvalidField { param, message }) => {
                assert_eq!(param, "input[1]");
                assert!(message.contains("msg_zz"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let text = own_items(&map(json!({"input": "hello"})), &found).unwrap();
        assert_eq!(text[0]["content"][0]["text"], "hello");
        let expanded = expand(map(json!({"previous_response_id": "resp_1", "input": "x"})), vec![json!(1)], &text);
        assert!(!expanded.contains_key("previous_response_id"));
        assert_eq!(expanded["input"].as_array().unwrap().len(), 2);
    }
}
