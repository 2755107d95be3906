//! The cascades discovery built for a drill, as the report shows them:
//! each model with why it is at its place and what it costs, then what
//! discovery said about the build (notes) and what it left out and why.
//! Without it a report of a discovered cascade says how much traffic went
//! to paid models but not why the cascade put a paid model where it did.

use crate::discovery::BuiltCascade;
use serde::Serialize;
use std::fmt::Write as _;

/// One discovered cascade as built before the first request.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Discovered {
    /// The models in the order the runner tries them.
    pub models: Vec<Placed>,
    /// What discovery said about the build (a preferred model missing,
    /// `min_other_providers` not met, a paid model ahead of free ones).
    pub notes: Vec<String>,
    /// Models left out for what their listing did not say, and preferred
    /// ones left out for any reason, each with why (and the fix).
    pub left_out: Vec<String>,
}

/// One model of a built cascade.
#[derive(Debug, Clone, Serialize)]
pub struct Placed {
    /// `provider/id`.
    pub model: String,
    /// Why it is here and at this place (`preferred #1`, `free, by ttft …`).
    pub reason: String,
    /// `free`, `$0.14/M` (the larger of input and output) or `price unknown`.
    pub price: String,
}

impl From<&BuiltCascade> for Discovered {
    fn from(b: &BuiltCascade) -> Self {
        let price = |m: &crate::discovery::ModelMeta| match (m.free, m.max_price_per_1m()) {
            (true, _) => "free".to_string(),
            (false, Some(p)) => format!("${p}/M"),
            (false, None) => "price unknown".to_string(),
        };
        Self {
            models: b
                .entries
                .iter()
                .map(|e| Placed { model: e.model_ref.clone(), reason: e.reason.to_string(), price: price(&e.meta) })
                .collect(),
            notes: b.notes.clone(),
            left_out: b.left_out.iter().map(ToString::to_string).collect(),
        }
    }
}

impl Discovered {
    /// The lines of the text report, indented under the cascade.
    pub fn text(&self) -> String {
        let mut out = String::from("  built by discovery:\n");
        for (i, m) in self.models.iter().enumerate() {
            let _ = writeln!(out, "    {:>2}. {:<44} {:<14} {}", i + 1, m.model, m.price, m.reason);
        }
        for n in &self.notes {
            let _ = writeln!(out, "    note: {n}");
        }
        // A preferred model left out is a note already.
        for l in self.left_out.iter().filter(|l| !self.notes.contains(l)) {
            let _ = writeln!(out, "    left out: {l}");
        }
        out
    }
}
