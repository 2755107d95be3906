//! Bounds on client schemas: every schema a client sends is untrusted input,
//! and this is where it is measured before anything walks it.
//!
//! Where it sits: [`super::validate::CompiledSchema::compile`] calls
//! [`check`] before the `jsonschema` crate compiles the schema; a schema that
//! fails is refused with a 400 naming the problem (`$ref` cycle at
//! `#/$defs/a`), before any model is called. What passes carries its
//! [`Bounds`], which the validator, the renamer and the mock's sampler rely on:
//!
//! - at most [`MAX_SCHEMA_NODES`](crate::normalize::keywords::MAX_SCHEMA_NODES) subschemas, nested at most
//!   [`MAX_SCHEMA_DEPTH`](crate::normalize::keywords::MAX_SCHEMA_DEPTH) deep (the walk keeps its own stack);
//! - every `$ref` resolves inside the document (nothing is fetched);
//! - no cycle of `$ref`s that applies no property or item: such a cycle
//!   (`a → b → a`) makes validation loop forever without reading the value —
//!   the one that grew memory by hundreds of MB a second;
//! - the schema unrolled through its `$ref`s (each recursion once) stays
//!   under [`MAX_EXPANDED`] subschemas, so a small document cannot stand for
//!   an exponential one (`a: anyOf[b, b]`, `b: anyOf[c, c]`, ...);
//! - a recursive schema (a tree of comments) could still multiply work with
//!   the depth of the *answer*; for those, and for large ones, [`work`]
//!   bounds the validation of each answer before it starts.
//!
//! Time is bounded through work, not a clock: every walk here and in the
//! validator is proportional to a number capped above, and the regexes of
//! `pattern` run with a backtracking limit.

pub(crate) mod graph;
pub(crate) mod work;

#[cfg(test)]
pub(crate) mod tests;

use graph::{Applies, Graph};

use crate::normalize::draft::Draft;

#[cfg(test)]
use crate::normalize::keywords::{MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES};

/// Subschemas of the schema unrolled through its `$ref`s.
pub(crate) const MAX_EXPANDED: u64 = 50_000;

/// A non-recursive schema that unrolls to fewer subschemas than this is
/// validated without counting work first when the answer is small (see
/// [`work::needs_estimate`]).
const SMALL_EXPANDED: u64 = 1_000;

/// Why a schema is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchemaProblem {
    /// More subschemas than [`MAX_SCHEMA_NODES`](crate::normalize::keywords::MAX_SCHEMA_NODES).
    #[error("the schema has more than {limit} subschemas")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// Nested deeper than [`MAX_SCHEMA_DEPTH`](crate::normalize::keywords::MAX_SCHEMA_DEPTH).
    #[error("the schema nests deeper than {limit} levels at {at}")]
    TooDeep {
        /// Where the limit was reached.
        at: String,
        /// The limit.
        limit: usize,
    },
    /// A `$ref` that does not resolve inside the schema.
    #[error("`$ref` {reference:?} at {at} does not resolve inside the schema (remote references are not fetched)")]
    UnresolvedRef {
        /// The schema holding the reference.
        at: String,
        /// The reference (cut to 200 characters).
        reference: String,
    },
    /// References that lead back to themselves without applying a property
    /// or item in between.
    #[error(
        "`$ref` cycle at {at}: {path} applies no property or item in between, so checking a value would never end"
    )]
    RefCycle {
        /// The first schema of the cycle.
        at: String,
        /// The cycle, `#/$defs/a → #/$defs/b → #/$defs/a`.
        path: String,
    },
    /// Unrolled through its `$ref`s, more than [`MAX_EXPANDED`] subschemas.
    #[error("the schema unrolls to more than {limit} subschemas through its `$ref`s")]
    TooComplex {
        /// The limit.
        limit: u64,
    },
}

/// What [`check`] measured, kept with the compiled schema.
#[derive(Debug)]
pub(crate) struct Bounds {
    /// Subschemas of the schema unrolled (recursions counted once).
    pub expanded: u64,
    /// A `$ref` leads back to an enclosing schema through a property or
    /// item: answers can be as deep as they like.
    pub recursive: bool,
    /// The compact graph that [`work::estimate`] runs on; only for schemas
    /// whose answers need their work counted.
    pub work: Option<work::Model>,
}

/// Measures a schema; `Err` names the first problem found.
pub(crate) fn check(schema: &serde_json::Value, draft: Draft) -> Result<Bounds, SchemaProblem> {
    let graph = Graph::build(schema, draft)?;
    let applied = applied_from_root(&graph);
    find_in_place_cycle(&graph, &applied)?;
    let (expanded, recursive) = expansion(&graph)?;
    let work = (recursive || expanded > SMALL_EXPANDED).then(|| work::Model::of(&graph));
    Ok(Bounds { expanded, recursive, work })
}

fn applies(a: Applies) -> bool {
    a != Applies::Never
}

/// Which subschemas a validator can reach from the root (a `$defs` entry
/// nothing refers to is never applied, so its shape does not matter).
fn applied_from_root(graph: &Graph<'_>) -> Vec<bool> {
    let mut seen = vec![false; graph.nodes.len()];
    let mut stack = vec![0];
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut seen[n], true) {
            continue;
        }
        stack.extend(graph.nodes[n].edges.iter().filter(|(a, _, _)| applies(*a)).map(|(_, _, to)| *to));
    }
    seen
}

/// A cycle made only of in-place edges, from any applied subschema.
fn find_in_place_cycle(graph: &Graph<'_>, applied: &[bool]) -> Result<(), SchemaProblem> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark = vec![Mark::New; graph.nodes.len()];
    for start in (0..graph.nodes.len()).filter(|&n| applied[n]) {
        if mark[start] != Mark::New {
            continue;
        }
        // (node, next edge to look at)
        let mut stack = vec![(start, 0usize)];
        mark[start] = Mark::Open;
        while let Some(&(n, next)) = stack.last() {
            let edges = &graph.nodes[n].edges;
            let found =
                edges.iter().enumerate().skip(next).find(|(_, e)| e.0 == Applies::InPlace).map(|(i, e)| (i, e.2));
            let Some((i, to)) = found else {
                mark[n] = Mark::Done;
                stack.pop();
                continue;
            };
            if let Some(top) = stack.last_mut() {
                top.1 = i + 1;
            }
            match mark[to] {
                Mark::Done => {}
                Mark::New => {
                    mark[to] = Mark::Open;
                    stack.push((to, 0));
                }
                Mark::Open => {
                    let from = stack.iter().position(|(s, _)| *s == to).unwrap_or(0);
                    let mut path: Vec<&str> =
                        stack[from..].iter().map(|(s, _)| graph.nodes[*s].pointer.as_str()).collect();
                    if path.len() > 8 {
                        path.drain(4..path.len() - 3);
                        path.insert(4, "…");
                    }
                    path.push(&graph.nodes[to].pointer);
                    return Err(SchemaProblem::RefCycle {
                        at: graph.nodes[to].pointer.clone(),
                        path: path.join(" → "),
                    });
                }
            }
        }
    }
    Ok(())
}

/// The size of the schema unrolled from the root through applied edges, a
/// recursion (an edge back to a schema being unrolled) counted once; and
/// whether there was one.
fn expansion(graph: &Graph<'_>) -> Result<(u64, bool), SchemaProblem> {
    let mut memo: Vec<Option<u64>> = vec![None; graph.nodes.len()];
    let mut open = vec![false; graph.nodes.len()];
    let mut recursive = false;
    // (node, next edge, size so far)
    let mut stack = vec![(0usize, 0usize, 1u64)];
    open[0] = true;
    while let Some(top) = stack.last_mut() {
        let (n, next) = (top.0, top.1);
        let Some((a, _, to)) = graph.nodes[n].edges.get(next) else {
            let size = top.2;
            open[n] = false;
            memo[n] = Some(size);
            stack.pop();
            if let Some(parent) = stack.last_mut() {
                parent.2 = parent.2.saturating_add(size);
                if parent.2 > MAX_EXPANDED {
                    return Err(SchemaProblem::TooComplex { limit: MAX_EXPANDED });
                }
            }
            continue;
        };
        top.1 += 1;
        if !applies(*a) {
            continue;
        }
        let to = *to;
        if open[to] {
            recursive = true;
            top.2 += 1;
        } else if let Some(size) = memo[to] {
            top.2 = top.2.saturating_add(size);
            if top.2 > MAX_EXPANDED {
                return Err(SchemaProblem::TooComplex { limit: MAX_EXPANDED });
            }
        } else {
            open[to] = true;
            stack.push((to, 0, 1));
        }
    }
    Ok((memo[0].unwrap_or(1), recursive))
}
