//! `FileSystem(show_changes=N)` (issue 22 §3): a write or edit result ends with the lines it
//! changed and N lines around them, numbered as `read_file` numbers them, so the model need
//! not read the file again to check its change. Off (0) by default: results as documented.
//!
//! The pieces, for every change tool (`edit_file`, `write_file`, a patch): [`line_starts`] /
//! [`line_of`] number lines as `read_file` splits them under each contract, [`changed_lines`]
//! turns changed byte ranges into line ranges, [`between`] finds the changed range of a whole
//! new content against the old one, and [`render`] shows the regions: each region's header
//! (`[lines 9-17, changed 12-14]`), its lines as `{number:>6}\t{line}` (`read_file`'s numbers
//! and split; each line ends with one `\n`, whatever its terminator in the file; a line clipped at `max_line_chars`, or at the cap when longer than
//! it, with `read_file`'s clip notice), regions closer than their context merged, everything
//! after the first [`MAX_SHOWN_CHARS`] left to a continuation hint naming the `offset`.

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

/// The 0-based line ranges `(first, last)` (inclusive) that the changed byte ranges `changed`
/// of `text` cover; an empty range covers the line it is on. Sorted and merged.
pub fn changed_lines(
    text: &[u8],
    changed: &[(usize, usize)],
    contract: Contract,
) -> Vec<(usize, usize)> {
    let starts = line_starts(text, contract);
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(changed.len());
    for &(a, b) in changed {
        let first = line_of(&starts, a);
        let last = line_of(&starts, b.saturating_sub(1).max(a));
        match out.last_mut() {
            Some(prev) if first <= prev.1 + 1 => prev.1 = prev.1.max(last),
            _ => out.push((first, last)),
        }
    }
    out
}

/// The byte range of `new` that differs from `old` (common start and end left out), `None`
/// when they are equal: one range from the first to the last change.
pub fn between(old: &[u8], new: &[u8]) -> Option<(usize, usize)> {
    if old == new {
        return None;
    }
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let room = old.len().min(new.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    Some((prefix, new.len() - suffix))
}

/// `ranges` of the new text's lines (0-based, inclusive, sorted) shown with `context` lines
/// around each, as a result's trailer: for each region (regions whose context touches
/// merged) a `[lines A-B, changed C-D]` header (1-based) and its lines numbered as
/// `read_file` numbers them. `path` is named in the hints as the model gave it. Lines longer
/// than `max_line_chars` (or than [`MAX_SHOWN_CHARS`]) are clipped with `read_file`'s notice;
/// after [`MAX_SHOWN_CHARS`] chars of lines the rest is left to `... (cut at 2,000
/// characters. Use read_file with offset=K to continue reading.)`. Empty when `ranges` is.
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
pub fn render_within(
    path: &str,
    text: &str,
    ranges: &[(usize, usize)],
    context: usize,
    contract: Contract,
    max_line_chars: Option<usize>,
    budget: &mut usize,
) -> String {
    if ranges.is_empty() || text.is_empty() {
        return String::new();
    }
    let starts = line_starts(text.as_bytes(), contract);
    let line = |i: usize| &text[starts[i]..starts.get(i + 1).copied().unwrap_or(text.len())];
    let end = starts.len() - 1;
    // Windows around each change, merged where they overlap or touch; each keeps its changes.
    type Window = (usize, usize, Vec<(usize, usize)>);
    let mut windows: Vec<Window> = Vec::new();
    for &(a, b) in ranges {
        let (a, b) = (a.min(end), b.min(end));
        let (from, to) = (a.saturating_sub(context), (b + context).min(end));
        match windows.last_mut() {
            Some(w) if from <= w.1 + 1 => {
                w.1 = w.1.max(to);
                w.2.push((a, b));
            }
            _ => windows.push((from, to, vec![(a, b)])),
        }
    }
    let span = |a: usize, b: usize| {
        if a == b {
            format!("{}", a + 1)
        } else {
            format!("{}-{}", a + 1, b + 1)
        }
    };
    let max_line = max_line_chars
        .unwrap_or(MAX_SHOWN_CHARS)
        .min(MAX_SHOWN_CHARS);
    let left = budget;
    let mut out = String::new();
    for (from, to, changes) in &windows {
        let changed: Vec<String> = changes.iter().map(|&(a, b)| span(a, b)).collect();
        out.push_str(&format!(
            "\n[lines {}, changed {}]",
            span(*from, *to),
            changed.join(", ")
        ));
        for i in *from..=*to {
            let body = strip_terminator(line(i));
            let shown = clip::clip_from(path, i + 1, body, 0, max_line);
            let rendered = format!("{:>6}\t{}", i + 1, shown.as_deref().unwrap_or(body));
            let chars = rendered.chars().count();
            if chars > *left {
                out.push_str(&format!(
                    "\n... (cut at {} characters. Use read_file with offset={i} to continue reading.)",
                    thousands(MAX_SHOWN_CHARS as u64)
                ));
                return out;
            }
            *left -= chars;
            out.push('\n');
            out.push_str(&rendered);
        }
    }
    out
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
        assert_eq!(
            changed_lines(b"a\nb\nc\n", &[(2, 4)], Contract::Workspace),
            [(1, 1)]
        );
        assert_eq!(
            changed_lines(b"a\nb\nc\n", &[(2, 2)], Contract::Workspace),
            [(1, 1)]
        );
        assert_eq!(between(b"abc", b"abc"), None);
        assert_eq!(between(b"a1c", b"a22c"), Some((1, 3)));
        assert_eq!(between(b"aa", b"aaa"), Some((2, 3)));
    }

    #[test]
    fn regions() {
        let text: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        assert_eq!(
            render("f", &text, &[(4, 4)], 1, Contract::Workspace, None),
            "\n[lines 4-6, changed 5]\n     4\tl4\n     5\tl5\n     6\tl6"
        );
        // Close changes share a region; far ones get their own.
        assert_eq!(
            render(
                "f",
                &text,
                &[(0, 0), (2, 2), (18, 19)],
                1,
                Contract::Workspace,
                None
            ),
            "\n[lines 1-4, changed 1, 3]\n     1\tl1\n     2\tl2\n     3\tl3\n     4\tl4\
             \n[lines 18-20, changed 19-20]\n    18\tl18\n    19\tl19\n    20\tl20"
        );
        let long = "x".repeat(900) + "\n";
        let text = long.repeat(4);
        assert_eq!(
            render("f", &text, &[(0, 3)], 0, Contract::Workspace, None),
            format!(
                "\n[lines 1-4, changed 1-4]\n     1\t{x}\n     2\t{x}\n... (cut at 2,000 characters. \
                 Use read_file with offset=2 to continue reading.)",
                x = "x".repeat(900)
            )
        );
    }
}
