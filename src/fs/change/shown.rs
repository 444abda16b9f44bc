//! `FileSystem(show_changes=N)` (issue 22 §3): a write or edit result ends with the lines it
//! changed and N lines around them, numbered as `read_file` numbers them, so the model need
//! not read the file again to check its change. Off (0) by default: results as documented.
//!
//! The pieces, for every change tool (`edit_file`, `write_file`, a patch): [`line_starts`] /
//! [`line_of`] number lines as `read_file` splits them under each contract, [`changed_lines`]
//! turns changed byte ranges into line ranges, [`trim`] narrows a replaced span to the lines
//! that really differ, [`between`] finds the changed range of a whole new content against the
//! old one, and [`render`] shows the regions: each region's header (`[lines 9-17, changed
//! 12-14]`, `[line 5, changed]`, `[lines 3-4, removed before 4]`), a `     -\t[removed]` marker
//! line where lines were removed, its lines as `{number:>6}\t{line}` (`read_file`'s numbers
//! and split; each line ends with one `\n`, whatever its terminator in the file; a line clipped at `max_line_chars`, or at the cap when longer than
//! it, with `read_file`'s clip notice), regions closer than their context merged, everything
//! after the first [`MAX_SHOWN_CHARS`] left to a continuation hint naming the `offset`.

use crate::fs::change::diff;
use crate::fs::contract::Contract;
use crate::fs::read::clip;
use crate::fs::text::{has_terminator_besides_crlf, strip_terminator, terminator_at, thousands};

/// Most chars of the numbered lines one result shows (about 30 lines of code): enough to check
/// an edit, small next to the 50,000 of a `read_file` under 0.62.0's contract.
pub const MAX_SHOWN_CHARS: usize = 2000;

/// Byte offsets where each line of `text` starts, lines split as `read_file` splits them:
/// at `\n` under the workspace contract (0.62.0), at `str.splitlines`' terminators under the
/// document's. The first is 0; a text ending with a terminator has no empty last line.
pub fn line_starts(text: &[u8], contract: Contract) -> Vec<usize> {
    let mut starts = vec![0];
    match contract {
        Contract::Workspace => starts.extend(memchr::memchr_iter(b'\n', text).map(|at| at + 1)),
        Contract::Document if !has_terminator_besides_crlf(text) => {
            // Only `\n`, `\r\n` and `\r` can end a line: two vectorized searches.
            for at in memchr::memchr2_iter(b'\n', b'\r', text) {
                if text[at] == b'\r' && text.get(at + 1) == Some(&b'\n') {
                    continue;
                }
                starts.push(at + 1);
            }
        }
        Contract::Document => {
            let mut i = 0;
            while i < text.len() {
                match terminator_at(text, i) {
                    Some(n) => {
                        i += n;
                        starts.push(i);
                    }
                    None => i += 1,
                }
            }
        }
    }
    if starts.len() > 1 && *starts.last().unwrap_or(&0) == text.len() {
        starts.pop();
    }
    starts
}

/// The 0-based line (of `starts`, from [`line_starts`]) that byte `at` is on.
pub fn line_of(starts: &[usize], at: usize) -> usize {
    starts.partition_point(|&s| s <= at).saturating_sub(1)
}

/// The 0-based line ranges `(first, end)` (half-open) that the changed byte ranges `changed`
/// of `text` cover, sorted and merged where they overlap or touch. An empty byte range at the
/// start of a line is a removal there: `(line, line)`, lines removed before `line` (the line
/// count when at the end); one inside a line covers that line.
pub fn changed_lines(
    text: &[u8],
    changed: &[(usize, usize)],
    contract: Contract,
) -> Vec<(usize, usize)> {
    let starts = line_starts(text, contract);
    let lines = if text.is_empty() { 0 } else { starts.len() };
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(changed.len());
    for &(a, b) in changed {
        let (first, end) = if a == b && (a == text.len() || starts.binary_search(&a).is_ok()) {
            let at = if a == text.len() {
                lines
            } else {
                line_of(&starts, a)
            };
            (at, at)
        } else {
            let first = line_of(&starts, a);
            (first, line_of(&starts, b.saturating_sub(1).max(a)) + 1)
        };
        match out.last_mut() {
            // A removal beside a changed line is within its region; two changed runs that
            // touch are one; a removal right after a removal is one.
            Some(prev)
                if first < prev.1 || (first == prev.1 && (end > first || prev.0 == prev.1)) =>
            {
                prev.1 = prev.1.max(end)
            }
            Some(prev) if first == prev.1 && end == first => {}
            _ => out.push((first, end)),
        }
    }
    out
}

/// Whether `at` starts a line of `text` (for the narrowing of [`trim`]: `\n`-ended lines).
fn line_start(text: &[u8], at: usize) -> bool {
    at == 0 || text.get(at - 1) == Some(&b'\n')
}

/// The part of the replaced span `new_range` of `new` (which was `old_range` of `old`; every
/// byte around them equal) that changed: whole lines equal at its start and end left out, so
/// a replacement that repeats lines marks only those that differ. An empty range at a line
/// start: lines were only removed there; a change inside a line covers that line. `None`: the
/// span is unchanged.
pub fn trim(
    old: &[u8],
    old_range: (usize, usize),
    new: &[u8],
    new_range: (usize, usize),
) -> Option<(usize, usize)> {
    let (o, n) = (
        &old[old_range.0..old_range.1],
        &new[new_range.0..new_range.1],
    );
    if o == n {
        return None;
    }
    let common = o.iter().zip(n).take_while(|(a, b)| a == b).count();
    // Whole lines only: the prefix ends at a line's end.
    let prefix = (0..=common)
        .rev()
        .find(|&p| p == 0 || n[p - 1] == b'\n')
        .unwrap_or(0);
    let room = (o.len() - prefix).min(n.len() - prefix);
    let common = o
        .iter()
        .rev()
        .zip(n.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    // The suffix starts a line in both texts.
    let (oe, ne) = (old_range.1, new_range.1);
    let suffix = (0..=common)
        .rev()
        .find(|&s| s == 0 || (line_start(new, ne - s) && line_start(old, oe - s)))
        .unwrap_or(0);
    let (a, b) = (new_range.0 + prefix, ne - suffix);
    if a < b {
        return Some((a, b));
    }
    let removed_end = oe - suffix;
    if line_start(new, a) && (removed_end == old.len() || line_start(old, removed_end)) {
        return Some((a, a)); // whole lines removed
    }
    // Part of a line removed: that line changed.
    if a < new.len() {
        Some((a, a + 1))
    } else {
        Some((a.saturating_sub(1), a))
    }
}

/// The byte range of `new` that differs from `old` ([`trim`] over both whole texts), `None`
/// when they are equal.
pub fn between(old: &[u8], new: &[u8]) -> Option<(usize, usize)> {
    trim(old, (0, old.len()), new, (0, new.len()))
}

/// The byte ranges of `new` whose lines differ from `old` (a run only removed: an empty range
/// where it was), by the event diff's line matching ([`diff::changed_spans`]), so two changes
/// far apart are two ranges; when that is too big to match, the one span of [`between`].
/// Empty when the texts are equal.
pub fn differing(old: &str, new: &str) -> Vec<(usize, usize)> {
    if old == new {
        return Vec::new();
    }
    match diff::changed_spans(old, new) {
        Some(spans) if !spans.is_empty() => spans,
        _ => between(old.as_bytes(), new.as_bytes())
            .into_iter()
            .collect(),
    }
}

/// `ranges` of the new text's lines (0-based, half-open, sorted: [`changed_lines`]; an empty
/// one is a removal before that line) shown with `context` lines around each, as a result's
/// trailer: for each region (regions whose context touches merged) a header and its lines
/// numbered as `read_file` numbers them. The header (1-based) names the region's lines and
/// what changed: `[lines 8-13, changed 10-11]`, `[lines 2-6, changed 3, 5]`, `[line 5,
/// changed]` (the region is that one line), `[lines 3-4, removed before line 4]` (with a
/// `     -\t(lines removed here)` line between the neighbours), `removed at the end`.
/// `path` is named in the hints as the model gave it. Lines longer than `max_line_chars` (or
/// than [`MAX_SHOWN_CHARS`]) are clipped with `read_file`'s notice; after [`MAX_SHOWN_CHARS`]
/// chars of lines the rest is left to `... (cut at 2,000 characters. Use read_file with
/// offset=K to continue reading.)`. Empty when `ranges` is.
pub fn render(
    path: &str,
    text: &str,
    ranges: &[(usize, usize)],
    context: usize,
    contract: Contract,
    max_line_chars: Option<usize>,
) -> String {
    let mut budget = MAX_SHOWN_CHARS;
    render_within(
        path,
        text,
        ranges,
        context,
        contract,
        max_line_chars,
        &mut budget,
    )
}

/// [`render`] spending `budget` chars of lines (what is left of one cap shared by several
/// files of a result, `apply_patch`'s); the cut hint comes where it runs out, also at once
/// after a region's header when nothing is left.
///
/// Changed lines come first: when the lines with their full context would be cut before the
/// last changed line, context lines are clipped at [`CONTEXT_CLIP`] chars and, if that is not
/// enough, fewer of them are shown (the most that fit whole, the same number around every
/// change), so context never pushes a changed line out; only changed lines that alone do not
/// fit are cut.
pub fn render_within(
    path: &str,
    text: &str,
    ranges: &[(usize, usize)],
    context: usize,
    contract: Contract,
    max_line_chars: Option<usize>,
    budget: &mut usize,
) -> String {
    if ranges.is_empty() {
        return String::new();
    }
    let starts = line_starts(text.as_bytes(), contract);
    let count = if text.is_empty() { 0 } else { starts.len() };
    let body = |i: usize| {
        strip_terminator(&text[starts[i]..starts.get(i + 1).copied().unwrap_or(text.len())])
    };
    let ranges: Vec<(usize, usize)> = ranges
        .iter()
        .map(|&(a, b)| (a.min(count), b.min(count)))
        .collect();
    let changed = |i: usize| ranges.iter().any(|&(a, b)| a <= i && i < b);
    let max_line = max_line_chars
        .unwrap_or(MAX_SHOWN_CHARS)
        .min(MAX_SHOWN_CHARS);
    let shown = |i: usize, width: usize| numbered(path, i, body(i), width);
    let marker = format!("{:>6}\t{REMOVED}", "-");
    let marker_chars = marker.chars().count();
    let lengths: std::cell::RefCell<std::collections::HashMap<(usize, usize), usize>> =
        Default::default();
    // The chars of the lines shown with `k` lines of context (context lines `width` wide): up
    // to the last changed line or removal marker (what must fit for every change to be
    // shown), and in all.
    let cost = |k: usize, width: usize| -> (usize, usize) {
        let (mut total, mut needed) = (0, 0);
        for (from, to, changes) in windows(&ranges, k, count) {
            for i in from..=to {
                let removals = changes.iter().filter(|&&(a, b)| a == b && a == i).count();
                if removals > 0 {
                    total += marker_chars * removals;
                    needed = total;
                }
                if i == to {
                    break;
                }
                let w = if changed(i) { max_line } else { width };
                // Each line is measured once per width, however often the search asks.
                total += *lengths
                    .borrow_mut()
                    .entry((i, w))
                    .or_insert_with(|| shown(i, w).chars().count());
                if changed(i) {
                    needed = total;
                }
            }
        }
        (needed, total)
    };
    let left = budget;
    let (mut k, mut width) = (context, max_line);
    if context > 0 && cost(context, max_line).0 > *left {
        width = max_line.min(CONTEXT_CLIP);
        // The most context that fits (none when the changed lines alone do not).
        let (mut lo, mut hi) = (0, context);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if cost(mid, width).1 <= *left {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        k = lo;
    }
    let mut out = String::new();
    for (from, to, changes) in windows(&ranges, k, count) {
        out.push_str(&header(from, to, &changes, count, span));
        for i in from..=to {
            for _ in changes.iter().filter(|&&(a, b)| a == b && a == i) {
                if marker_chars > *left {
                    out.push_str(&cut_hint(i));
                    return out;
                }
                *left -= marker_chars;
                out.push('\n');
                out.push_str(&marker);
            }
            if i == to {
                break;
            }
            let rendered = shown(i, if changed(i) { max_line } else { width });
            let chars = rendered.chars().count();
            if chars > *left {
                out.push_str(&cut_hint(i));
                return out;
            }
            *left -= chars;
            out.push('\n');
            out.push_str(&rendered);
        }
    }
    out
}

/// Context lines are clipped at this many chars when the lines do not fit the cap whole.
pub const CONTEXT_CLIP: usize = 200;

/// `{i + 1:>6}\t{line}`, `line` clipped at `width` chars with `read_file`'s notice, narrower
/// when that is needed to keep the whole within [`MAX_SHOWN_CHARS`].
fn numbered(path: &str, i: usize, line: &str, width: usize) -> String {
    let mut width = width;
    loop {
        let shown = clip::clip_from(path, i + 1, line, 0, width);
        let rendered = format!("{:>6}\t{}", i + 1, shown.as_deref().unwrap_or(line));
        let over = rendered.chars().count().saturating_sub(MAX_SHOWN_CHARS);
        if over == 0 || width <= 1 {
            return rendered;
        }
        width = width.saturating_sub(over).max(1);
    }
}

/// 1-based `a+1-b`, or `a+1` for one line.
fn span(a: usize, b: usize) -> String {
    if b == a + 1 {
        format!("{}", a + 1)
    } else {
        format!("{}-{}", a + 1, b)
    }
}

/// A region `[from, to)` of lines and the changes it holds.
type Window = (usize, usize, Vec<(usize, usize)>);

/// The regions around `ranges` with `context` lines, merged where they overlap or touch.
fn windows(ranges: &[(usize, usize)], context: usize, count: usize) -> Vec<Window> {
    let mut windows: Vec<Window> = Vec::new();
    for &(a, b) in ranges {
        let (from, to) = (a.saturating_sub(context), (b + context).min(count));
        match windows.last_mut() {
            Some(w) if from <= w.1 => {
                w.1 = w.1.max(to);
                w.2.push((a, b));
            }
            _ => windows.push((from, to, vec![(a, b)])),
        }
    }
    windows
}

/// The marker line's text where lines were removed (its number column holds `-`).
pub const REMOVED: &str = "(lines removed here)";

fn cut_hint(offset: usize) -> String {
    format!(
        "\n... (cut at {} characters. Use read_file with offset={offset} to continue reading.)",
        thousands(MAX_SHOWN_CHARS as u64)
    )
}

/// A region's header: `[lines 8-13, changed 10-11, removed before line 12]`, `[line 5,
/// changed]` when the region is the one changed line; lines 1-based, `[from, to)` 0-based.
fn header(
    from: usize,
    to: usize,
    changes: &[(usize, usize)],
    count: usize,
    span: fn(usize, usize) -> String,
) -> String {
    if changes == [(from, to)] && to == from + 1 {
        return format!("\n[line {}, changed]", from + 1);
    }
    let mut parts = Vec::new();
    match to - from {
        0 => {}
        1 => parts.push(format!("line {}", from + 1)),
        _ => parts.push(format!("lines {}-{}", from + 1, to)),
    }
    let changed: Vec<String> = changes
        .iter()
        .filter(|(a, b)| a < b)
        .map(|&(a, b)| span(a, b))
        .collect();
    if !changed.is_empty() {
        parts.push(format!("changed {}", changed.join(", ")));
    }
    for &(a, _) in changes.iter().filter(|(a, b)| a == b) {
        parts.push(if a >= count {
            "removed at the end".to_string()
        } else {
            format!("removed before line {}", a + 1)
        });
    }
    format!("\n[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering() {
        assert_eq!(line_starts(b"a\nb\n", Contract::Workspace), [0, 2]);
        assert_eq!(line_starts(b"a\nb", Contract::Workspace), [0, 2]);
        assert_eq!(line_starts(b"a\rb\x0cc", Contract::Document), [0, 2, 4]);
        assert_eq!(line_starts(b"a\rb", Contract::Workspace), [0]);
        assert_eq!(line_of(&[0, 2, 4], 3), 1);
        let w = Contract::Workspace;
        assert_eq!(changed_lines(b"a\nb\nc\n", &[(2, 4)], w), [(1, 2)]);
        // An empty range at a line start is a removal there, inside a line it covers the line.
        assert_eq!(changed_lines(b"a\nb\nc\n", &[(2, 2)], w), [(1, 1)]);
        assert_eq!(changed_lines(b"a\nb\nc\n", &[(6, 6)], w), [(3, 3)]);
        assert_eq!(changed_lines(b"ab\nc\n", &[(1, 2)], w), [(0, 1)]);
        // A removal beside a changed line belongs to it.
        assert_eq!(changed_lines(b"a\nb\nc\n", &[(0, 2), (2, 2)], w), [(0, 1)]);
        assert_eq!(changed_lines(b"a\nb\nc\n", &[(2, 2), (2, 4)], w), [(1, 2)]);
    }

    #[test]
    fn trimming() {
        assert_eq!(between(b"abc", b"abc"), None);
        assert_eq!(between(b"a1c", b"a22c"), Some((0, 4)));
        // A pure deletion: an empty range at the next line's start, not that line.
        assert_eq!(between(b"a\nb\nc\n", b"a\nc\n"), Some((2, 2)));
        assert_eq!(between(b"ab\nac\n", b"ac\n"), Some((0, 0)));
        assert_eq!(between(b"a\nb\n", b"a\n"), Some((2, 2)));
        // Part of a line removed: that line changed.
        assert_eq!(between(b"a\nbc\n", b"a\nb\n"), Some((2, 4)));
        assert_eq!(between(b"aa", b"aaa"), Some((0, 3)));
        // A replaced span marks only its lines that differ.
        let (old, new) = (b"x\na\nb\nc\ny\n", b"x\na\nB\nc\ny\n");
        assert_eq!(trim(old, (2, 8), new, (2, 8)), Some((4, 6)));
        assert_eq!(trim(old, (2, 8), old, (2, 8)), None);
        // old_text starting mid-line: the rest of that line equal, so it is not marked.
        assert_eq!(trim(b"pa\nb\n", (1, 5), b"pa\nB\n", (1, 5)), Some((3, 5)));
    }

    #[test]
    fn differing_lines_apart_are_apart() {
        let old: String = (1..=40).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l5\n", "X\n").replace("l30\n", "Y\n");
        let ranges = differing(&old, &new);
        assert_eq!(
            changed_lines(new.as_bytes(), &ranges, Contract::Workspace),
            [(4, 5), (29, 30)]
        );
        // Lines only removed: an empty range where they were.
        let cut = old.replace("l7\nl8\n", "");
        assert_eq!(
            changed_lines(cut.as_bytes(), &differing(&old, &cut), Contract::Workspace),
            [(6, 6)]
        );
        assert!(differing(&old, &old).is_empty());
    }

    #[test]
    fn context_gives_way_to_changed_lines() {
        let text = format!("a\n{}\nb\n", "z".repeat(5000));
        let shown = render("f", &text, &[(2, 3)], 1, Contract::Workspace, None);
        assert!(shown.starts_with("\n[lines 2-3, changed 3]\n     2\tzzz"));
        assert!(shown.ends_with("column=200)]\n     3\tb"));
    }

    #[test]
    fn regions() {
        let text: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let w = Contract::Workspace;
        assert_eq!(
            render("f", &text, &[(4, 5)], 1, w, None),
            "\n[lines 4-6, changed 5]\n     4\tl4\n     5\tl5\n     6\tl6"
        );
        assert_eq!(
            render("f", &text, &[(4, 5)], 0, w, None),
            "\n[line 5, changed]\n     5\tl5"
        );
        // Close changes share a region; far ones get their own.
        assert_eq!(
            render("f", &text, &[(0, 1), (2, 3), (18, 20)], 1, w, None),
            "\n[lines 1-4, changed 1, 3]\n     1\tl1\n     2\tl2\n     3\tl3\n     4\tl4\
             \n[lines 18-20, changed 19-20]\n    18\tl18\n    19\tl19\n    20\tl20"
        );
        // A removal: a marker between the neighbours, no surviving line marked.
        assert_eq!(
            render("f", &text, &[(4, 4)], 1, w, None),
            "\n[lines 4-5, removed before line 5]\n     4\tl4\n     -\t(lines removed here)\n     5\tl5"
        );
        assert_eq!(
            render("f", &text, &[(20, 20)], 1, w, None),
            "\n[line 20, removed at the end]\n    20\tl20\n     -\t(lines removed here)"
        );
        assert_eq!(
            render("f", &text, &[(3, 3), (5, 6)], 1, w, None),
            "\n[lines 3-7, changed 6, removed before line 4]\n     3\tl3\n     -\t(lines removed here)\
             \n     4\tl4\n     5\tl5\n     6\tl6\n     7\tl7"
        );
        let long = "x".repeat(900) + "\n";
        let text = long.repeat(4);
        assert_eq!(
            render("f", &text, &[(0, 4)], 0, w, None),
            format!(
                "\n[lines 1-4, changed 1-4]\n     1\t{x}\n     2\t{x}\n... (cut at 2,000 characters. \
                 Use read_file with offset=2 to continue reading.)",
                x = "x".repeat(900)
            )
        );
    }
}
