//! The Unicode look-alike hint on a workspace: a missing `café.txt` whose directory holds
//! `cafe\u0301.txt` ([`crate::fs::root::lookalike`], the same rule and texts as on a host
//! directory). The names come from `list_dir` of each parent the rule needs; the caller
//! asks [`Remote::lookalike`] again with each listing it asked for until it is done.

use std::collections::HashMap;

use super::*;
use crate::fs::root::lookalike::{respelled, twin_among};

/// The listings handed in: directory path to its entries' `(name, is_dir)`, `None` when
/// the backend could not list it.
pub type Listings = HashMap<String, Option<Vec<(String, bool)>>>;

/// What [`Remote::lookalike`] needs or found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookalike {
    /// List this directory and ask again.
    List(String),
    /// Done: the path as the model would write it with the look-alike spelling of each
    /// missing component, or `None` when there is no look-alike.
    Found(Option<String>),
}

impl Remote {
    /// `path` (resolved: `resolved`) as the model would write it with the existing look-alike
    /// spelling of each missing component, from the `listings` of its parents; the
    /// directories the rule needs are asked for one at a time ([`Lookalike::List`]).
    ///
    /// As on a host directory: an ASCII path has none (no listing is asked for), each
    /// component must exist (a directory, but for the last), and the look-alike must be
    /// readable by the access patterns.
    pub fn lookalike(&self, path: &str, resolved: &str, listings: &Listings) -> Lookalike {
        let rel = relpath(resolved, &self.root);
        if rel == "." || rel.is_ascii() || rel.starts_with("../") {
            return Lookalike::Found(None);
        }
        let components: Vec<&str> = rel.split('/').collect();
        let mut dir = self.root.clone();
        let mut swaps: Vec<(String, String)> = Vec::new();
        for (i, asked) in components.iter().enumerate() {
            let last = i + 1 == components.len();
            // An ASCII name has no other spelling: a directory is checked by the listing of
            // something below it, the last component by its parent's listing.
            if asked.is_ascii() && (!last || swaps.is_empty()) {
                if last {
                    return Lookalike::Found(None);
                }
                dir = join(&dir, asked);
                continue;
            }
            let Some(listing) = listings.get(&dir) else {
                return Lookalike::List(dir);
            };
            let Some(names) = listing else {
                return Lookalike::Found(None);
            };
            let usable = |name: &str| names.iter().any(|(n, d)| n == name && (last || *d));
            let found = if usable(asked) {
                asked.to_string()
            } else {
                match twin_among(asked, names.iter().map(|(n, _)| n.as_str())) {
                    Some(found) if !asked.is_ascii() && usable(found) => {
                        swaps.push((asked.to_string(), found.to_string()));
                        found.to_string()
                    }
                    _ => return Lookalike::Found(None),
                }
            };
            dir = join(&dir, &found);
        }
        if swaps.is_empty()
            || self
                .access
                .check(&relpath(&dir, &self.root), false, true)
                .is_err()
        {
            return Lookalike::Found(None);
        }
        Lookalike::Found(Some(respelled(path, &swaps)))
    }
}

/// `message` followed by the look-alike sentence when `existing` is given.
pub(super) fn with_lookalike(message: String, existing: Option<&str>) -> String {
    match existing {
        Some(existing) => format!(
            "{message}. {}",
            crate::fs::root::lookalike::suggestion(existing)
        ),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::tests::limits;

    #[test]
    fn asks_for_the_listings_it_needs() {
        let r = Remote::new("/ws", "/ws", false, &[], &[], &[], limits()).unwrap();
        let nfc = "caf\u{e9}";
        let nfd = "cafe\u{301}";
        let mut listings = Listings::new();
        assert_eq!(
            r.lookalike("a/b.txt", "/ws/a/b.txt", &listings),
            Lookalike::Found(None)
        );
        let asked = format!("{nfc}/x.txt");
        let resolved = format!("/ws/{asked}");
        assert_eq!(
            r.lookalike(&asked, &resolved, &listings),
            Lookalike::List("/ws".into())
        );
        listings.insert("/ws".into(), Some(vec![(nfd.into(), true)]));
        assert_eq!(
            r.lookalike(&asked, &resolved, &listings),
            Lookalike::List(format!("/ws/{nfd}"))
        );
        listings.insert(format!("/ws/{nfd}"), Some(vec![("y.txt".into(), false)]));
        assert_eq!(
            r.lookalike(&asked, &resolved, &listings),
            Lookalike::Found(None)
        );
        listings.insert(format!("/ws/{nfd}"), Some(vec![("x.txt".into(), false)]));
        assert_eq!(
            r.lookalike(&asked, &resolved, &listings),
            Lookalike::Found(Some(format!("{nfd}/x.txt")))
        );
    }
}
