//! A value valid against a client's schema, for mock models.
//!
//! Where it sits: `kind: mock` providers answer `json_schema` requests, tool
//! calls and `json_object` requests that carry a schema in the prompt with
//! [`sample`]; their JSON damage (fences, renamed keys, broken answers) is
//! applied to that value afterwards. The schema has passed
//! [`super::bounds`] (it is a [`CompiledSchema`]), and the walk here keeps its
//! own budget of steps and depth on top.
//!
//! How: a deterministic walk that follows `$ref`s (`$defs` and
//! `definitions`), merges `allOf`, tries `anyOf`/`oneOf` branches in turn,
//! honours `type` (also `[T, "null"]`), `enum`, `const`, `required`,
//! `properties`, `additionalProperties`, `minProperties`, tuples in either
//! draft's spelling, `minItems`/`maxItems`/`uniqueItems`/`contains`, string
//! lengths, common `format`s and simple `pattern`s, numeric bounds (also
//! draft-04's boolean `exclusiveMinimum`) and `multipleOf`. Each result is
//! checked with the schema's own validator; a few strategies are tried (all
//! properties with real values first, then required ones only with `null`
//! where allowed, then branches in reverse) and the first valid value wins.
//! Keywords the walk does not generate for (`not`, `if`/`then`/`else`,
//! lookaround patterns) are caught by that check; when no strategy
//! satisfies the schema, the first attempt is returned and the gateway,
//! honestly, counts it invalid.

mod leaf;
mod pattern;

use serde_json::{json, Map, Value};

use leaf::{distinct, infer_type, number, string};

use crate::normalize::draft::Draft;
use crate::normalize::CompiledSchema;

/// Steps one attempt may take (each subschema visited is one).
const MAX_STEPS: usize = 20_000;

/// Below this depth of the value, only required properties and the
/// smallest arrays are generated, and `null` is preferred where allowed, so
/// a recursive schema (a tree) ends.
const SOFT_DEPTH: usize = 4;

/// No value is nested deeper than this.
const HARD_DEPTH: usize = 24;

/// The schema that allows anything (`true`), for places with no schema.
static ANY: Value = Value::Bool(true);

/// Annotations that do not change what a `$ref`'s siblings require.
const ANNOTATIONS: &[&str] =
    &["$ref", "$schema", "$id", "$comment", "$defs", "definitions", "title", "description", "default", "examples"];

#[derive(Clone, Copy)]
struct Strategy {
    /// Only required properties, the smallest arrays.
    minimal: bool,
    /// `null` (in `type`, `enum`, `anyOf`) before anything else.
    null_first: bool,
    /// Branches, enum values and types from the last.
    reverse: bool,
}

const STRATEGIES: [Strategy; 4] = [
    Strategy { minimal: false, null_first: false, reverse: false },
    Strategy { minimal: true, null_first: true, reverse: false },
    Strategy { minimal: false, null_first: false, reverse: true },
    Strategy { minimal: true, null_first: false, reverse: true },
];

/// A value for the schema: the first strategy's that validates, else the
/// first strategy's (or `{}` when none produced anything).
pub fn sample(compiled: &CompiledSchema) -> Value {
    let mut first = None;
    for strategy in STRATEGIES {
        let mut g = Gen { root: compiled.schema(), draft: compiled.draft(), steps: 0, strategy };
        let Some(value) = g.value(compiled.schema(), 0) else { continue };
        if compiled.check(&value).is_ok() {
            return value;
        }
        first.get_or_insert(value);
    }
    first.unwrap_or_else(|| json!({}))
}

struct Gen<'s> {
    root: &'s Value,
    draft: Draft,
    steps: usize,
    strategy: Strategy,
}

impl<'s> Gen<'s> {
    fn value(&mut self, schema: &Value, depth: usize) -> Option<Value> {
        self.steps += 1;
        if self.steps > MAX_STEPS || depth > HARD_DEPTH {
            return None;
        }
        let map = match schema {
            Value::Bool(true) => return Some(json!("mock")),
            Value::Object(map) => map,
            _ => return None,
        };
        if let Some(target) = map.get("$ref").and_then(Value::as_str).and_then(|r| self.target(r)) {
            let siblings = map.keys().any(|k| !ANNOTATIONS.contains(&k.as_str()));
            if !(siblings && self.draft.ref_siblings_apply()) {
                return self.value(target, depth);
            }
            let mut own = map.clone();
            own.remove("$ref");
            let merged = merge(own, target);
            return self.value(&Value::Object(merged), depth);
        }
        if let Some(c) = map.get("const") {
            return Some(c.clone());
        }
        if let Some(options) = map.get("enum").and_then(Value::as_array) {
            return self.order(options.iter().collect(), |v| v.is_null()).into_iter().next().cloned();
        }
        if let Some(all) = map.get("allOf").and_then(Value::as_array) {
            let mut merged = map.clone();
            merged.remove("allOf");
            for branch in all {
                let branch = self.resolved(branch);
                merged = merge(merged, branch);
            }
            return self.value(&Value::Object(merged), depth);
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(branches) = map.get(keyword).and_then(Value::as_array) {
                let mut base = map.clone();
                base.remove(keyword);
                let ordered = self.order(branches.iter().collect(), |b| self.is_null_schema(b));
                return ordered.into_iter().find_map(|b| {
                    let merged = merge(base.clone(), self.resolved(b));
                    self.value(&Value::Object(merged), depth)
                });
            }
        }
        self.typed(map, depth)
    }

    fn typed(&mut self, map: &Map<String, Value>, depth: usize) -> Option<Value> {
        let types: Vec<&str> = match map.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![infer_type(map)],
        };
        let terminal = self.strategy.null_first || depth >= SOFT_DEPTH;
        let mut ordered = self.order(types, |t| *t == "null");
        if !terminal {
            // Real values first: a demo's Optional field shows data.
            ordered.sort_by_key(|t| *t == "null");
        }
        ordered.into_iter().find_map(|t| match t {
            "object" => self.object(map, depth),
            "array" => self.array(map, depth),
            "string" => Some(Value::String(string(map))),
            "integer" => number(map, true),
            "number" => number(map, false),
            "boolean" => Some(Value::Bool(true)),
            "null" => Some(Value::Null),
            _ => Some(json!("mock")),
        })
    }

    fn object(&mut self, map: &Map<String, Value>, depth: usize) -> Option<Value> {
        let minimal = self.strategy.minimal || depth >= SOFT_DEPTH;
        let props = map.get("properties").and_then(Value::as_object);
        let mut required: Vec<&str> =
            map.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let extra = map.get("additionalProperties");
        let mut keys: Vec<&str> = match (minimal, props) {
            (false, Some(p)) => p.keys().map(String::as_str).collect(),
            _ => Vec::new(),
        };
        // Names other properties require once they are present.
        let deps = map.get("dependentRequired").or_else(|| map.get("dependencies")).and_then(Value::as_object);
        let mut i = 0;
        while i < keys.len().max(required.len()) {
            for key in [keys.get(i).copied(), required.get(i).copied()].into_iter().flatten() {
                if let Some(names) = deps.and_then(|d| d.get(key)).and_then(Value::as_array) {
                    required.extend(names.iter().filter_map(Value::as_str));
                }
            }
            i += 1;
            if required.len() > 1_000 {
                return None;
            }
        }
        for r in &required {
            if !keys.contains(r) {
                keys.push(*r);
            }
        }
        let mut out = Map::new();
        for key in keys {
            let sub = props.and_then(|p| p.get(key)).or(extra.filter(|e| e.is_object())).unwrap_or(&ANY);
            match self.value(sub, depth + 1) {
                Some(v) => {
                    out.insert(key.to_owned(), v);
                }
                None if required.contains(&key) => return None,
                None => {}
            }
        }
        let min = map.get("minProperties").and_then(Value::as_u64).unwrap_or(0).min(64) as usize;
        let mut n = 0;
        while out.len() < min {
            n += 1;
            let sub = match extra {
                Some(Value::Bool(false)) => return None,
                Some(e) if e.is_object() => e,
                _ => &ANY,
            };
            let v = self.value(sub, depth + 1)?;
            out.insert(format!("extra_{n}"), v);
        }
        Some(Value::Object(out))
    }

    fn array(&mut self, map: &Map<String, Value>, depth: usize) -> Option<Value> {
        let minimal = self.strategy.minimal || depth >= SOFT_DEPTH;
        let tuple_items = map.get("items").and_then(Value::as_array).filter(|_| self.draft.array_items_are_tuples());
        let tuple: &[Value] =
            map.get("prefixItems").and_then(Value::as_array).or(tuple_items).map_or(&[], Vec::as_slice);
        let rest =
            if tuple_items.is_some() { map.get("additionalItems") } else { map.get("items").filter(|i| !i.is_array()) };
        let min = map.get("minItems").and_then(Value::as_u64).unwrap_or(0).min(64) as usize;
        let max = map.get("maxItems").and_then(Value::as_u64).map_or(usize::MAX, |m| m as usize);
        let wanted = if minimal { min } else { min.max(1).max(tuple.len()) };
        let mut n = wanted.min(max);
        if rest == Some(&Value::Bool(false)) {
            n = n.min(tuple.len());
        }
        let unique = map.get("uniqueItems") == Some(&Value::Bool(true));
        let mut items = Vec::with_capacity(n);
        for i in 0..n {
            let sub = tuple.get(i).or(rest).unwrap_or(&ANY);
            let v = self.value(sub, depth + 1)?;
            items.push(if unique { distinct(v, i) } else { v });
        }
        if let Some(contains) = map.get("contains") {
            let v = self.value(contains, depth + 1)?;
            match items.first_mut() {
                Some(first) => *first = v,
                None if max > 0 => items.push(v),
                None => return None,
            }
        }
        Some(Value::Array(items))
    }

    /// Options in the strategy's order; `null`-like ones first when it says so.
    fn order<T>(&self, mut options: Vec<T>, is_null: impl Fn(&T) -> bool) -> Vec<T> {
        if self.strategy.reverse {
            options.reverse();
        }
        if self.strategy.null_first {
            options.sort_by_key(|o| !is_null(o));
        } else {
            options.sort_by_key(|o| is_null(o));
        }
        options
    }

    fn is_null_schema(&self, schema: &Value) -> bool {
        let schema = self.resolved(schema);
        schema.get("type").and_then(Value::as_str) == Some("null") || schema.get("const") == Some(&Value::Null)
    }

    fn target(&self, reference: &str) -> Option<&'s Value> {
        let pointer = reference.strip_prefix('#')?;
        let pointer = percent_encoding::percent_decode_str(pointer).decode_utf8_lossy();
        self.root.pointer(&pointer)
    }

    /// A branch with its `$ref` chain followed (a few hops; the schema is
    /// cycle-free, the cap is for safety).
    fn resolved<'v>(&self, mut schema: &'v Value) -> &'v Value
    where
        's: 'v,
    {
        for _ in 0..16 {
            let siblings = schema.as_object().is_some_and(|m| m.keys().any(|k| !ANNOTATIONS.contains(&k.as_str())));
            match schema.get("$ref").and_then(Value::as_str).and_then(|r| self.target(r)) {
                Some(next) if !siblings => schema = next,
                _ => break,
            }
        }
        schema
    }
}

/// Two schemas as one, as `allOf` means them: properties merged (a property
/// both name must satisfy both), `required` joined, `type`s intersected,
/// bounds tightened; otherwise the first one's keyword wins.
fn merge(mut into: Map<String, Value>, other: &Value) -> Map<String, Value> {
    let Some(other) = other.as_object() else { return into };
    for (k, v) in other {
        let merged = match (k.as_str(), into.get(k)) {
            (_, None) => v.clone(),
            ("properties", Some(Value::Object(mine))) => {
                let mut props = mine.clone();
                for (name, sub) in v.as_object().into_iter().flatten() {
                    let both = match props.get(name) {
                        Some(existing) => json!({"allOf": [existing, sub]}),
                        None => sub.clone(),
                    };
                    props.insert(name.clone(), both);
                }
                Value::Object(props)
            }
            ("required", Some(Value::Array(mine))) => {
                let mut all = mine.clone();
                all.extend(v.as_array().into_iter().flatten().filter(|r| !mine.contains(r)).cloned());
                Value::Array(all)
            }
            ("type", Some(mine)) => {
                let set = |t: &Value| -> Vec<Value> { t.as_array().cloned().unwrap_or_else(|| vec![t.clone()]) };
                let theirs = set(v);
                let common: Vec<Value> = set(mine).into_iter().filter(|t| theirs.contains(t)).collect();
                Value::Array(common)
            }
            ("minimum" | "minLength" | "minItems" | "minProperties", Some(mine)) => max_of(mine, v),
            ("maximum" | "maxLength" | "maxItems" | "maxProperties", Some(mine)) => min_of(mine, v),
            (_, Some(mine)) => mine.clone(),
        };
        into.insert(k.clone(), merged);
    }
    into
}

fn max_of(a: &Value, b: &Value) -> Value {
    if b.as_f64() > a.as_f64() {
        b.clone()
    } else {
        a.clone()
    }
}

fn min_of(a: &Value, b: &Value) -> Value {
    if b.as_f64() < a.as_f64() {
        b.clone()
    } else {
        a.clone()
    }
}

#[cfg(test)]
mod tests;
