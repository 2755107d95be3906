//! Applying a load profile to an OpenAI-shaped chat request (SPEC §9).
//!
//! Runs on the request path for every request to a provider with `load`, just
//! before the attempt is sent, on the JSON body as a map; the budget is about
//! 2 µs, so it edits in place: the only allocations are the merged prompt
//! text and, when there is no system message to merge into, one new message.

use serde_json::{Map, Value};

use super::profile::Profile;

/// Rewrites `req` for `profile`:
///
/// **System prompt.** With `single_system` (providers that accept one system
/// message: GigaChat, Yandex, Anthropic after conversion, many vLLM chat
/// templates), the prompt is merged into the first `system`/`developer`
/// message: appended after a blank line to string content, or as one more
/// text part to part-array content, so the client's own instructions keep
/// their place (and the upstream's prefix cache still matches). Otherwise it
/// becomes its own `system` message right after the client's leading
/// system/developer messages, leaving those byte-for-byte as sent. With no
/// system message at all, a new one goes at index 0. A message whose content
/// has some other shape is left alone (the request is invalid anyway).
///
/// **Max tokens.** `ceil(factor × n)` (at least 1) replaces each of
/// `max_completion_tokens` and `max_tokens` the client sent as an integer;
/// when it sent neither (or `null`), `max_tokens = ceil(factor ×
/// default_max_tokens)` is added; with no default either, nothing is set,
/// since inventing a bound would cut answers the client did not limit.
/// Non-integer values are left for the upstream to reject.
///
/// A profile without a prompt or factor changes nothing of that kind.
pub fn apply_profile(
    req: &mut Map<String, Value>,
    profile: &Profile,
    default_max_tokens: Option<u32>,
    single_system: bool,
) {
    if let Some(prompt) = profile.system_prompt.as_deref().filter(|p| !p.is_empty()) {
        if let Some(Value::Array(messages)) = req.get_mut("messages") {
            add_system_prompt(messages, prompt, single_system);
        }
    }
    if let Some(factor) = profile.max_tokens_factor.filter(|f| f.is_finite() && *f > 0.0) {
        scale_max_tokens(req, factor, default_max_tokens);
    }
}

fn is_system(message: &Value) -> bool {
    matches!(message.get("role").and_then(Value::as_str), Some("system" | "developer"))
}

fn add_system_prompt(messages: &mut Vec<Value>, prompt: &str, single_system: bool) {
    if !single_system {
        let at = messages.iter().take_while(|m| is_system(m)).count();
        messages.insert(at, system_message(prompt));
        return;
    }
    let Some(first) = messages.iter_mut().find(|m| is_system(m)) else {
        messages.insert(0, system_message(prompt));
        return;
    };
    let Some(message) = first.as_object_mut() else {
        return;
    };
    match message.get_mut("content") {
        Some(Value::String(text)) if text.is_empty() => text.push_str(prompt),
        Some(Value::String(text)) => {
            text.reserve(prompt.len() + 2);
            text.push_str("\n\n");
            text.push_str(prompt);
        }
        Some(Value::Array(parts)) => parts.push(text_part(prompt)),
        Some(Value::Null) | None => {
            message.insert("content".to_owned(), Value::String(prompt.to_owned()));
        }
        Some(_) => {}
    }
}

fn system_message(prompt: &str) -> Value {
    let mut m = Map::new();
    m.insert("role".to_owned(), Value::String("system".to_owned()));
    m.insert("content".to_owned(), Value::String(prompt.to_owned()));
    Value::Object(m)
}

fn text_part(text: &str) -> Value {
    let mut m = Map::new();
    m.insert("type".to_owned(), Value::String("text".to_owned()));
    m.insert("text".to_owned(), Value::String(text.to_owned()));
    Value::Object(m)
}

fn scale_max_tokens(req: &mut Map<String, Value>, factor: f64, default_max_tokens: Option<u32>) {
    let mut sent = false;
    for key in ["max_completion_tokens", "max_tokens"] {
        let Some(value) = req.get_mut(key).filter(|v| !v.is_null()) else {
            continue;
        };
        sent = true;
        if let Some(n) = value.as_u64() {
            *value = Value::from(scaled(n, factor));
        }
    }
    if let (false, Some(default)) = (sent, default_max_tokens) {
        req.insert("max_tokens".to_owned(), Value::from(scaled(u64::from(default), factor)));
    }
}

/// `ceil(factor × n)`, at least 1.
fn scaled(n: u64, factor: f64) -> u64 {
    let x = n as f64 * factor;
    // Binary floating point makes 0.3 × 10 come out as 3.0000000000000004,
    // which a plain ceil would turn into 4: a product within rounding error
    // of an integer counts as that integer.
    let nearest = x.round();
    let v = if (x - nearest).abs() <= 1e-9 * nearest.max(1.0) { nearest } else { x.ceil() };
    // `as` saturates, so a huge factor cannot wrap around.
    (v as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn profile(prompt: Option<&str>, factor: Option<f64>) -> Profile {
        Profile {
            name: "tired".into(),
            below: Some(0.9),
            system_prompt: prompt.map(str::to_owned),
            max_tokens_factor: factor,
        }
    }

    fn apply(req: Value, p: &Profile, default: Option<u32>, single: bool) -> Value {
        let Value::Object(mut map) = req else { panic!("not an object") };
        apply_profile(&mut map, p, default, single);
        Value::Object(map)
    }

    const BRIEF: Option<&str> = Some("Answer briefly.");

    #[test]
    fn no_system_message_inserts_one_first() {
        let req = json!({"messages":[{"role":"user","content":"hi"}]});
        let want = json!({"messages":[
            {"role":"system","content":"Answer briefly."},
            {"role":"user","content":"hi"}]});
        for single in [true, false] {
            assert_eq!(apply(req.clone(), &profile(BRIEF, None), None, single), want);
        }
    }

    #[test]
    fn string_system_is_merged_for_single_system_providers() {
        let req = json!({"messages":[
            {"role":"system","content":"You are Bob."},
            {"role":"user","content":"hi"}]});
        let got = apply(req, &profile(BRIEF, None), None, true);
        assert_eq!(
            got["messages"],
            json!([{"role":"system","content":"You are Bob.\n\nAnswer briefly."},
                   {"role":"user","content":"hi"}])
        );
    }

    #[test]
    fn parts_and_developer_and_empty_system_are_merged() {
        let req = json!({"messages":[
            {"role":"user","content":"first"},
            {"role":"developer","content":[{"type":"text","text":"Be Bob."}]}]});
        let got = apply(req, &profile(BRIEF, None), None, true);
        assert_eq!(
            got["messages"][1]["content"],
            json!([{"type":"text","text":"Be Bob."},{"type":"text","text":"Answer briefly."}])
        );
        for content in [json!(""), json!(null)] {
            let req = json!({"messages":[{"role":"system","content":content}]});
            let got = apply(req, &profile(BRIEF, None), None, true);
            assert_eq!(got["messages"], json!([{"role":"system","content":"Answer briefly."}]));
        }
        let req = json!({"messages":[{"role":"system"}]});
        let got = apply(req, &profile(BRIEF, None), None, true);
        assert_eq!(got["messages"][0]["content"], "Answer briefly.");
    }

    #[test]
    fn multi_system_providers_get_a_separate_message_after_the_clients() {
        let req = json!({"messages":[
            {"role":"system","content":"A"},
            {"role":"developer","content":"B"},
            {"role":"user","content":"hi"}]});
        let got = apply(req, &profile(BRIEF, None), None, false);
        assert_eq!(
            got["messages"],
            json!([{"role":"system","content":"A"},{"role":"developer","content":"B"},
                   {"role":"system","content":"Answer briefly."},{"role":"user","content":"hi"}])
        );
    }

    #[test]
    fn odd_shapes_are_left_alone() {
        let weird = json!({"messages":[{"role":"system","content":42}]});
        assert_eq!(apply(weird.clone(), &profile(BRIEF, None), None, true), weird);
        let no_messages = json!({"prompt":"x"});
        assert_eq!(apply(no_messages.clone(), &profile(BRIEF, None), None, true), no_messages);
        let empty_prompt = json!({"messages":[]});
        assert_eq!(apply(empty_prompt.clone(), &profile(Some(""), None), None, true), empty_prompt);
    }

    #[test]
    fn max_tokens_rules() {
        let cases: &[(&str, Value, f64, Option<u32>, Value)] = &[
            ("client max_tokens", json!({"max_tokens":1000}), 0.7, Some(50), json!({"max_tokens":700})),
            ("rounds up", json!({"max_tokens":101}), 0.3, None, json!({"max_tokens":31})),
            ("no float noise: 0.3 × 10 = 3", json!({"max_tokens":10}), 0.3, None, json!({"max_tokens":3})),
            ("never below 1", json!({"max_tokens":1}), 0.01, None, json!({"max_tokens":1})),
            (
                "max_completion_tokens is scaled in place",
                json!({"max_completion_tokens":2000}),
                0.3,
                Some(1024),
                json!({"max_completion_tokens":600}),
            ),
            (
                "both sent, both scaled",
                json!({"max_completion_tokens":2000,"max_tokens":1000}),
                0.5,
                None,
                json!({"max_completion_tokens":1000,"max_tokens":500}),
            ),
            ("default when the client sent none", json!({}), 0.3, Some(1024), json!({"max_tokens":308})),
            ("null counts as not sent", json!({"max_tokens":null}), 0.5, Some(100), json!({"max_tokens":50})),
            ("no max tokens and no default: leave unset", json!({}), 0.3, None, json!({})),
            ("non-integer left for upstream", json!({"max_tokens":"lots"}), 0.3, Some(9), json!({"max_tokens":"lots"})),
        ];
        for (what, req, factor, default, want) in cases {
            let got = apply(req.clone(), &profile(None, Some(*factor)), *default, true);
            assert_eq!(&got, want, "{what}");
        }
    }

    #[test]
    fn profile_without_factor_or_prompt_changes_nothing() {
        let req = json!({"messages":[{"role":"user","content":"hi"}],"max_tokens":100});
        for factor in [None, Some(f64::NAN), Some(0.0), Some(-1.0)] {
            assert_eq!(apply(req.clone(), &profile(None, factor), Some(10), true), req);
        }
        let req = json!({"messages":[]});
        assert_eq!(apply(req.clone(), &profile(None, None), Some(10), true), req);
    }

    #[test]
    fn prompt_and_factor_together() {
        let req = json!({"model":"t-lite","messages":[{"role":"user","content":"hi"}],"stream":true});
        let got = apply(req, &profile(BRIEF, Some(0.7)), Some(1024), true);
        assert_eq!(
            got,
            json!({"model":"t-lite","stream":true,"max_tokens":717,
                   "messages":[{"role":"system","content":"Answer briefly."},{"role":"user","content":"hi"}]})
        );
    }
}
