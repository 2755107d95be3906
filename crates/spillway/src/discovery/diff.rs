//! What changed between two builds of one cascade, for the "cascade
//! changed" alert and `spillway discover` (SPEC §4):
//! `extraction: +groq/qwen3-235b, -groq/llama-guard-4 (removed)`.
//!
//! A model that left while a newer version of the same family arrived is
//! reported once as an upgrade rather than as a removal plus an addition;
//! see [`family_version`] for what "same family, newer" means.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::model::parse_size_token;

/// The changes from one cascade build to the next.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CascadeDiff {
    /// The cascade's name.
    pub cascade: String,
    /// New model refs, in their new order.
    pub added: Vec<String>,
    /// Model refs no longer there, in their old order.
    pub removed: Vec<String>,
    /// A model replaced by a newer version of its family.
    pub upgraded: Vec<Upgrade>,
    /// Models in both whose order relative to the others changed. A model
    /// that only shifted because others came or went is not "moved".
    pub moved: Vec<Move>,
}

/// `from` was replaced by `to`, a newer version of the same family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Upgrade {
    /// The model ref that left.
    pub from: String,
    /// The model ref that came.
    pub to: String,
}

/// A model whose place changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    /// The model ref.
    pub model_ref: String,
    /// 1-based rank in the old cascade.
    pub from: usize,
    /// 1-based rank in the new cascade.
    pub to: usize,
}

impl CascadeDiff {
    /// Nothing changed: no alert.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.upgraded.is_empty() && self.moved.is_empty()
    }
}

impl fmt::Display for CascadeDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.cascade)?;
        if self.is_empty() {
            return f.write_str("unchanged");
        }
        let mut sep = "";
        for r in &self.added {
            write!(f, "{sep}+{r}")?;
            sep = ", ";
        }
        for r in &self.removed {
            write!(f, "{sep}-{r} (removed)")?;
            sep = ", ";
        }
        for u in &self.upgraded {
            write!(f, "{sep}{} → {} (upgraded)", u.from, u.to)?;
            sep = ", ";
        }
        for m in &self.moved {
            write!(f, "{sep}{} (moved #{} -> #{})", m.model_ref, m.from, m.to)?;
            sep = ", ";
        }
        Ok(())
    }
}

/// Diffs two orderings of the cascade `cascade` (model refs, first tried
/// first).
pub fn diff(cascade: &str, old: &[String], new: &[String]) -> CascadeDiff {
    let mut removed: Vec<&String> = old.iter().filter(|r| !new.contains(r)).collect();
    let mut added: Vec<&String> = new.iter().filter(|r| !old.contains(r)).collect();

    let mut upgraded = Vec::new();
    removed.retain(|gone| {
        let (family, version) = family_version(gone);
        let newest = added
            .iter()
            .enumerate()
            .filter_map(|(i, a)| {
                let (f, v) = family_version(a);
                (f == family && v > version).then_some((i, v))
            })
            .max_by(|a, b| a.1.cmp(&b.1));
        match newest {
            Some((i, _)) => {
                upgraded.push(Upgrade { from: (*gone).clone(), to: added.remove(i).clone() });
                false
            }
            None => true,
        }
    });

    CascadeDiff {
        cascade: cascade.to_owned(),
        added: added.into_iter().cloned().collect(),
        removed: removed.into_iter().cloned().collect(),
        upgraded,
        moved: moves(old, new),
    }
}

/// Models kept in both lists that are not on a longest run whose relative
/// order held (a longest increasing subsequence of old positions taken in
/// new order). Cascades are short, so the quadratic LIS is fine.
fn moves(old: &[String], new: &[String]) -> Vec<Move> {
    // (old index, new index) of the kept models, in new order.
    let kept: Vec<(usize, usize)> =
        new.iter().enumerate().filter_map(|(ni, r)| old.iter().position(|o| o == r).map(|oi| (oi, ni))).collect();
    let n = kept.len();
    let mut len = vec![1usize; n];
    let mut prev = vec![usize::MAX; n];
    for i in 0..n {
        for j in 0..i {
            if kept[j].0 < kept[i].0 && len[j] + 1 > len[i] {
                len[i] = len[j] + 1;
                prev[i] = j;
            }
        }
    }
    let mut in_order = vec![false; n];
    let mut at = (0..n).max_by_key(|&i| (len[i], std::cmp::Reverse(i)));
    while let Some(i) = at {
        in_order[i] = true;
        at = (prev[i] != usize::MAX).then_some(prev[i]);
    }
    kept.iter()
        .zip(in_order)
        .filter(|(_, stayed)| !stayed)
        .map(|(&(oi, ni), _)| Move { model_ref: new[ni].clone(), from: oi + 1, to: ni + 1 })
        .collect()
}

/// A model version: release numbers first (`3.3` → `[3, 3]`), then numbers
/// of four or more digits (dates such as `20250514`, snapshots such as
/// `0613`) as a tie-break, so `claude-sonnet-4-5-20250929` is newer than
/// `claude-sonnet-4-20250514`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Version {
    /// Release numbers in id order.
    pub release: Vec<u64>,
    /// Long numbers in id order.
    pub dates: Vec<u64>,
}

/// Splits a model ref (or id) into its family and its version.
///
/// The lower-cased ref is cut into tokens at `-`, `_`, `:`, `/`, `@`, and
/// tokens into letter and number runs. Number runs (with their dots) are the
/// version; everything else, including whole size tokens such as `70b`,
/// `8x7b` and `a22b`, is the family, with each stretch of version numbers
/// written as `#`. So `groq/llama-3.1-70b-versatile` and
/// `groq/llama-3.3-70b-versatile` are both `groq/llama/#/70b/versatile`
/// (separators normalised), and `qwen2.5-32b` and `qwen3-32b` are both
/// `qwen/#/32b`. The size is part of the family on purpose: a 70B model
/// replaced by an 8B one is not an upgrade.
pub fn family_version(model_ref: &str) -> (String, Version) {
    let lower = model_ref.to_ascii_lowercase();
    let mut family = String::with_capacity(lower.len());
    let mut version = Version::default();
    // Consecutive number runs (`3-5` in `claude-3-5-sonnet`) are one `#`.
    let mut in_version = false;
    for token in lower.split(['-', '_', ':', '/', '@']).filter(|t| !t.is_empty()) {
        let is_size =
            parse_size_token(token).is_some() || token.strip_prefix('a').is_some_and(|t| parse_size_token(t).is_some());
        if is_size {
            push_part(&mut family, token);
            in_version = false;
            continue;
        }
        for run in runs(token) {
            if !run.starts_with(|c: char| c.is_ascii_digit()) {
                push_part(&mut family, run);
                in_version = false;
                continue;
            }
            for number in run.split('.').filter(|n| !n.is_empty()) {
                // More digits than u64 holds: still a number, just a huge one.
                let value = number.parse::<u64>().unwrap_or(u64::MAX);
                if number.len() >= 4 {
                    version.dates.push(value);
                } else {
                    version.release.push(value);
                }
            }
            if !in_version {
                push_part(&mut family, "#");
                in_version = true;
            }
        }
    }
    (family, version)
}

fn push_part(family: &mut String, part: &str) {
    if !family.is_empty() {
        family.push('/');
    }
    family.push_str(part);
}

/// Splits `qwen2.5` into `qwen`, `2.5`: runs of digits-and-dots and runs of
/// anything else. A dot only belongs to a number when a digit precedes it.
fn runs(token: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev_digit: Option<bool> = None;
    for (i, c) in token.char_indices() {
        let digit = c.is_ascii_digit() || (c == '.' && prev_digit == Some(true));
        if prev_digit.is_some_and(|p| p != digit) {
            out.push(&token[start..i]);
            start = i;
        }
        prev_digit = Some(digit);
    }
    if start < token.len() {
        out.push(&token[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn families_and_versions() {
        let (f1, v1) = family_version("groq/llama-3.1-70b-versatile");
        let (f2, v2) = family_version("groq/llama-3.3-70b-versatile");
        assert_eq!(f1, "groq/llama/#/70b/versatile");
        assert_eq!(f1, f2);
        assert!(v2 > v1);

        let (f1, v1) = family_version("groq/qwen2.5-32b");
        let (f2, v2) = family_version("groq/qwen3-32b");
        assert_eq!((f1.as_str(), v1.release.as_slice()), ("groq/qwen/#/32b", &[2, 5][..]));
        assert_eq!(f1, f2);
        assert!(v2 > v1);

        let (f1, v1) = family_version("anthropic/claude-sonnet-4-20250514");
        let (f2, v2) = family_version("anthropic/claude-sonnet-4-5-20250929");
        assert_eq!(f1, f2);
        assert!(v2 > v1, "release numbers outrank dates");

        let (f1, _) = family_version("or/qwen/qwen3-235b-a22b");
        assert_eq!(f1, "or/qwen/qwen/#/235b/a22b");
        assert_ne!(family_version("groq/llama-3.1-8b-instant").0, family_version("groq/llama-3.3-70b-versatile").0);
        assert_ne!(family_version("x/gemma-3-27b-it:free").0, family_version("x/gemma-3-27b-it").0);
    }

    #[test]
    fn added_and_removed_in_the_issue_wording() {
        let old = refs(&["groq/llama-3.3-70b-versatile", "groq/llama-guard-4"]);
        let new = refs(&["groq/llama-3.3-70b-versatile", "groq/qwen3-235b"]);
        let d = diff("extraction", &old, &new);
        assert_eq!(d.to_string(), "extraction: +groq/qwen3-235b, -groq/llama-guard-4 (removed)");
        assert!(!d.is_empty());
    }

    #[test]
    fn upgrade_replaces_add_and_remove() {
        let old = refs(&["groq/llama-3.1-70b-versatile", "or/a"]);
        let new = refs(&["groq/llama-3.2-70b-versatile", "groq/llama-3.3-70b-versatile", "or/a"]);
        let d = diff("x", &old, &new);
        assert_eq!(
            d.upgraded,
            vec![Upgrade { from: old[0].clone(), to: "groq/llama-3.3-70b-versatile".into() }],
            "the newest replacement is paired"
        );
        assert_eq!(d.added, vec!["groq/llama-3.2-70b-versatile".to_owned()]);
        assert!(d.removed.is_empty());
        assert_eq!(
            d.to_string(),
            "x: +groq/llama-3.2-70b-versatile, groq/llama-3.1-70b-versatile → groq/llama-3.3-70b-versatile (upgraded)"
        );
    }

    #[test]
    fn a_free_gemini_id_change_reads_as_an_upgrade() {
        let old = refs(&["openrouter/google/gemini-2.0-flash:free", "groq/x"]);
        let new = refs(&["openrouter/google/gemini-2.5-flash:free", "groq/x"]);
        assert_eq!(
            diff("chat", &old, &new).to_string(),
            "chat: openrouter/google/gemini-2.0-flash:free → openrouter/google/gemini-2.5-flash:free (upgraded)"
        );
    }

    #[test]
    fn an_older_version_is_not_an_upgrade() {
        let d = diff("x", &refs(&["p/qwen3-32b"]), &refs(&["p/qwen2.5-32b"]));
        assert!(d.upgraded.is_empty());
        assert_eq!((d.added.len(), d.removed.len()), (1, 1));
    }

    #[test]
    fn shifts_are_not_moves_but_reorders_are() {
        let old = refs(&["a/1", "a/2", "a/3", "a/4"]);
        let shifted = refs(&["a/0", "a/1", "a/2", "a/3", "a/4"]);
        assert!(diff("c", &old, &shifted).moved.is_empty());

        let reordered = refs(&["a/4", "a/1", "a/2", "a/3"]);
        let d = diff("c", &old, &reordered);
        assert_eq!(d.moved, vec![Move { model_ref: "a/4".into(), from: 4, to: 1 }]);
        assert_eq!(d.to_string(), "c: a/4 (moved #4 -> #1)");
    }

    #[test]
    fn nothing_changed() {
        let same = refs(&["a/1", "b/2"]);
        let d = diff("c", &same, &same);
        assert!(d.is_empty());
        assert_eq!(d.to_string(), "c: unchanged");
        assert!(diff("c", &[], &[]).is_empty());
    }
}
