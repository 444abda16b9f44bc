//! The unified diff a `FileChangeRequestEvent` carries: git-style `a/`/`b/` headers, 3
//! context lines, `\ No newline at end of file` markers, cut at 8192 chars on a line
//! boundary, and a headers-only fallback for sources too large to diff (the document's), or,
//! opted in (`event_diff`'s `big_sources`), the first hunks of a linear pass up to the cut.
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
    event_diff(old, new, path, false)
}

/// [`unified_diff`], or with `big_sources`, for sources too big for difflib's matching (but
/// readable: `old` given), the hunks of [`linear_opcodes`] up to the cut at
/// `MAX_EVENT_DIFF_CHARS`, always `truncated` (they pair lines greedily, not as difflib would,
/// and may stop before the end). `FileSystem(require_approval=...)` opts in (issue 21).
pub fn event_diff(old: Option<&str>, new: &str, path: &str, big_sources: bool) -> (String, bool) {
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
        if let (true, Some(old)) = (big_sources, old) {
            let (a, b) = (lines(old), lines(new));
            let groups = group_opcodes(linear_opcodes(&a, &b, MAX_EVENT_DIFF_CHARS), 3);
            let diff = render(&a, &b, &groups, &from, &to).0;
            let truncated = !diff.is_empty(); // equal texts have no diff
            return (diff, truncated);
        }
        let header = format!("--- {from}\n+++ {to}");
        return (take_chars(&header, MAX_EVENT_DIFF_CHARS).to_string(), true);
    }
    let old = old.unwrap_or_default();
    let a = lines(old);
    let b = lines(new);
    let groups = grouped_opcodes(&a, &b, 3);
    render(&a, &b, &groups, &from, &to)
}

/// How many lines `a` and `b` share at their start, then at their end (not overlapping).
fn equal_ends(a: &[&str], b: &[&str]) -> (usize, usize) {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let room = a.len().min(b.len()) - head;
    let tail = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(room)
        .take_while(|(x, y)| x == y)
        .count();
    (head, tail)
}

/// The byte ranges of `new` whose lines (split at `\n`) differ from `old`'s, by the line
/// matching of [`unified_diff`] after the lines equal at both ends are set aside: an added or
/// replaced run is its byte range, a run only removed an empty range where it was. `None`
/// when the lines left to match are over [`MAX_DIFF_LINE_PAIRS`] pairs or
/// [`MAX_DIFF_SOURCE_CHARS`] bytes (difflib's bound on its quadratic worst case).
pub fn changed_spans(old: &str, new: &str) -> Option<Vec<(usize, usize)>> {
    let (a, b) = (lines(old), lines(new));
    let (head, tail) = equal_ends(&a, &b);
    let bytes = |l: &[&str]| l.iter().map(|s| s.len()).sum::<usize>();
    let b_tail = bytes(&b[b.len() - tail..]);
    let (a, b) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    if (a.len() + 1).saturating_mul(b.len() + 1) > MAX_DIFF_LINE_PAIRS
        || bytes(a).max(bytes(b)) > MAX_DIFF_SOURCE_CHARS
    {
        return None;
    }
    let mut at = vec![new.len() - bytes(b) - b_tail];
    for line in b {
        at.push(at[at.len() - 1] + line.len());
    }
    let mut out = Vec::new();
    for (tag, _, _, j1, j2) in Matcher::new(a, b).opcodes() {
        if tag != Tag::Equal {
            out.push((at[j1], at[j2]));
        }
    }
    Some(out)
}

/// A whole unified diff from `old` to `new` for `path`, neither cut nor bounded (a
/// checkpoint's `diff`, whose caller bounds each side at 1 MiB): the lines equal at both ends
/// set aside, the rest matched as [`unified_diff`] does where within its bounds
/// ([`MAX_DIFF_LINE_PAIRS`], [`MAX_DIFF_SOURCE_CHARS`]), else in one linear pass
/// ([`linear_opcodes`]: a true diff, paired greedily). Equal texts give `""`.
pub fn whole_diff(old: &str, new: &str, path: &str) -> String {
    let path = &*crate::fs::text::names::inline(path);
    let from = quoted(&format!("a/{path}"));
    let to = quoted(&format!("b/{path}"));
    let (a, b) = (lines(old), lines(new));
    let (head, tail) = equal_ends(&a, &b);
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    if ma.is_empty() && mb.is_empty() {
        return String::new();
    }
    let bytes = |l: &[&str]| l.iter().map(|s| s.len()).sum::<usize>();
    let middle = if (ma.len() + 1).saturating_mul(mb.len() + 1) <= MAX_DIFF_LINE_PAIRS
        && bytes(ma).max(bytes(mb)) <= MAX_DIFF_SOURCE_CHARS
    {
        Matcher::new(ma, mb).opcodes()
    } else {
        linear_opcodes(ma, mb, usize::MAX)
    };
    let mut codes: Vec<Opcode> = Vec::new();
    let mut push = |code: Opcode| {
        let (tag, i1, i2, j1, j2) = code;
        if i1 == i2 && j1 == j2 {
            return;
        }
        match codes.last_mut() {
            // Adjacent equal runs are one (as difflib would have found them).
            Some(last) if tag == Tag::Equal && last.0 == Tag::Equal => {
                (last.2, last.4) = (i2, j2);
            }
            _ => codes.push(code),
        }
    };
    push((Tag::Equal, 0, head, 0, head));
    for (tag, i1, i2, j1, j2) in middle {
        push((tag, i1 + head, i2 + head, j1 + head, j2 + head));
    }
    push((Tag::Equal, a.len() - tail, a.len(), b.len() - tail, b.len()));
    render_whole(&a, &b, &group_opcodes(codes, 3), &from, &to)
}

/// The unified diff of `groups` (hunks of opcodes over lines `a` and `b`) under headers `from`
/// and `to`, cut at `MAX_EVENT_DIFF_CHARS` on a line boundary: `(diff, cut)`.
fn render(a: &[&str], b: &[&str], groups: &[Vec<Opcode>], from: &str, to: &str) -> (String, bool) {
    let diff = render_whole(a, b, groups, from, to);
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

/// The unified diff of `groups` (see [`render`]), whole.
fn render_whole(a: &[&str], b: &[&str], groups: &[Vec<Opcode>], from: &str, to: &str) -> String {
    let mut out: Vec<String> = Vec::new();
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
    for group in groups {
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
    out.join("\n")
}

/// Lines looked ahead on each side, at most, for the place two texts agree again after a difference.
const RESYNC_WINDOW: usize = 4096;
/// Equal lines in a row that count as the texts agreeing again (fewer where both end).
const RESYNC_RUN: usize = 3;

/// Opcodes from `a` to `b` in one linear pass, for sources too big for [`Matcher`]: equal
/// lines are skipped pairwise; at a difference the nearest place (fewest lines skipped on
/// both sides, within [`RESYNC_WINDOW`]) where [`RESYNC_RUN`] lines agree again ends the
/// change (none found: the window is the change). Every `Equal` is equal, so the hunks are a
/// true diff, though not difflib's pairing. Stops once the changed lines hold more than
/// `budget` chars (the rendered diff is cut there anyway); the line numbers stay absolute.
fn linear_opcodes(a: &[&str], b: &[&str], budget: usize) -> Vec<Opcode> {
    let (la, lb) = (a.len(), b.len());
    let (mut i, mut j) = (0, 0);
    let mut codes = Vec::new();
    let mut shown = 0usize;
    loop {
        let (si, sj) = (i, j);
        while i < la && j < lb && a[i] == b[j] {
            i += 1;
            j += 1;
        }
        if i > si {
            codes.push((Tag::Equal, si, i, sj, j));
        }
        if (i == la && j == lb) || shown > budget {
            return codes;
        }
        let (ni, nj) = resync(a, b, i, j);
        let tag = match (ni > i, nj > j) {
            (true, true) => Tag::Replace,
            (true, false) => Tag::Delete,
            _ => Tag::Insert,
        };
        codes.push((tag, i, ni, j, nj));
        shown += a[i..ni]
            .iter()
            .chain(&b[j..nj])
            .map(|l| l.len() + 2)
            .sum::<usize>();
        (i, j) = (ni, nj);
    }
}

/// Where `a` and `b` agree again after they differ at `(i, j)` (see [`linear_opcodes`]).
fn resync(a: &[&str], b: &[&str], i: usize, j: usize) -> (usize, usize) {
    let (ea, eb) = (
        (i + RESYNC_WINDOW).min(a.len()),
        (j + RESYNC_WINDOW).min(b.len()),
    );
    let mut at: HashMap<&str, Vec<usize>> = HashMap::new();
    for (y, line) in b.iter().enumerate().take(eb).skip(j) {
        at.entry(line).or_default().push(y);
    }
    let mut best: Option<usize> = None; // lines skipped on both sides
    let mut found = (ea, eb);
    for x in i..ea {
        if best.is_some_and(|d| x - i >= d) {
            break;
        }
        for &y in at.get(a[x]).map_or(&[][..], Vec::as_slice) {
            let d = (x - i) + (y - j);
            if best.is_some_and(|best| d >= best) {
                break;
            }
            if agree(a, b, x, y) {
                (best, found) = (Some(d), (x, y));
                break;
            }
        }
    }
    found
}

/// Whether [`RESYNC_RUN`] lines of `a` from `x` equal those of `b` from `y` (or both tails, shorter).
fn agree(a: &[&str], b: &[&str], x: usize, y: usize) -> bool {
    let n = RESYNC_RUN.min(a.len() - x).min(b.len() - y);
    let whole = n == RESYNC_RUN || (x + n == a.len() && y + n == b.len());
    whole && n > 0 && (0..n).all(|k| a[x + k] == b[y + k])
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
    group_opcodes(Matcher::new(a, b).opcodes(), n)
}

/// `codes` grouped into hunks with `n` lines of context, as difflib's `get_grouped_opcodes(n)`.
fn group_opcodes(mut codes: Vec<Opcode>, n: usize) -> Vec<Vec<Opcode>> {
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

    fn numbered(n: usize) -> String {
        (0..n).map(|k| format!("line {k}\n")).collect()
    }

    #[test]
    fn a_big_source_shows_its_first_hunks_when_asked() {
        let old = numbered(400_000); // 5 MB: far past difflib's bounds
        let new = old.replacen("line 5\n", "line five\n", 1).replacen(
            "line 399990\n",
            "line 399990\nadded\n",
            1,
        );
        assert_eq!(
            unified_diff(Some(&old), &new, "big.txt"),
            ("--- a/big.txt\n+++ b/big.txt".to_string(), true)
        );
        let (diff, truncated) = event_diff(Some(&old), &new, "big.txt", true);
        assert!(truncated);
        assert_eq!(
            diff,
            "--- a/big.txt\n+++ b/big.txt\n@@ -3,7 +3,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n\
             @@ -399989,6 +399989,7 @@\n line 399988\n line 399989\n line 399990\n+added\n line 399991\n line 399992\n line 399993"
        );
        assert_eq!(
            event_diff(Some(&old), &old, "big.txt", true),
            (String::new(), false)
        );
        assert_eq!(
            event_diff(None, &new, "big.txt", true).0,
            "--- a/big.txt\n+++ b/big.txt"
        );
    }

    #[test]
    fn a_big_rewrite_is_cut_at_the_bound() {
        let old = numbered(100_000);
        let new: String = (0..100_000).map(|k| format!("row {k}\n")).collect();
        let (diff, truncated) = event_diff(Some(&old), &new, "big.txt", true);
        assert!(truncated && diff.chars().count() <= MAX_EVENT_DIFF_CHARS);
        assert!(diff.starts_with("--- a/big.txt\n+++ b/big.txt\n@@ -1,"));
        assert!(diff.contains("\n-line 0\n") && diff.ends_with(|c: char| c.is_ascii_digit()));
    }

    #[test]
    fn a_whole_diff_is_neither_bounded_nor_cut() {
        // 300 lines, one changed: past difflib's line-pair bound, still one hunk.
        let old: String = (0..300).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 150\n", "changed\n");
        assert_eq!(
            whole_diff(&old, &new, "f.txt"),
            "--- a/f.txt\n+++ b/f.txt\n@@ -148,7 +148,7 @@\n line 147\n line 148\n line 149\n\
             -line 150\n+changed\n line 151\n line 152\n line 153"
        );
        // Every line changed, 20,000 chars a side: the whole diff, each line once.
        let old: String = (0..2000).map(|i| format!("old {i:04}\n")).collect();
        let new: String = (0..2000).map(|i| format!("new {i:04}\n")).collect();
        let diff = whole_diff(&old, &new, "f.txt");
        assert_eq!(diff.lines().filter(|l| l.starts_with('-')).count(), 2001);
        assert!(diff.ends_with("\n+new 1999"));
        // A big middle (linear pass): both ends kept, the change found.
        let mut big_old: Vec<String> = (0..20_000).map(|i| format!("{i}\n")).collect();
        let big_new_text: String = {
            let mut b = big_old.clone();
            b[10_000] = "x\n".into();
            b.insert(15_000, "added\n".into());
            b.concat()
        };
        big_old[0] = "0\n".into();
        let diff = whole_diff(&big_old.concat(), &big_new_text, "f");
        assert!(diff.contains("\n-10000\n+x\n") && diff.contains("\n+added\n"));
        assert_eq!(whole_diff("same\n", "same\n", "f"), "");
    }

    #[test]
    fn linear_opcodes_turn_a_into_b() {
        let a: Vec<&str> = "a b c x d e f y g h".split(' ').collect();
        let b: Vec<&str> = "a b c d e f z g h i".split(' ').collect();
        let codes = linear_opcodes(&a, &b, usize::MAX);
        let mut rebuilt: Vec<&str> = Vec::new();
        for &(tag, i1, i2, j1, j2) in &codes {
            if tag == Tag::Equal {
                assert_eq!(a[i1..i2], b[j1..j2]);
            }
            rebuilt.extend_from_slice(&b[j1..j2]);
            assert!(i2 <= a.len());
        }
        assert_eq!(rebuilt, b);
        assert_eq!(codes.last().map(|c| (c.2, c.4)), Some((a.len(), b.len())));
    }

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
