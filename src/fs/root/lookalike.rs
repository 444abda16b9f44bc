//! Names that differ only in Unicode normalization (`café` composed, NFC, vs `cafe` + U+0301,
//! NFD): a path the model spells one way while the tree spells it the other.
//!
//! Linux compares names byte for byte, so such a path is "not found" and a write creates a
//! second, look-alike file (the reference does both silently; issue 9). Here a miss says which
//! spelling exists, escaped so the model can pass it exactly (`"cafe\u0301.txt"` is the NFD
//! name as a JSON string), and `FileSystem::refuse_lookalike` stops `write_file` from
//! creating the twin. Shared by both contracts and the remote backend ([`suggestion`]).

use std::path::Path;

use unicode_normalization::{is_nfc, is_nfd, UnicodeNormalization};

use crate::error::{Error, ErrorKind};
use crate::fs::root::access::Access;
use crate::fs::root::path::{Resolved, Root};
use crate::fs::text::py_repr;

/// Whether `a` and `b` are different strings with the same NFC form.
pub fn same_but_normalization(a: &str, b: &str) -> bool {
    a != b && a.nfc().eq(b.nfc())
}

/// `s` as a JSON string with everything outside printable ASCII `\u`-escaped.
fn json_escaped(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

/// Which form a spelling is in, for the message.
fn form(s: &str) -> &'static str {
    if is_nfd(s) {
        "decomposed, NFD"
    } else if is_nfc(s) {
        "composed, NFC"
    } else {
        "mixed normalization"
    }
}

/// The sentence a miss ends with when `existing` (the path as the model would write it)
/// exists: `A name that differs only in Unicode normalization exists: "cafe\u0301.txt"
/// (decomposed, NFD); use that spelling.`
pub fn suggestion(existing: &str) -> String {
    format!(
        "A name that differs only in Unicode normalization exists: {} ({}); use that spelling.",
        json_escaped(existing),
        form(existing)
    )
}

/// `path` with each `(asked, found)` component swapped, as the model would write it.
pub fn respelled(path: &str, swaps: &[(String, String)]) -> String {
    path.split('/')
        .map(|c| {
            swaps
                .iter()
                .find(|(asked, _)| asked == c)
                .map_or(c, |(_, found)| found.as_str())
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Among `names`, the one differing from `name` only in normalization.
pub fn twin_among<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names.into_iter().find(|n| same_but_normalization(n, name))
}

/// `path` as the model would write it with the look-alike spelling of each missing component
/// that has one (real directories below `root` only, read-level `access` checked), or `None`.
pub fn lookalike(root: &Root, access: &Access, resolved: &Resolved, path: &str) -> Option<String> {
    let mut dir = root.real_root().to_path_buf();
    let mut rel = std::path::PathBuf::new();
    let mut swaps: Vec<(String, String)> = Vec::new();
    let count = resolved.rel.components().count();
    for (i, component) in resolved.rel.components().enumerate() {
        let asked = component.as_os_str();
        let last = i + 1 == count;
        let exists =
            |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| last || m.file_type().is_dir());
        let next = dir.join(asked);
        if exists(&next) {
            (dir, rel) = (next, rel.join(asked));
            continue;
        }
        let asked = asked.to_str()?;
        // An ASCII name has no other normalization (a new file's usual case: no listing).
        if asked.is_ascii() {
            return None;
        }
        let listing = std::fs::read_dir(&dir).ok()?;
        let names: Vec<String> = listing
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        let found = twin_among(asked, names.iter().map(String::as_str))?.to_string();
        let next = dir.join(&found);
        if !exists(&next) {
            return None;
        }
        (dir, rel) = (next, rel.join(&found));
        swaps.push((asked.to_string(), found));
    }
    if swaps.is_empty() {
        return None;
    }
    access
        .check(&crate::fs::root::path::rel_display(&rel), false, true)
        .ok()?;
    Some(respelled(path, &swaps))
}

/// The refusal of a write that would create a look-alike twin of `existing`.
pub fn twin_refusal(path: &str, existing: &str) -> Error {
    Error::new(
        ErrorKind::Conflict,
        format!(
            "{} was not written: it would create a second file whose name differs from an existing one only in Unicode normalization. {}",
            py_repr(path),
            suggestion(existing)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        let nfd = "cafe\u{301}.txt";
        assert!(same_but_normalization("caf\u{e9}.txt", nfd));
        assert!(!same_but_normalization(nfd, nfd));
        assert_eq!(
            suggestion(nfd),
            "A name that differs only in Unicode normalization exists: \"cafe\\u0301.txt\" (decomposed, NFD); use that spelling."
        );
        assert_eq!(
            respelled("d/caf\u{e9}.txt", &[("caf\u{e9}.txt".into(), nfd.into())]),
            format!("d/{nfd}")
        );
        assert_eq!(json_escaped("\u{1F600}\"\\"), "\"\\ud83d\\ude00\\\"\\\\\"");
    }
}
