//! The graph of a schema: every subschema reachable from the root, with the
//! edges a validator follows, and `$ref`s resolved inside the document.
//!
//! Where it sits: built once per distinct schema by [`super::check`], before
//! the `jsonschema` crate ever sees the schema; the cycle and size checks run
//! on it, and [`super::work`] keeps a compact copy for recursive schemas.
//!
//! An edge is *in place* when the subschema applies to the same value
//! (`allOf`/`anyOf`/`oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`,
//! `$ref`) and a *child* edge when it applies to a part of the value
//! (`properties`, `items`, ...). A cycle of in-place edges makes a validator
//! loop without consuming any input; a cycle through a child edge is an
//! ordinary recursive schema (a tree of comments) and ends with the value.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::SchemaProblem;
use crate::normalize::draft::Draft;
pub(crate) use crate::normalize::keywords::Applies;
use crate::normalize::keywords::{MAP_KEYWORDS, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, SCHEMA_KEYWORDS};

/// The subschemas directly inside a schema object: how each applies, the
/// JSON-pointer segments that lead to it, and a name (the property name for
/// [`Applies::Property`], the position for [`Applies::Position`]).
pub(crate) fn subschemas<'s>(
    map: &'s Map<String, Value>,
    draft: Draft,
) -> impl Iterator<Item = (Applies, String, &'s Value)> + 's {
    let single = SCHEMA_KEYWORDS.iter().filter_map(move |(kw, applies)| map.get(*kw).map(|v| (*kw, *applies, v)));
    let single = single.flat_map(move |(kw, applies, v)| -> Vec<(Applies, String, &'s Value)> {
        match v {
            Value::Array(items) => {
                // Tuple `items` of draft-04..2019-09 works like `prefixItems`.
                let applies = match (kw, applies) {
                    ("items", _) if draft.array_items_are_tuples() => Applies::Position,
                    (_, a) => a,
                };
                items.iter().enumerate().map(|(i, s)| (applies, format!("{kw}/{i}"), s)).collect()
            }
            Value::Object(_) | Value::Bool(_) => vec![(applies, kw.to_owned(), v)],
            _ => Vec::new(),
        }
    });
    let maps = MAP_KEYWORDS
        .iter()
        .filter_map(move |(kw, applies)| map.get(*kw).and_then(Value::as_object).map(|m| (*kw, *applies, m)));
    let maps = maps.flat_map(|(kw, applies, m)| {
        m.iter()
            .filter(|(_, s)| s.is_object() || s.is_boolean())
            .map(move |(name, s)| (applies, format!("{kw}/{}", escape(name)), s))
    });
    single.chain(maps)
}

/// A JSON-pointer segment for a name (RFC 6901).
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// One subschema of the graph.
#[derive(Debug)]
pub(crate) struct Node<'s> {
    pub value: &'s Value,
    /// Where it is, as `#/$defs/a`, for error messages.
    pub pointer: String,
    /// `(how it applies, name, node index)`.
    pub edges: Vec<(Applies, String, usize)>,
}

/// Every subschema reachable from the root, `$ref`s resolved.
#[derive(Debug)]
pub(crate) struct Graph<'s> {
    pub nodes: Vec<Node<'s>>,
}

/// A `$ref`-like keyword waiting to be resolved once every anchor is known.
struct PendingRef<'s> {
    from: usize,
    keyword: &'static str,
    reference: &'s str,
    /// The schema resource the reference is relative to.
    base: &'s Value,
}

struct Builder<'s> {
    root: &'s Value,
    draft: Draft,
    nodes: Vec<Node<'s>>,
    by_addr: HashMap<usize, usize>,
    /// `$id` values → their resource.
    ids: HashMap<&'s str, &'s Value>,
    /// Anchor names (`$anchor`, `$dynamicAnchor`, draft-06/07 `$id: "#x"`) → schema.
    anchors: HashMap<&'s str, Vec<&'s Value>>,
    /// Resources with `$recursiveAnchor: true` (2019-09 dynamic scope).
    recursive_anchors: Vec<&'s Value>,
    pending: Vec<PendingRef<'s>>,
}

fn addr(v: &Value) -> usize {
    std::ptr::from_ref(v) as usize
}

impl<'s> Graph<'s> {
    /// Walks the schema from the root; `Err` when it is too large, too deep,
    /// or refers to something outside itself.
    pub(crate) fn build(root: &'s Value, draft: Draft) -> Result<Self, SchemaProblem> {
        let mut b = Builder {
            root,
            draft,
            nodes: Vec::new(),
            by_addr: HashMap::new(),
            ids: HashMap::new(),
            anchors: HashMap::new(),
            recursive_anchors: Vec::new(),
            pending: Vec::new(),
        };
        b.walk(root, "#".to_owned(), root)?;
        // Resolving can reach a value no keyword led to (a `$ref` into
        // `examples`); that value is walked as a schema too, which may add
        // more references: loop until none are left.
        while let Some(p) = b.pending.pop() {
            for target in b.resolve(&p)? {
                let to = match b.by_addr.get(&addr(target)) {
                    Some(&i) => i,
                    None => b.walk(target, p.reference.to_owned(), p.base)?,
                };
                b.nodes[p.from].edges.push((Applies::InPlace, p.keyword.to_owned(), to));
            }
        }
        Ok(Graph { nodes: b.nodes })
    }
}

impl<'s> Builder<'s> {
    /// Adds `value` and everything under it; returns its index.
    fn walk(&mut self, value: &'s Value, pointer: String, base: &'s Value) -> Result<usize, SchemaProblem> {
        let start = self.add(value, pointer, base)?;
        // An explicit stack: the schema's nesting must not become ours.
        let mut stack = vec![(start, 0usize, base)];
        while let Some((at, depth, enclosing)) = stack.pop() {
            let Value::Object(map) = self.nodes[at].value else { continue };
            let base = self.base_of(map, enclosing);
            for (applies, segment, sub) in subschemas(map, self.draft) {
                if depth + 1 > MAX_SCHEMA_DEPTH {
                    return Err(SchemaProblem::TooDeep { at: self.nodes[at].pointer.clone(), limit: MAX_SCHEMA_DEPTH });
                }
                let child = match self.by_addr.get(&addr(sub)) {
                    Some(&i) => i,
                    None => {
                        let pointer = format!("{}/{segment}", self.nodes[at].pointer);
                        let i = self.add(sub, pointer, base)?;
                        stack.push((i, depth + 1, base));
                        i
                    }
                };
                let name = match applies {
                    Applies::Property => segment.split_once('/').map_or(String::new(), |(_, n)| unescape(n)),
                    Applies::Position => segment.rsplit('/').next().unwrap_or_default().to_owned(),
                    _ => String::new(),
                };
                self.nodes[at].edges.push((applies, name, child));
            }
        }
        Ok(start)
    }

    fn add(&mut self, value: &'s Value, pointer: String, enclosing: &'s Value) -> Result<usize, SchemaProblem> {
        if self.nodes.len() >= MAX_SCHEMA_NODES {
            return Err(SchemaProblem::TooLarge { limit: MAX_SCHEMA_NODES });
        }
        let index = self.nodes.len();
        self.by_addr.insert(addr(value), index);
        if let Value::Object(map) = value {
            self.note_names(map, value);
            let base = self.base_of(map, enclosing);
            for keyword in ["$ref", "$dynamicRef", "$recursiveRef"] {
                if let Some(reference) = map.get(keyword).and_then(Value::as_str) {
                    self.pending.push(PendingRef { from: index, keyword, reference, base });
                }
            }
        }
        self.nodes.push(Node { value, pointer, edges: Vec::new() });
        Ok(index)
    }

    /// The resource a schema object's references are relative to: itself
    /// when it carries an `$id` that names a resource, else the enclosing one.
    fn base_of(&self, map: &'s Map<String, Value>, enclosing: &'s Value) -> &'s Value {
        match map.get(self.draft.id_keyword()).and_then(Value::as_str) {
            Some(id) if !id.starts_with('#') => self.ids.get(id.trim_end_matches('#')).copied().unwrap_or(enclosing),
            _ => enclosing,
        }
    }

    fn note_names(&mut self, map: &'s Map<String, Value>, value: &'s Value) {
        if let Some(id) = map.get(self.draft.id_keyword()).and_then(Value::as_str) {
            match id.strip_prefix('#') {
                Some(anchor) if !anchor.is_empty() => self.anchors.entry(anchor).or_default().push(value),
                Some(_) => {}
                None => {
                    self.ids.entry(id.trim_end_matches('#')).or_insert(value);
                }
            }
        }
        for keyword in ["$anchor", "$dynamicAnchor"] {
            if let Some(anchor) = map.get(keyword).and_then(Value::as_str) {
                self.anchors.entry(anchor).or_default().push(value);
            }
        }
        if map.get("$recursiveAnchor") == Some(&Value::Bool(true)) {
            self.recursive_anchors.push(value);
        }
    }

    /// The schemas a reference may lead to: one for `$ref`; for the dynamic
    /// references every schema the dynamic scope could pick, since which one
    /// applies depends on the path the validator took.
    fn resolve(&self, p: &PendingRef<'s>) -> Result<Vec<&'s Value>, SchemaProblem> {
        let unresolved = || SchemaProblem::UnresolvedRef {
            at: self.nodes[p.from].pointer.clone(),
            reference: p.reference.chars().take(200).collect(),
        };
        let (resource, fragment) = match p.reference.split_once('#') {
            None => (self.resource(p.reference).ok_or_else(unresolved)?, ""),
            Some(("", fragment)) => (p.base, fragment),
            Some((base, fragment)) => (self.resource(base).ok_or_else(unresolved)?, fragment),
        };
        let mut targets = Vec::new();
        if fragment.is_empty() {
            targets.push(resource);
        } else if fragment.starts_with('/') {
            let decoded = percent_encoding::percent_decode_str(fragment).decode_utf8_lossy();
            targets.push(resource.pointer(&decoded).ok_or_else(unresolved)?);
        } else {
            targets.extend(self.anchors.get(fragment).into_iter().flatten().copied());
        }
        match p.keyword {
            "$recursiveRef" => targets.extend(self.recursive_anchors.iter().copied()),
            "$dynamicRef" if !fragment.starts_with('/') => {}
            _ => targets.truncate(1),
        }
        if targets.is_empty() {
            return Err(unresolved());
        }
        Ok(targets)
    }

    /// A resource named by the part of a reference before `#`: an `$id`
    /// of the document, matched whole (as the validator resolves it; a
    /// relative reference has no base to resolve against). Nothing is ever
    /// fetched.
    fn resource(&self, base: &str) -> Option<&'s Value> {
        if base.is_empty() {
            return Some(self.root);
        }
        self.ids.get(base).copied()
    }
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}
