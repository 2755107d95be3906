//! Leaf values for the sampler: strings (formats, patterns, lengths),
//! numbers (bounds, exclusivity in either draft's spelling, `multipleOf`),
//! distinct array items, and the type a schema without `type` describes.
//!
//! Where it sits: [`super::Gen`] calls these once it has picked a type.

use serde_json::{json, Map, Number, Value};

use super::pattern;

/// What a schema without `type` describes, from its keywords.
pub(super) fn infer_type(map: &Map<String, Value>) -> &'static str {
    let has = |keys: &[&str]| keys.iter().any(|k| map.contains_key(*k));
    if has(&["properties", "required", "additionalProperties", "minProperties", "patternProperties"]) {
        "object"
    } else if has(&["items", "prefixItems", "minItems", "maxItems", "contains"]) {
        "array"
    } else if has(&["minLength", "maxLength", "pattern", "format"]) {
        "string"
    } else if has(&["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]) {
        "number"
    } else {
        "any"
    }
}

/// The `i`-th of a run of items that must all differ.
pub(super) fn distinct(v: Value, i: usize) -> Value {
    match v {
        Value::String(s) if i > 0 => Value::String(format!("{s}-{i}")),
        Value::Number(n) if i > 0 => match n.as_i64() {
            Some(n) => json!(n.saturating_add(i as i64)),
            None => json!(n.as_f64().unwrap_or(0.0) + i as f64),
        },
        other => other,
    }
}

pub(super) fn string(map: &Map<String, Value>) -> String {
    let min = map.get("minLength").and_then(Value::as_u64).unwrap_or(0).min(4096) as usize;
    let max = map.get("maxLength").and_then(Value::as_u64).map_or(usize::MAX, |m| m as usize);
    let from_pattern = map.get("pattern").and_then(Value::as_str).and_then(|p| pattern::matching(p, true));
    let mut s = from_pattern.unwrap_or_else(|| {
        match map.get("format").and_then(Value::as_str) {
            Some("date-time") => "2024-01-01T00:00:00Z",
            Some("date") => "2024-01-01",
            Some("time") => "12:00:00Z",
            Some("duration") => "P1D",
            Some("email" | "idn-email") => "mock@example.com",
            Some("hostname" | "idn-hostname") => "example.com",
            Some("ipv4") => "192.0.2.1",
            Some("ipv6") => "2001:db8::1",
            Some("uri" | "url" | "iri" | "uri-reference" | "iri-reference") => "https://example.com/mock",
            Some("uuid") => "00000000-0000-4000-8000-000000000000",
            Some("json-pointer") => "/mock",
            Some("regex") => "mock",
            _ => "mock",
        }
        .to_owned()
    });
    let len = s.chars().count();
    if len < min {
        s.extend(std::iter::repeat_n('x', min - len));
    }
    if s.chars().count() > max {
        s = s.chars().take(max).collect();
    }
    s
}

/// A number inside the schema's bounds, a multiple of `multipleOf`; 1 (or
/// 1.5 for `number`) when those allow.
pub(super) fn number(map: &Map<String, Value>, integer: bool) -> Option<Value> {
    let f = |k: &str| map.get(k).and_then(Value::as_f64);
    // Draft-04 spells exclusivity as a boolean next to the bound.
    let (mut lo, mut lo_ex) = (f("minimum"), map.get("exclusiveMinimum") == Some(&Value::Bool(true)));
    if let Some(x) = f("exclusiveMinimum") {
        if lo.is_none_or(|l| x >= l) {
            (lo, lo_ex) = (Some(x), true);
        }
    }
    let (mut hi, mut hi_ex) = (f("maximum"), map.get("exclusiveMaximum") == Some(&Value::Bool(true)));
    if let Some(x) = f("exclusiveMaximum") {
        if hi.is_none_or(|h| x <= h) {
            (hi, hi_ex) = (Some(x), true);
        }
    }
    let step = if integer { 1.0 } else { 0.5 };
    let mut v: f64 = if integer { 1.0 } else { 1.5 };
    if let Some(l) = lo {
        if v < l || (lo_ex && v <= l) {
            v = match (lo_ex, hi) {
                (true, Some(h)) if !integer => (l + h) / 2.0,
                (true, _) => {
                    if integer {
                        l.floor() + 1.0
                    } else {
                        l + step
                    }
                }
                (false, _) => {
                    if integer {
                        l.ceil()
                    } else {
                        l
                    }
                }
            };
        }
    }
    if let Some(h) = hi {
        if v > h || (hi_ex && v >= h) {
            v = match (hi_ex, lo) {
                (true, Some(l)) if !integer => (l + h) / 2.0,
                (true, _) => {
                    if integer {
                        h.ceil() - 1.0
                    } else {
                        h - step
                    }
                }
                (false, _) => {
                    if integer {
                        h.floor()
                    } else {
                        h
                    }
                }
            };
        }
    }
    if let Some(m) = f("multipleOf").filter(|m| *m > 0.0) {
        let up = (v / m).ceil() * m;
        let fits =
            |x: f64| hi.is_none_or(|h| x < h || (!hi_ex && x <= h)) && lo.is_none_or(|l| x > l || (!lo_ex && x >= l));
        v = if fits(up) { up } else { (v / m).floor() * m };
    }
    if integer {
        // `as` saturates: a bound beyond i64 gives the largest i64, which
        // the validator then judges.
        return Some(json!(v as i64));
    }
    Number::from_f64(v).map(Value::Number)
}
