//! What the sync job keeps while the store is unreachable.

use super::*;

#[test]
fn kept_changes_keep_the_longest_mark_and_the_latest_revive() {
    let mut pending = HashMap::new();
    remember(&mut pending, "a".into(), Pending::Dead(10, DeadReason::Empty));
    remember(&mut pending, "a".into(), Pending::Dead(5, DeadReason::NotFound));
    assert!(matches!(pending.get("a"), Some(Pending::Dead(10, DeadReason::Empty))));
    remember(&mut pending, "a".into(), Pending::Revived);
    assert!(matches!(pending.get("a"), Some(Pending::Revived)));
    assert!(keep(LocalChange::Outcome { key: "a".into(), failed: true }).is_none());
}

#[test]
fn quality_demotions_are_kept_apart_from_dead_marks_and_the_longest_wins() {
    use crate::quality::Signal;
    let mut pending = HashMap::new();
    remember(&mut pending, "m".into(), Pending::Dead(10, DeadReason::Empty));
    for change in [
        LocalChange::Demoted { key: "m".into(), until_ms: 50, reason: Signal::WrongScript },
        LocalChange::Demoted { key: "m".into(), until_ms: 20, reason: Signal::Empty },
    ] {
        let (k, p) = keep(change).unwrap();
        remember(&mut pending, k, p);
    }
    assert!(matches!(pending.get("m"), Some(Pending::Dead(10, _))), "the dead mark stays");
    assert!(matches!(pending.get("quality:m"), Some(Pending::Demoted(50, Signal::WrongScript))));
    let (k, p) = keep(LocalChange::Restored { key: "m".into() }).unwrap();
    remember(&mut pending, k, p);
    assert!(matches!(pending.get("quality:m"), Some(Pending::Restored)));
}
