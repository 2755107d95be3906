//! Counting, before validation starts, how much work one answer costs
//! against a recursive or large schema.
//!
//! Where it sits: [`crate::normalize::validate::CompiledSchema::check`] asks
//! [`needs_estimate`] for every answer; when it says yes, [`within_budget`]
//! walks the answer with the set of subschemas that apply at each place
//! (with how many ways they got there) and stops as soon as the count passes
//! [`MAX_VALIDATION_WORK`]. An answer over budget is invalid output (the
//! next model is tried), never a stalled request.
//!
//! Why it is needed: a recursive schema such as
//! `{"anyOf": [{"properties": {"x": {"$ref": "#"}}}, {"properties": {"x": {"$ref": "#"}}}]}`
//! is small and has no in-place cycle, but an answer nested `d` deep makes a
//! validator that reports every error try 2^d paths. The count here assumes
//! every branch is tried, so it is an upper bound on the validator's work.

use std::collections::HashMap;

use serde_json::Value;

use super::graph::{Applies, Graph};

/// Schema applications one answer may cost. A real answer against a real
/// schema costs a few hundred to a few thousand.
pub(crate) const MAX_VALIDATION_WORK: u64 = 500_000;

/// One subschema, reduced to what the count needs.
#[derive(Debug, Default)]
struct Node {
    in_place: Vec<u32>,
    /// Sorted by name.
    properties: Vec<(String, u32)>,
    any_member: Vec<u32>,
    positions: Vec<(usize, u32)>,
    any_item: Vec<u32>,
}

/// The schema graph, owned (the compiled schema keeps it; the graph itself
/// borrows the schema).
#[derive(Debug, Default)]
pub(crate) struct Model {
    nodes: Vec<Node>,
}

impl Model {
    pub(crate) fn of(graph: &Graph<'_>) -> Self {
        let nodes = graph
            .nodes
            .iter()
            .map(|g| {
                let mut node = Node::default();
                for (applies, name, to) in &g.edges {
                    let to = u32::try_from(*to).unwrap_or(u32::MAX);
                    match applies {
                        Applies::InPlace => node.in_place.push(to),
                        Applies::Property => node.properties.push((name.clone(), to)),
                        Applies::AnyMember => node.any_member.push(to),
                        Applies::Position => node.positions.push((name.parse().unwrap_or(usize::MAX), to)),
                        Applies::AnyItem => node.any_item.push(to),
                        Applies::Never => {}
                    }
                }
                node.properties.sort();
                node
            })
            .collect();
        Model { nodes }
    }

    fn node(&self, i: u32) -> Option<&Node> {
        self.nodes.get(i as usize)
    }
}

/// Whether an answer's work must be counted: always for a recursive schema;
/// for another, when the answer is large enough that its size times the
/// schema's unrolled size could pass the budget.
pub(crate) fn needs_estimate(expanded: u64, recursive: bool, instance: &Value) -> bool {
    if recursive {
        return true;
    }
    let limit = MAX_VALIDATION_WORK / expanded.max(1);
    let mut count = 0u64;
    let mut stack = vec![instance];
    while let Some(v) = stack.pop() {
        count += 1;
        if count > limit {
            return true;
        }
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    false
}

/// Whether validating `instance` costs at most [`MAX_VALIDATION_WORK`]
/// schema applications.
pub(crate) fn within_budget(model: &Model, instance: &Value) -> bool {
    let mut work = 0u64;
    let mut spend = |n: u64| {
        work = work.saturating_add(n);
        work <= MAX_VALIDATION_WORK
    };
    let mut stack: Vec<(&Value, Vec<(u32, u64)>)> = vec![(instance, vec![(0, 1)])];
    while let Some((value, applied)) = stack.pop() {
        // Every in-place path counts: two `anyOf` branches that both refer
        // to the same schema apply it twice.
        let mut closure: HashMap<u32, u64> = HashMap::new();
        let mut pending = applied;
        while let Some((n, ways)) = pending.pop() {
            if !spend(ways) {
                return false;
            }
            let entry = closure.entry(n).or_default();
            *entry = entry.saturating_add(ways);
            pending.extend(model.node(n).into_iter().flat_map(|node| node.in_place.iter().map(move |&c| (c, ways))));
        }
        let nodes = || closure.iter().filter_map(|(&n, &ways)| Some((model.node(n)?, ways)));
        match value {
            Value::Object(map) => {
                for (key, member) in map {
                    let mut next = Vec::new();
                    for (node, ways) in nodes() {
                        if !spend(1) {
                            return false;
                        }
                        if let Ok(i) = node.properties.binary_search_by(|(name, _)| name.as_str().cmp(key)) {
                            next.push((node.properties[i].1, ways));
                        }
                        next.extend(node.any_member.iter().map(|&c| (c, ways)));
                    }
                    if !next.is_empty() {
                        stack.push((member, next));
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let mut next = Vec::new();
                    for (node, ways) in nodes() {
                        if !spend(1) {
                            return false;
                        }
                        next.extend(node.positions.iter().filter(|(p, _)| *p == i).map(|&(_, c)| (c, ways)));
                        next.extend(node.any_item.iter().map(|&c| (c, ways)));
                    }
                    if !next.is_empty() {
                        stack.push((item, next));
                    }
                }
            }
            _ => {}
        }
    }
    true
}
