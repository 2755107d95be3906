//! The order a request walks its cascade in: as built, unless a model is
//! demoted for the quality of its answers (`health::quality`) — then the
//! healthy models go first and the demoted ones after them, in their own
//! order, so a demoted model still answers when nothing else can. A
//! demoted model whose period is over takes its own place again for one
//! request in `probe_every` (a probe), never for a burst.
//!
//! What healthy traffic pays: one atomic load per target of a cascade
//! with `quality:` configured.

use super::gate;
use super::pass::Pass;
use super::plan::CascadePlan;
use super::walk::Walk;
use crate::health::clock::now_ms;

/// Which target a walk tries next.
pub enum Cursor {
    /// In the cascade's order, from this index.
    Plain(usize),
    /// Healthy first, demoted after: the indexes left, in order (reversed,
    /// so the next is popped from the end).
    Reordered(Vec<usize>),
}

impl Cursor {
    /// The walk's order for `plan` now.
    pub fn new(plan: &CascadePlan) -> Self {
        if !plan.targets.iter().any(|t| t.quality.is_some() && t.health.quality.demoted_until().is_some()) {
            return Self::Plain(0);
        }
        let now = now_ms();
        let (mut first, mut after) = (Vec::new(), Vec::new());
        for (i, t) in plan.targets.iter().enumerate() {
            let behind = match (t.quality.as_ref(), t.health.quality.demoted_until()) {
                (Some(rule), Some(_)) => !t.health.quality.take_probe(now, rule.probe_every),
                _ => false,
            };
            if behind {
                after.push(i);
            } else {
                first.push(i);
            }
        }
        first.extend(after);
        first.reverse();
        Self::Reordered(first)
    }

    /// The next target that passes its gates, with its pass; the skipped
    /// ones are recorded.
    pub fn next(&mut self, walk: &Walk<'_>) -> Option<(usize, Pass)> {
        let targets = &walk.plan.targets;
        match self {
            Self::Plain(next) => {
                let (i, pass) = gate::next_admitted(walk, targets, *next)?;
                *next = i + 1;
                Some((i, pass))
            }
            Self::Reordered(left) => {
                while let Some(i) = left.pop() {
                    if let Some(pass) = gate::admit_at(walk, targets, i) {
                        return Some((i, pass));
                    }
                }
                None
            }
        }
    }

    /// A hedge tried target `j` too: it is not tried again.
    pub fn tried(&mut self, j: usize) {
        match self {
            Self::Plain(next) => *next = (*next).max(j + 1),
            Self::Reordered(left) => left.retain(|i| *i != j),
        }
    }
}
