//! The bytes each object of the store holds, and their sum, kept up to date as objects come
//! and go: a file tool's checkpoint compares the store with its budget without adding up
//! every object's size (a store holding a large tree's baseline has tens of thousands).

use std::collections::HashMap;

/// Object hash to size in bytes, with the total.
#[derive(Debug, Default, Clone)]
pub(crate) struct Sizes {
    by_hash: HashMap<String, u64>,
    total: u64,
}

impl Sizes {
    /// Counts object `hash` of `size` bytes (once: a second insert replaces its size).
    pub(crate) fn insert(&mut self, hash: String, size: u64) {
        if let Some(old) = self.by_hash.insert(hash, size) {
            self.total -= old;
        }
        self.total += size;
    }

    /// Stops counting object `hash`; its size, if it was counted.
    pub(crate) fn remove(&mut self, hash: &str) -> Option<u64> {
        let size = self.by_hash.remove(hash)?;
        self.total -= size;
        Some(size)
    }

    /// Whether object `hash` is counted.
    pub(crate) fn contains_key(&self, hash: &str) -> bool {
        self.by_hash.contains_key(hash)
    }

    /// The hashes counted.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &String> {
        self.by_hash.keys()
    }

    /// The bytes of every object counted.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }
}

impl FromIterator<(String, u64)> for Sizes {
    fn from_iter<I: IntoIterator<Item = (String, u64)>>(iter: I) -> Sizes {
        let mut sizes = Sizes::default();
        for (hash, size) in iter {
            sizes.insert(hash, size);
        }
        sizes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_total_follows_inserts_replacements_and_removals() {
        let mut s: Sizes = [("a".to_string(), 3), ("b".to_string(), 4)]
            .into_iter()
            .collect();
        assert_eq!(s.total(), 7);
        s.insert("a".into(), 5); // the same object counted again: replaced, not added
        assert_eq!(s.total(), 9);
        assert_eq!(s.remove("b"), Some(4));
        assert_eq!(s.remove("b"), None);
        assert_eq!(s.total(), 5);
        assert!(s.contains_key("a") && !s.contains_key("b"));
    }
}
