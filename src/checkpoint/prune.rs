//! Keeping the store within its byte budget: objects nothing refers to (neither the index nor
//! a checkpoint) go first; then the oldest checkpoints, one at a time, each id remembered as
//! pruned so the listing and a rewind can say so.

use std::collections::HashSet;

use super::store::Objects;
use super::Inner;

/// Removes every object neither the index, a checkpoint nor `protect` (the before states of
/// calls in progress) refers to.
pub(crate) fn collect_garbage(inner: &mut Inner, objects: &Objects, protect: &HashSet<String>) {
    let mut used: HashSet<&str> = protect.iter().map(String::as_str).collect();
    for (_, state) in inner.index.values() {
        used.extend(state.object());
    }
    for cp in &inner.log.checkpoints {
        for c in &cp.changes {
            used.extend(c.before.object());
            used.extend(c.after.object());
        }
    }
    let unused: Vec<String> = inner
        .sizes
        .keys()
        .filter(|h| !used.contains(h.as_str()))
        .cloned()
        .collect();
    for h in unused {
        objects.remove(&h);
        inner.sizes.remove(&h);
    }
}

/// Brings the store within `budget_bytes` (see the module doc). The baseline the index refers
/// to is never pruned: a store whose baseline alone is over the budget keeps it.
/// `protect`: objects kept whatever the budget (see [`collect_garbage`]).
/// Returns whether a checkpoint was pruned.
pub(crate) fn prune(
    inner: &mut Inner,
    objects: &Objects,
    budget_bytes: u64,
    protect: &HashSet<String>,
) -> bool {
    if inner.store_bytes() <= budget_bytes {
        return false;
    }
    collect_garbage(inner, objects, protect);
    let mut pruned = false;
    while inner.store_bytes() > budget_bytes && !inner.log.checkpoints.is_empty() {
        let cp = inner.log.checkpoints.remove(0);
        inner.log.pruned.push(cp.id);
        pruned = true;
        collect_garbage(inner, objects, protect);
    }
    pruned
}
