//! Renaming keys toward the schema's property names.
//!
//! Where it sits: after repair, before validation, only when the request
//! carries a schema. Reserve models answer `{"UserName": ...}` or
//! `{"user-name": ...}` where the schema says `user_name`, or misspell a long
//! name by a letter; the data is right and only the label is off.
//!
//! The rules are deliberately narrow, so a key is never moved onto a field
//! that means something else:
//! - only keys the schema does not list are touched, and never onto a
//!   property the object already has;
//! - a match ignoring case and `_`/`-`/space/`.` separators (case,
//!   snake/camel/kebab) wins; otherwise one edit (insert, delete, substitute,
//!   swap two neighbours) for names of five or more letters;
//! - the match must be unique, and objects whose schema has
//!   `patternProperties` are left alone (an unlisted key may be legitimate).
//!
//! Local `$ref`s (`#/$defs/...` from pydantic, `#/definitions/...` from
//! zod-to-json-schema) and `allOf`/`anyOf`/`oneOf` branches are followed,
//! the same way in every draft: what differs is read from the schema's
//! [`Draft`] (a `$ref`'s sibling keywords count from 2019-09 on; tuples are
//! `items: [...]` before 2020-12 and `prefixItems` after). The schema was
//! bounded when it was compiled ([`super::bounds`]); the walk also caps the
//! branches it collects per place, so no schema makes it slow.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::normalize::draft::Draft;
use crate::normalize::node::Node;
use crate::normalize::repair::push_fix;
use crate::normalize::{CompiledSchema, Fix};

/// `$ref` hops followed in a row before giving up (a cycle of refs).
const MAX_REF_HOPS: usize = 16;

/// Nesting of `allOf`/`anyOf`/`oneOf` followed.
const MAX_BRANCH_DEPTH: usize = 8;

/// Schemas collected for one place of the answer (a schema whose branches
/// fan out further is renamed toward the first ones only).
const MAX_BRANCHES: usize = 64;

/// Shortest name (after folding) that may be matched with one edit; shorter
/// names are too close to each other (`id`/`ip`, `name`/`game`).
const MIN_FUZZY_LEN: usize = 5;

/// Renames keys in `node` toward `schema`; true when anything changed.
pub(crate) fn rename(node: &mut Node<'_>, compiled: &CompiledSchema, fixes: &mut Vec<Fix>) -> bool {
    rename_in(node, compiled.schema(), compiled.draft(), fixes)
}

fn rename_in(node: &mut Node<'_>, schema: &Value, draft: Draft, fixes: &mut Vec<Fix>) -> bool {
    let before = fixes.len();
    let cx = Cx { root: schema, draft };
    walk(node, &Shape::of(schema, &cx), &cx, fixes);
    fixes.len() != before
}

/// What every step needs: the document `$ref`s point into, and its draft.
struct Cx<'s> {
    root: &'s Value,
    draft: Draft,
}

/// What one schema says about the value at one place: its branches, their
/// `properties`, and `additionalProperties`. Computed once per array for all
/// its items (the schema lookups were most of this module's time).
struct Shape<'s> {
    branches: Vec<&'s Value>,
    props: Vec<&'s Map<String, Value>>,
    extra: Option<&'s Value>,
}

impl<'s> Shape<'s> {
    fn of(schema: &'s Value, cx: &Cx<'s>) -> Self {
        let mut branches = Vec::new();
        collect(schema, cx, 0, &mut branches);
        let props = branches.iter().filter_map(|s| properties(s)).collect();
        let extra = branches.iter().find_map(|s| s.get("additionalProperties"));
        Shape { branches, props, extra }
    }

    fn member(&self, key: &str) -> Option<&'s Value> {
        self.props.iter().find_map(|p| p.get(key))
    }
}

fn is_container(node: &Node<'_>) -> bool {
    matches!(node, Node::Obj(_) | Node::Arr(_))
}

fn walk<'s>(node: &mut Node<'_>, shape: &Shape<'s>, cx: &Cx<'s>, fixes: &mut Vec<Fix>) {
    match node {
        Node::Obj(members) => {
            let unlisted = members.iter().any(|(k, _)| shape.member(k).is_none());
            if unlisted && !shape.props.is_empty() {
                rename_members(members, shape, fixes);
            }
            for (key, value) in members.iter_mut() {
                // Scalars have nothing to rename; skip the lookups.
                if is_container(value) {
                    if let Some(sub) = shape.member(key).or(shape.extra) {
                        walk(value, &Shape::of(sub, cx), cx, fixes);
                    }
                }
            }
        }
        Node::Arr(items) => {
            // Items usually share one schema: build its shape once.
            let mut last: Option<(&Value, Shape<'_>)> = None;
            for (i, item) in items.iter_mut().enumerate() {
                let Some(sub) = is_container(item).then(|| item_schema(&shape.branches, i, cx.draft)).flatten() else {
                    continue;
                };
                if !last.as_ref().is_some_and(|(s, _)| std::ptr::eq(*s, sub)) {
                    last = Some((sub, Shape::of(sub, cx)));
                }
                if let Some((_, item_shape)) = &last {
                    walk(item, item_shape, cx, fixes);
                }
            }
        }
        _ => {}
    }
}

/// Where a local `$ref` points; `None` for one we cannot resolve.
fn target<'s>(schema: &'s Value, root: &'s Value) -> Option<&'s Value> {
    let pointer = schema.get("$ref")?.as_str()?.strip_prefix('#')?;
    let pointer = percent_encoding::percent_decode_str(pointer).decode_utf8_lossy();
    root.pointer(&pointer)
}

/// The schema and every `allOf`/`anyOf`/`oneOf` branch below it, `$ref`s
/// followed. Before 2019-09 a `$ref` stands for its whole object; from then
/// on the object's own keywords apply too, so both are collected.
fn collect<'s>(schema: &'s Value, cx: &Cx<'s>, depth: usize, out: &mut Vec<&'s Value>) {
    let mut schema = schema;
    for _ in 0..MAX_REF_HOPS {
        if depth > MAX_BRANCH_DEPTH || out.len() >= MAX_BRANCHES || !schema.is_object() {
            return;
        }
        let Some(next) = schema.get("$ref").map(|_| target(schema, cx.root)) else {
            break;
        };
        if cx.draft.ref_siblings_apply() {
            push_branches(schema, cx, depth, out);
        }
        match next {
            Some(next) => schema = next,
            None => return,
        }
    }
    if schema.get("$ref").is_none() {
        push_branches(schema, cx, depth, out);
    }
}

fn push_branches<'s>(schema: &'s Value, cx: &Cx<'s>, depth: usize, out: &mut Vec<&'s Value>) {
    if out.len() >= MAX_BRANCHES || out.iter().any(|s| std::ptr::eq(*s, schema)) {
        return;
    }
    out.push(schema);
    for keyword in ["allOf", "anyOf", "oneOf"] {
        if let Some(branches) = schema.get(keyword).and_then(Value::as_array) {
            for branch in branches {
                collect(branch, cx, depth + 1, out);
            }
        }
    }
}

fn properties(shape: &Value) -> Option<&Map<String, Value>> {
    shape.get("properties").and_then(Value::as_object)
}

/// The schema of the item at `index`: tuples first (`prefixItems`, or the
/// array form of `items` before 2020-12, then `additionalItems`), else
/// `items`.
fn item_schema<'s>(shapes: &[&'s Value], index: usize, draft: Draft) -> Option<&'s Value> {
    shapes.iter().find_map(|s| {
        let tuple_items = s.get("items").and_then(Value::as_array).filter(|_| draft.array_items_are_tuples());
        let tuple = s.get("prefixItems").and_then(Value::as_array).or(tuple_items);
        match tuple {
            Some(tuple) => match tuple.get(index) {
                Some(sub) => Some(sub),
                None if tuple_items.is_some() => s.get("additionalItems").filter(|i| i.is_object()),
                None => s.get("items").filter(|i| i.is_object()),
            },
            None => s.get("items").filter(|i| i.is_object()),
        }
    })
}

fn rename_members(members: &mut [(Cow<'_, str>, Node<'_>)], shape: &Shape<'_>, fixes: &mut Vec<Fix>) {
    if shape.branches.iter().any(|s| s.get("patternProperties").is_some()) {
        return;
    }
    let is_listed = |key: &str| shape.member(key).is_some();
    let mut names: Vec<&String> = shape.props.iter().flat_map(|p| p.keys()).collect();
    // A property listed by two `allOf` branches is one name, not a tie.
    names.sort_unstable();
    names.dedup();
    // Property names already present, or claimed by an earlier rename.
    let mut taken: Vec<bool> = names.iter().map(|n| members.iter().any(|(k, _)| k == *n)).collect();
    for (key, _) in members.iter_mut() {
        if is_listed(key) {
            continue;
        }
        let Some(i) = best_match(key, &names, &taken) else {
            continue;
        };
        taken[i] = true;
        let target = names[i].clone();
        push_fix(fixes, Fix::RenamedField { from: key.to_string(), to: target.clone() });
        *key = Cow::Owned(target);
    }
}

/// The index of the unique free property name `key` should become, if any.
fn best_match(key: &str, names: &[&String], taken: &[bool]) -> Option<usize> {
    let free = || names.iter().enumerate().filter(|(i, _)| !taken.get(*i).copied().unwrap_or(true));
    // A key of separators only matches nothing.
    folded(key).next()?;
    let mut exact = free().filter(|(_, n)| fold_eq(key, n));
    match (exact.next(), exact.next()) {
        (Some((i, _)), None) => return Some(i),
        (Some(_), Some(_)) => return None,
        _ => {}
    }
    // The rare path: a key that matches nothing exactly.
    let key: Vec<char> = folded(key).collect();
    if key.len() < MIN_FUZZY_LEN {
        return None;
    }
    let mut near = free().filter(|(_, n)| {
        let name: Vec<char> = folded(n).collect();
        name.len() >= MIN_FUZZY_LEN && within_one_edit(&key, &name)
    });
    match (near.next(), near.next()) {
        (Some((i, _)), None) => Some(i),
        _ => None,
    }
}

/// `folded(a) == folded(b)`, on bytes when both are ASCII (nearly every
/// key; `char::to_lowercase` per character was most of this module's time).
fn fold_eq(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        fn ascii(s: &str) -> impl Iterator<Item = u8> + '_ {
            s.bytes().filter(|c| !matches!(c, b'_' | b'-' | b' ' | b'.')).map(|c| c.to_ascii_lowercase())
        }
        return ascii(a).eq(ascii(b));
    }
    folded(a).eq(folded(b))
}

/// Lowercase with separators removed: `userName`, `user_name`, `User-Name`
/// and `USER NAME` all fold to `username`.
fn folded(name: &str) -> impl Iterator<Item = char> + '_ {
    name.chars().filter(|c| !matches!(c, '_' | '-' | ' ' | '.')).flat_map(char::to_lowercase)
}

/// Optimal-string-alignment distance ≤ 1, without building a matrix.
fn within_one_edit(a: &[char], b: &[char]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    match long.len() - short.len() {
        0 => {
            let diffs: Vec<usize> = (0..short.len()).filter(|&i| short[i] != long[i]).collect();
            match diffs.as_slice() {
                [] | [_] => true,
                [i, j] => *j == i + 1 && short[*i] == long[*j] && short[*j] == long[*i],
                _ => false,
            }
        }
        1 => {
            let first = (0..short.len()).find(|&i| short[i] != long[i]).unwrap_or(short.len());
            short[first..] == long[first + 1..]
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::node::write_compact;
    use crate::normalize::repair::parse_prefix;
    use serde_json::json;

    fn renamed(text: &str, schema: &Value) -> String {
        let mut node = parse_prefix(text).unwrap().node;
        let mut fixes = Vec::new();
        rename_in(&mut node, schema, Draft::of(schema), &mut fixes);
        let mut out = String::new();
        write_compact(&node, &mut out);
        out
    }

    #[test]
    fn case_and_separators() {
        let schema = json!({"properties": {"user_name": {}, "createdAt": {}, "id": {}}});
        assert_eq!(
            renamed(r#"{"UserName":1,"created-at":2,"ID":3}"#, &schema),
            r#"{"user_name":1,"createdAt":2,"id":3}"#
        );
    }

    #[test]
    fn one_edit_only_for_long_names() {
        let schema = json!({"properties": {"address": {}, "name": {}}});
        assert_eq!(renamed(r#"{"adress":1,"nmae":2}"#, &schema), r#"{"address":1,"nmae":2}"#);
        assert_eq!(renamed(r#"{"addrses":1}"#, &schema), r#"{"address":1}"#);
        assert_eq!(renamed(r#"{"adres":1}"#, &schema), r#"{"adres":1}"#);
    }

    #[test]
    fn never_onto_a_present_or_ambiguous_name() {
        let schema = json!({"properties": {"user_name": {}}});
        assert_eq!(renamed(r#"{"userName":1,"user_name":2}"#, &schema), r#"{"userName":1,"user_name":2}"#);
        let schema = json!({"properties": {"user_name": {}, "UserName": {}}});
        assert_eq!(renamed(r#"{"username":1}"#, &schema), r#"{"username":1}"#);
        let schema = json!({"properties": {"field": {}}, "patternProperties": {"^x": {}}});
        assert_eq!(renamed(r#"{"Field":1}"#, &schema), r#"{"Field":1}"#);
    }

    #[test]
    fn follows_refs_items_and_branches() {
        let schema = json!({
            "$defs": {"Item": {"type": "object", "properties": {"unit_price": {}}}},
            "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                           "owner": {"anyOf": [{"type": "null"}, {"properties": {"fullName": {}}}]}}
        });
        assert_eq!(
            renamed(r#"{"Items":[{"unitPrice":1},{"UNIT_PRICE":2}],"owner":{"full_name":"x"}}"#, &schema),
            r#"{"items":[{"unit_price":1},{"unit_price":2}],"owner":{"fullName":"x"}}"#
        );
    }

    #[test]
    fn draft_differences_are_followed() {
        // Draft-07 (zod): `definitions`, and tuple `items`.
        let zod = json!({"$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"P": {"type": "object", "properties": {"full_name": {}}}},
            "properties": {"pair": {"items": [{"$ref": "#/definitions/P"}, {"properties": {"unit_price": {}}}],
                                    "additionalItems": {"properties": {"tax_rate": {}}}}}});
        assert_eq!(
            renamed(r#"{"pair":[{"FullName":1},{"UnitPrice":2},{"TaxRate":3}]}"#, &zod),
            r#"{"pair":[{"full_name":1},{"unit_price":2},{"tax_rate":3}]}"#
        );
        // 2019-09+: a `$ref`'s siblings apply; before, they do not.
        let with_siblings = |uri: &str| {
            json!({"$schema": uri, "$defs": {"B": {"properties": {"user_id": {}}}},
                   "$ref": "#/$defs/B", "properties": {"display_name": {}}})
        };
        let s = with_siblings("https://json-schema.org/draft/2020-12/schema");
        assert_eq!(renamed(r#"{"UserId":1,"DisplayName":2}"#, &s), r#"{"user_id":1,"display_name":2}"#);
        let s = with_siblings("http://json-schema.org/draft-07/schema#");
        assert_eq!(renamed(r#"{"UserId":1,"DisplayName":2}"#, &s), r#"{"user_id":1,"DisplayName":2}"#);
    }

    #[test]
    fn a_fanning_out_schema_is_walked_in_bounded_time() {
        // Each level refers to the next twenty times, eight levels deep: 20^8
        // paths. Compiling refuses this schema; the walk is bounded anyway.
        let mut defs = Map::new();
        for i in 0..8 {
            let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
            defs.insert(format!("d{i}"), json!({"anyOf": vec![next; 20]}));
        }
        defs.insert("d8".into(), json!({"properties": {"user_name": {}}}));
        let schema = json!({"$defs": defs, "$ref": "#/$defs/d0"});
        let out = crate::normalize::bounds::tests::within(5, move || renamed(r#"{"UserName":1}"#, &schema));
        assert_eq!(out, r#"{"user_name":1}"#);
    }

    #[test]
    fn edit_distance() {
        let c = |s: &str| s.chars().collect::<Vec<_>>();
        assert!(within_one_edit(&c("abcde"), &c("abcde")));
        assert!(within_one_edit(&c("abcde"), &c("abxde")));
        assert!(within_one_edit(&c("abcde"), &c("abde")));
        assert!(within_one_edit(&c("abcde"), &c("bacde")));
        assert!(!within_one_edit(&c("abcde"), &c("baxde")));
        assert!(!within_one_edit(&c("abcde"), &c("abc")));
    }
}
