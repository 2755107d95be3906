//! Stamping and completing OpenAI bodies before they reach a client.
//!
//! Upstreams differ in what they omit (`refusal`, `logprobs`, chunk ids,
//! `object`) and in what they add; strict clients reject bodies that do not
//! validate against OpenAI's schema. Every completion and chunk passes
//! through here: the gateway's own `id`/`created` (stable for a stream),
//! `model` set to the model ref that answered, and required fields filled.

use serde_json::{Map, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// What the gateway stamps on every body of one response.
#[derive(Debug, Clone)]
pub struct Stamp {
    /// `chatcmpl-…`, the same for every chunk of a stream.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The model ref that answered.
    pub model: String,
}

impl Stamp {
    /// A fresh id and the current time.
    pub fn new(model: String) -> Self {
        Self { id: new_id(), created: now_unix(), model }
    }
}

/// A new completion id: `chatcmpl-` and 24 random hex digits.
pub fn new_id() -> String {
    let mut id = *b"chatcmpl-000000000000000000000000";
    // 24 hex digits of 96 random bits, written in place (not a char at a
    // time into a growing string).
    let (hi, lo) = (fastrand::u64(..), u64::from(fastrand::u32(..)));
    id[9..25].copy_from_slice(&crate::digits::hex_word(hi));
    id[25..].copy_from_slice(&crate::digits::hex_word(lo)[8..]);
    // Only ASCII was written: the conversion cannot fail.
    String::from_utf8(id.to_vec()).unwrap_or_default()
}

/// Sets `key` to `value`, allocating the key only when it is new.
fn set(obj: &mut Map<String, Value>, key: &str, value: Value) {
    match obj.get_mut(key) {
        Some(v) => *v = value,
        None => {
            obj.insert(key.to_owned(), value);
        }
    }
}

/// Sets `key` to the string `value` unless it already is that.
fn set_str(obj: &mut Map<String, Value>, key: &str, value: &str) {
    if obj.get(key).and_then(Value::as_str) != Some(value) {
        set(obj, key, Value::String(value.to_owned()));
    }
}

/// Seconds since the Unix epoch.
pub fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

const FINISH_REASONS: [&str; 5] = ["stop", "length", "tool_calls", "content_filter", "function_call"];
const DELTA_ROLES: [&str; 5] = ["developer", "system", "user", "assistant", "tool"];

/// Makes `finish_reason` one of the schema's values: unknown ones become
/// `stop`, a missing one `default`.
fn fix_finish_reason(c: &mut Map<String, Value>, default: Value) {
    match c.get("finish_reason").and_then(Value::as_str) {
        Some(r) if FINISH_REASONS.contains(&r) => {}
        Some(_) => set(c, "finish_reason", Value::String("stop".into())),
        None => set(c, "finish_reason", default),
    }
}

fn stamp_common(obj: &mut Map<String, Value>, s: &Stamp, object: &'static str) {
    set(obj, "id", Value::String(s.id.clone()));
    set_str(obj, "object", object);
    set(obj, "created", Value::from(s.created));
    set_str(obj, "model", &s.model);
    if let Some(u) = obj.get_mut("usage") {
        if !u.is_null() && !fix_usage(u) {
            obj.remove("usage");
        }
    }
    for key in ["system_fingerprint", "service_tier"] {
        if obj.get(key).is_some_and(|v| !v.is_string() && !v.is_null()) {
            obj.remove(key);
        }
    }
}

/// Completes a usage object; false when it is unusable.
fn fix_usage(u: &mut Value) -> bool {
    let Some(o) = u.as_object_mut() else {
        return false;
    };
    let num = |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_u64);
    let prompt = num(o, "prompt_tokens").unwrap_or(0);
    let completion = num(o, "completion_tokens").unwrap_or(0);
    let total = num(o, "total_tokens").unwrap_or(prompt + completion);
    set(o, "prompt_tokens", prompt.into());
    set(o, "completion_tokens", completion.into());
    set(o, "total_tokens", total.into());
    for k in ["prompt_tokens_details", "completion_tokens_details"] {
        if o.get(k).is_some_and(|v| !v.is_object()) {
            o.remove(k);
        }
    }
    true
}

/// Text of a content value that may be a string, parts or null.
fn content_text(v: &Value) -> Value {
    match v {
        Value::String(_) | Value::Null => v.clone(),
        Value::Array(parts) => {
            let text: String = parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
            Value::String(text)
        }
        other => Value::String(other.to_string()),
    }
}

fn fix_tool_call(call: &mut Value, with_index: Option<usize>) {
    let Some(c) = call.as_object_mut() else {
        return;
    };
    if let Some(i) = with_index {
        if !c.get("index").is_some_and(Value::is_u64) {
            c.insert("index".into(), i.into());
        }
    }
    if c.contains_key("id") || with_index.is_none() {
        c.insert("type".into(), Value::String("function".into()));
    }
    if let Some(Value::Object(f)) = c.get_mut("function") {
        match f.get("arguments") {
            Some(Value::String(_)) => {}
            None if with_index.is_some() => {}
            None | Some(Value::Null) => {
                f.insert("arguments".into(), Value::String(String::new()));
            }
            Some(other) => {
                let s = other.to_string();
                f.insert("arguments".into(), Value::String(s));
            }
        }
    }
}

/// Stamps and completes a `chat.completion`; `Err` when it is not one.
pub fn completion(v: &mut Value, s: &Stamp) -> Result<(), &'static str> {
    let obj = v.as_object_mut().ok_or("the body is not a JSON object")?;
    let choices = obj.get_mut("choices").and_then(Value::as_array_mut).ok_or("the body has no `choices` array")?;
    for (i, choice) in choices.iter_mut().enumerate() {
        let c = choice.as_object_mut().ok_or("a choice is not an object")?;
        if c.get("index").and_then(Value::as_u64) != u64::try_from(i).ok() {
            set(c, "index", i.into());
        }
        fix_finish_reason(c, Value::String("stop".into()));
        if !c.get("logprobs").is_some_and(|l| l.is_object() || l.is_null()) {
            set(c, "logprobs", Value::Null);
        }
        if !c.contains_key("message") {
            c.insert("message".into(), Value::Object(Map::new()));
        }
        let m = c.get_mut("message").and_then(Value::as_object_mut).ok_or("a message is not an object")?;
        set_str(m, "role", "assistant");
        match m.get("content") {
            // Strings (the usual case) and null stay as they are, uncopied.
            Some(Value::String(_) | Value::Null) => {}
            Some(other) => {
                let text = content_text(other);
                set(m, "content", text);
            }
            None => set(m, "content", Value::Null),
        }
        if !m.get("refusal").is_some_and(|r| r.is_string() || r.is_null()) {
            set(m, "refusal", Value::Null);
        }
        match m.get_mut("tool_calls") {
            Some(Value::Array(calls)) if !calls.is_empty() => calls.iter_mut().for_each(|c| fix_tool_call(c, None)),
            Some(_) => {
                m.remove("tool_calls");
            }
            None => {}
        }
    }
    stamp_common(obj, s, "chat.completion");
    Ok(())
}

/// Stamps and completes a `chat.completion.chunk`.
pub fn chunk(v: &mut Value, s: &Stamp) {
    let Some(obj) = v.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(choices)) = obj.get_mut("choices") {
        for (i, choice) in choices.iter_mut().enumerate() {
            let Some(c) = choice.as_object_mut() else {
                continue;
            };
            if !c.get("index").is_some_and(Value::is_u64) {
                set(c, "index", i.into());
            }
            fix_finish_reason(c, Value::Null);
            if c.get("logprobs")
                .is_some_and(|l| !(l.is_null() || l.get("content").is_some() && l.get("refusal").is_some()))
            {
                c.insert("logprobs".into(), Value::Null);
            }
            // GigaChat sends `message` instead of `delta` on some chunks.
            if !c.contains_key("delta") {
                let d = c.remove("message").unwrap_or_else(|| Value::Object(Map::new()));
                c.insert("delta".into(), d);
            }
            if let Some(d) = c.get_mut("delta").and_then(Value::as_object_mut) {
                if d.get("role").is_some_and(|r| !r.as_str().is_some_and(|r| DELTA_ROLES.contains(&r))) {
                    d.remove("role");
                }
                if let Some(content) = d.get("content") {
                    if !content.is_string() && !content.is_null() {
                        let t = content_text(content);
                        d.insert("content".into(), t);
                    }
                }
                if let Some(Value::Array(calls)) = d.get_mut("tool_calls") {
                    for (j, call) in calls.iter_mut().enumerate() {
                        fix_tool_call(call, Some(j));
                    }
                }
            }
        }
    } else {
        obj.insert("choices".into(), Value::Array(Vec::new()));
    }
    stamp_common(obj, s, "chat.completion.chunk");
}

/// A completion carries an answer: some content or a tool call.
pub fn completion_has_answer(v: &Value) -> bool {
    v.get("choices").and_then(Value::as_array).is_some_and(|choices| {
        choices.iter().any(|c| {
            let m = c.get("message");
            m.and_then(|m| m.get("content")).and_then(Value::as_str).is_some_and(|s| !s.trim().is_empty())
                || m.and_then(|m| m.get("tool_calls")).and_then(Value::as_array).is_some_and(|a| !a.is_empty())
                || m.and_then(|m| m.get("refusal")).and_then(Value::as_str).is_some_and(|s| !s.is_empty())
        })
    })
}

/// A chunk carries the first token: non-empty content, a refusal or a tool
/// call (role-only chunks, empty deltas and usage chunks do not count).
pub fn chunk_has_token(v: &Value) -> bool {
    v.get("choices").and_then(Value::as_array).is_some_and(|choices| {
        choices.iter().any(|c| {
            let d = c.get("delta");
            d.and_then(|d| d.get("content")).and_then(Value::as_str).is_some_and(|s| !s.is_empty())
                || d.and_then(|d| d.get("refusal")).and_then(Value::as_str).is_some_and(|s| !s.is_empty())
                || d.and_then(|d| d.get("tool_calls")).and_then(Value::as_array).is_some_and(|a| !a.is_empty())
        })
    })
}

/// A chunk ends its choice (`finish_reason` set).
pub fn chunk_finishes(v: &Value) -> bool {
    v.get("choices")
        .and_then(Value::as_array)
        .is_some_and(|choices| choices.iter().any(|c| c.get("finish_reason").is_some_and(|f| !f.is_null())))
}

/// The usage-only chunk (`choices: []` with usage).
pub fn is_usage_chunk(v: &Value) -> bool {
    v.get("choices").and_then(Value::as_array).is_some_and(Vec::is_empty)
        && v.get("usage").is_some_and(Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completion_id_is_chatcmpl_and_its_96_random_bits_in_hex() {
        fastrand::seed(7);
        let id = new_id();
        fastrand::seed(7);
        let (hi, lo) = (fastrand::u64(..), fastrand::u32(..));
        assert_eq!(id, format!("chatcmpl-{hi:016x}{lo:08x}"));
        assert_ne!(new_id(), new_id());
    }
    use serde_json::json;

    #[test]
    fn fills_what_upstreams_omit() {
        let mut v = json!({"choices":[{"message":{"content":[{"type":"text","text":"hi"}],"tool_calls":[{"id":"c","function":{"name":"f","arguments":{"a":1}}}]}}],"usage":{"prompt_tokens":3,"completion_tokens":2}});
        completion(&mut v, &Stamp { id: "chatcmpl-1".into(), created: 7, model: "p/m".into() }).unwrap();
        assert_eq!(v["model"], "p/m");
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["choices"][0]["message"]["content"], "hi");
        assert_eq!(v["choices"][0]["message"]["refusal"], Value::Null);
        assert_eq!(v["choices"][0]["logprobs"], Value::Null);
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        assert_eq!(v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], "{\"a\":1}");
        assert_eq!(v["usage"]["total_tokens"], 5);
    }

    #[test]
    fn rejects_non_completions() {
        let s = Stamp::new("p/m".into());
        assert!(completion(&mut json!([1]), &s).is_err());
        assert!(completion(&mut json!({"error": "x"}), &s).is_err());
    }

    #[test]
    fn first_token_detection() {
        assert!(!chunk_has_token(&json!({"choices":[{"delta":{"role":"assistant","content":""}}]})));
        assert!(chunk_has_token(&json!({"choices":[{"delta":{"content":"a"}}]})));
        assert!(chunk_has_token(&json!({"choices":[{"delta":{"tool_calls":[{"index":0}]}}]})));
        assert!(!chunk_has_token(&json!({"choices":[],"usage":{"prompt_tokens":1}})));
    }
}
