//! The unified diff a `FileChangeRequestEvent` carries: git-style `a/`/`b/` headers, 3
//! context lines, `\ No newline at end of file` markers, cut at 8192 chars on a line
//! boundary, and a headers-only fallback for sources too large to diff.
//!
//! The line matching is Python's `difflib.SequenceMatcher` (longest matching block first,
//! recursively, with its "popular line" heuristic for 200+ lines), reimplemented so hunks
//! are byte-for-byte those of the reference; a Myers diff (`similar`) pairs lines
//! differently on some inputs. The caller's size bounds keep its quadratic worst case small.

use std::collections::HashMap;

use crate::fs::text::{is_printable, unicode_escape};

/// Diffs are cut at this many chars. Source: `MAX_EVENT_DIFF_CHARS`, _events.py.
pub const MAX_EVENT_DIFF_CHARS: usize = 8192;
/// Sources longer than this (chars) are not diffed. Source: `MAX_DIFF_SOURCE_CHARS`.
pub const MAX_DIFF_SOURCE_CHARS: usize = 32768;
/// Bound on `(old lines + 1) * (new lines + 1)` before diffing. Source: `_MAX_DIFF_LINE_PAIRS`.
pub const MAX_DIFF_LINE_PAIRS: usize = 65536;

const NO_NEWLINE: &str = "\\ No newline at end of file";

/// `name` as a diff header label, quoted like `git diff` when it holds a non-printable char.
/// Source: `_quoted`, _changes.py.
pub fn quoted(name: &str) -> String {
    if is_printable(name) {
        name.to_string()
    } else {
        format!("\"{}\"", unicode_escape(name).replace('"', "\\\""))
    }
}

/// Splits on `\n` only, keeping it; a final line without one is kept as is.
fn lines(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = text.split_inclusive('\n').collect();
    if out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out
}

/// Whether `text` has more than `n` chars, counted only when its length in bytes (between
/// one and four per char) does not tell.
fn longer_than(text: &str, n: usize) -> bool {
    text.len() > n && (text.len() > 4 * n || text.chars().count() > n)
}

/// `text[:n]` in chars.
fn take_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// The event diff `(diff, truncated)` from `old` to `new` for `path` (root-relative).
///
/// Headers only, truncated, when `old` is `None`, either side is over 32768 chars, or
/// `(old.count('\n') + 1) * (new.count('\n') + 1) > 65536`. Equal texts give `""`.
/// Source: `unified_diff`, pydantic_ai_harness/filesystem/_changes.py.
pub fn unified_diff(old: Option<&str>, new: &str, path: &str) -> (String, bool) {
    let path = &*crate::fs::text::names::inline(path);
    let from = quoted(&format!("a/{path}"));
    let to = quoted(&format!("b/{path}"));
    let too_big = match old {
        None => true,
        Some(old) => {
            longer_than(old, MAX_DIFF_SOURCE_CHARS)
                || longer_than(new, MAX_DIFF_SOURCE_CHARS)
                || (memchr::memchr_iter(b'\n', old.as_bytes()).count() + 1)
                    .saturating_mul(memchr::memchr_iter(b'\n', new.as_bytes()).count() + 1)
                    > MAX_DIFF_LINE_PAIRS
        }
    };
    if too_big {
        let header = format!("--- {from}\n+++ {to}");
        return (take_chars(&header, MAX_EVENT_DIFF_CHARS).to_string(), true);
    }
    let old = old.unwrap_or_default();
    let a = lines(old);
    let b = lines(new);
    let mut out: Vec<String> = Vec::new();
    let groups = grouped_opcodes(&a, &b, 3);
    if !groups.is_empty() {
        out.push(format!("--- {from}"));
        out.push(format!("+++ {to}"));
    }
    let push_line = |out: &mut Vec<String>, prefix: char, line: &str| {
        if let Some(stripped) = line.strip_suffix('\n') {
            out.push(format!("{prefix}{stripped}"));
        } else {
            out.push(format!("{prefix}{line}"));
            out.push(NO_NEWLINE.to_string());
        }
    };
    for group in &groups {
        let first = group[0];
        let last = group[group.len() - 1];
        out.push(format!(
            "@@ -{} +{} @@",
            format_range(first.1, last.2),
            format_range(first.3, last.4)
        ));
        for &(tag, i1, i2, j1, j2) in group {
            if tag == Tag::Equal {
                for line in &a[i1..i2] {
                    push_line(&mut out, ' ', line);
                }
                continue;
            }
            if matches!(tag, Tag::Replace | Tag::Delete) {
                for line in &a[i1..i2] {
                    push_line(&mut out, '-', line);
                }
            }
            if matches!(tag, Tag::Replace | Tag::Insert) {
                for line in &b[j1..j2] {
                    push_line(&mut out, '+', line);
                }
            }
        }
    }
    let diff = out.join("\n");
    if diff.chars().count() <= MAX_EVENT_DIFF_CHARS {
        return (diff, false);
    }
    let limit = match diff.char_indices().nth(MAX_EVENT_DIFF_CHARS + 1) {
        Some((i, _)) => i,
        None => diff.len(),
    };
    match diff[..limit].rfind('\n') {
        Some(cut) => (diff[..cut].to_string(), true),
        None => (take_chars(&diff, MAX_EVENT_DIFF_CHARS).to_string(), true),
    }
}

/// difflib's `_format_range_unified`.
fn format_range(start: usize, stop: usize) -> String {
    let mut beginning = start + 1;
    let length = stop - start;
    if length == 1 {
        return beginning.to_string();
    }
    if length == 0 {
        beginning -= 1;
    }
    format!("{beginning},{length}")
}

/// An opcode tag of difflib.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Equal,
    Replace,
    Delete,
    Insert,
}

type Opcode = (Tag, usize, usize, usize, usize);

/// difflib's `SequenceMatcher(None, a, b)` over interned lines.
struct Matcher {
    a: Vec<u32>,
    b: Vec<u32>,
    b2j: HashMap<u32, Vec<usize>>,
}

impl Matcher {
    fn new<'s>(a: &[&'s str], b: &[&'s str]) -> Self {
        let mut ids: HashMap<&'s str, u32> = HashMap::new();
        let mut intern = |s: &'s str| -> u32 {
            let next = ids.len() as u32;
            *ids.entry(s).or_insert(next)
        };
        let a_ids: Vec<u32> = a.iter().map(|s| intern(s)).collect();
        let b_ids: Vec<u32> = b.iter().map(|s| intern(s)).collect();
        let mut b2j: HashMap<u32, Vec<usize>> = HashMap::new();
        for (j, &x) in b_ids.iter().enumerate() {
            b2j.entry(x).or_default().push(j);
        }
        let n = b_ids.len();
        if n >= 200 {
            let ntest = n / 100 + 1;
            b2j.retain(|_, idxs| idxs.len() <= ntest);
        }
        Matcher {
            a: a_ids,
            b: b_ids,
            b2j,
        }
    }

    fn find_longest_match(
        &self,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        let mut j2len: HashMap<usize, usize> = HashMap::new();
        let empty = Vec::new();
        for i in alo..ahi {
            let mut newj2len: HashMap<usize, usize> = HashMap::new();
            for &j in self.b2j.get(&self.a[i]).unwrap_or(&empty) {
                if j < blo {
                    continue;
                }
                if j >= bhi {
                    break;
                }
                let k = if j > 0 {
                    j2len.get(&(j - 1)).copied().unwrap_or(0)
                } else {
                    0
                } + 1;
                newj2len.insert(j, k);
                if k > bestsize {
                    besti = i + 1 - k;
                    bestj = j + 1 - k;
                    bestsize = k;
                }
            }
            j2len = newj2len;
        }
        while besti > alo && bestj > blo && self.a[besti - 1] == self.b[bestj - 1] {
            besti -= 1;
            bestj -= 1;
            bestsize += 1;
        }
        while besti + bestsize < ahi
            && bestj + bestsize < bhi
            && self.a[besti + bestsize] == self.b[bestj + bestsize]
        {
            bestsize += 1;
        }
        (besti, bestj, bestsize)
    }

    fn matching_blocks(&self) -> Vec<(usize, usize, usize)> {
        let (la, lb) = (self.a.len(), self.b.len());
        let mut queue = vec![(0, la, 0, lb)];
        let mut blocks = Vec::new();
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let (i, j, k) = self.find_longest_match(alo, ahi, blo, bhi);
            if k > 0 {
                blocks.push((i, j, k));
                if alo < i && blo < j {
                    queue.push((alo, i, blo, j));
                }
                if i + k < ahi && j + k < bhi {
                    queue.push((i + k, ahi, j + k, bhi));
                }
            }
        }
        blocks.sort_unstable();
        let (mut i1, mut j1, mut k1) = (0, 0, 0);
        let mut out = Vec::new();
        for (i2, j2, k2) in blocks {
            if i1 + k1 == i2 && j1 + k1 == j2 {
                k1 += k2;
            } else {
                if k1 > 0 {
                    out.push((i1, j1, k1));
                }
                (i1, j1, k1) = (i2, j2, k2);
            }
        }
        if k1 > 0 {
            out.push((i1, j1, k1));
        }
        out.push((la, lb, 0));
        out
    }

    fn opcodes(&self) -> Vec<Opcode> {
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        for (ai, bj, size) in self.matching_blocks() {
            let tag = if i < ai && j < bj {
                Some(Tag::Replace)
            } else if i < ai {
                Some(Tag::Delete)
            } else if j < bj {
                Some(Tag::Insert)
            } else {
                None
            };
            if let Some(tag) = tag {
                out.push((tag, i, ai, j, bj));
            }
            i = ai + size;
            j = bj + size;
            if size > 0 {
                out.push((Tag::Equal, ai, i, bj, j));
            }
        }
        out
    }
}

/// difflib's `get_grouped_opcodes(n)`.
fn grouped_opcodes<'s>(a: &[&'s str], b: &[&'s str], n: usize) -> Vec<Vec<Opcode>> {
    let mut codes = Matcher::new(a, b).opcodes();
    if codes.is_empty() {
        codes.push((Tag::Equal, 0, 1, 0, 1));
    }
    if codes[0].0 == Tag::Equal {
        let (t, i1, i2, j1, j2) = codes[0];
        codes[0] = (
            t,
            i1.max(i2.saturating_sub(n)),
            i2,
            j1.max(j2.saturating_sub(n)),
            j2,
        );
    }
    let last = codes.len() - 1;
    if codes[last].0 == Tag::Equal {
        let (t, i1, i2, j1, j2) = codes[last];
        codes[last] = (t, i1, i2.min(i1 + n), j1, j2.min(j1 + n));
    }
    let nn = n + n;
    let mut groups = Vec::new();
    let mut group: Vec<Opcode> = Vec::new();
    for (tag, mut i1, i2, mut j1, j2) in codes {
        if tag == Tag::Equal && i2 - i1 > nn {
            group.push((tag, i1, i2.min(i1 + n), j1, j2.min(j1 + n)));
            groups.push(std::mem::take(&mut group));
            i1 = i1.max(i2.saturating_sub(n));
            j1 = j1.max(j2.saturating_sub(n));
        }
        group.push((tag, i1, i2, j1, j2));
    }
    let only_equal = group.len() == 1 && group[0].0 == Tag::Equal;
    if !group.is_empty() && !only_equal {
        groups.push(group);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_size_is_counted_in_chars() {
        let n = MAX_DIFF_SOURCE_CHARS;
        // Two bytes a char: over `n` bytes, not over `n` chars, so still diffed.
        let at_limit = "é".repeat(n);
        assert!(!longer_than(&at_limit, n));
        assert!(longer_than(&"é".repeat(n + 1), n));
        assert!(longer_than(&"a".repeat(4 * n + 1), n));
        assert!(!longer_than(&"a".repeat(n), n));
        assert!(longer_than(&"\u{1F600}".repeat(n + 1), n));
        // 32,640 chars in 64,260 bytes, 255 lines: diffed.
        let old: String = (0..255)
            .map(|i| format!("{i:03}{}\n", "é".repeat(124)))
            .collect();
        let first = old.find('\n').unwrap() + 1;
        let new = format!("x\n{}", &old[first..]);
        let (diff, truncated) = unified_diff(Some(&old), &new, "p");
        assert!(!truncated);
        let head = format!(
            "--- a/p\n+++ b/p\n@@ -1,4 +1,4 @@\n-{}\n+x\n",
            &old[..first - 1]
        );
        assert!(diff.starts_with(&head), "{diff}");
        let (diff, truncated) = unified_diff(Some(&"é".repeat(n + 1)), "é", "p");
        assert_eq!((diff.as_str(), truncated), ("--- a/p\n+++ b/p", true));
    }

    #[test]
    fn small_cases() {
        assert_eq!(
            unified_diff(Some("a\n"), "a\n", "f"),
            (String::new(), false)
        );
        assert_eq!(
            unified_diff(Some(""), "hello\n", "f.txt"),
            (
                "--- a/f.txt\n+++ b/f.txt\n@@ -0,0 +1 @@\n+hello".to_string(),
                false
            )
        );
        assert_eq!(
            unified_diff(Some("a\nb"), "a\nb\n", "f"),
            (
                "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b"
                    .to_string(),
                false
            )
        );
        assert_eq!(
            unified_diff(None, "x", "f"),
            ("--- a/f\n+++ b/f".to_string(), true)
        );
        assert_eq!(quoted("a/x\ny"), "\"a/x\\ny\"");
    }
}
