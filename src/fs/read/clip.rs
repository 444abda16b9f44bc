//! `FileSystem(max_line_chars=N)`: lines longer than N chars are clipped in `read_file`,
//! `search_files` and `grep` results, with a notice saying what was left out and the
//! `read_file` call that shows the rest (its `column` argument). A search hit in a long line
//! shows a window of N chars around the match. Off (`None`) by default: results as documented.
//!
//! Beyond both references (issue 9), after the seed `dsh-tool-fs.md`'s clipped long lines: a
//! minified bundle or a one-line JSON file otherwise fills the model's context with one line.

use crate::fs::read::Scan;
use crate::fs::text::pattern::Pattern;
use crate::fs::text::thousands;

/// The char index of byte offset `byte` in `text`.
fn char_index(text: &str, byte: usize) -> usize {
    text[..byte].chars().count()
}

/// `text`'s chars `from..to` (char indices, `to` clamped).
fn chars_between(text: &str, from: usize, to: usize) -> &str {
    let mut indices = text.char_indices().map(|(i, _)| i).chain([text.len()]);
    let start = indices.nth(from).unwrap_or(text.len());
    let end = if to > from {
        indices.nth(to - from - 1).unwrap_or(text.len())
    } else {
        start
    };
    &text[start..end]
}

/// The notice after a clipped line: `[line 7 clipped: chars 1-2,000 of 1,000,000 shown; to
/// read on: read_file('big.js', offset=6, limit=1, column=2000)]`. `from`/`to`: the 0-based
/// char range shown.
pub fn notice(path: &str, number: usize, from: usize, to: usize, total: usize) -> String {
    let next = if to < total { to } else { from };
    let (what, column) = if to < total {
        ("to read on", next)
    } else {
        ("to read the start", 0)
    };
    if from >= to {
        // A `column` at or past the line's end: nothing of it is shown.
        return format!(
            "[line {number} has {} chars, none from column {}; {what}: read_file({}, offset={}, limit=1, column=0)]",
            thousands(total as u64),
            thousands(from as u64),
            crate::fs::text::py_repr(path),
            number - 1,
        );
    }
    format!(
        "[line {number} clipped: chars {}-{} of {} shown; {what}: read_file({}, offset={}, limit=1, column={column})]",
        thousands(from as u64 + 1),
        thousands(to as u64),
        thousands(total as u64),
        crate::fs::text::py_repr(path),
        number - 1,
    )
}

/// Line `number` of `path` (no terminator) from char `column`, at most `max` chars, with a
/// [`notice`] when anything on either side was left out; `None` when shown whole.
pub fn clip_from(
    path: &str,
    number: usize,
    line: &str,
    column: usize,
    max: usize,
) -> Option<String> {
    let total = line.chars().count();
    if column == 0 && total <= max {
        return None;
    }
    let from = column.min(total);
    let to = (from + max).min(total);
    if from == 0 && to == total {
        return None;
    }
    let shown = chars_between(line, from, to);
    let tail = if to < total || from > 0 {
        format!(" {}", notice(path, number, from, to, total))
    } else {
        String::new()
    };
    Some(format!("{shown}{tail}"))
}

/// A search hit on line `number` of `path` longer than `max` chars: `max` chars centred on
/// the first match `found` gives (a byte range), `…` marking each cut side, then the
/// [`notice`]; `None` when the line fits.
pub fn clip_around(
    path: &str,
    number: usize,
    line: &str,
    found: Option<(usize, usize)>,
    max: usize,
) -> Option<String> {
    let total = line.chars().count();
    if total <= max {
        return None;
    }
    let (start, end) = found.map_or((0, 0), |(s, e)| (char_index(line, s), char_index(line, e)));
    let width = end - start;
    let from = if width >= max {
        start
    } else {
        start.saturating_sub((max - width) / 2)
    }
    .min(total - max);
    let to = from + max;
    let shown = chars_between(line, from, to);
    let before = if from > 0 { "…" } else { "" };
    let after = if to < total { "…" } else { "" };
    Some(format!(
        "{before}{shown}{after} {}",
        notice(path, number, from, to, total)
    ))
}

/// The first match of `pattern` in `line`, as a byte range.
pub fn find(pattern: &Pattern, line: &str) -> Option<(usize, usize)> {
    pattern.find(line)
}

/// Clips the kept window lines of a `read_file` scan (line numbers from `offset + 1`) to
/// `max` chars from `column`, each clipped line ending with its [`notice`].
pub fn clip_window(scan: &mut Scan, path: &str, offset: usize, column: usize, max: usize) {
    for (i, line) in scan.lines.iter_mut().enumerate() {
        let body = line.text.trim_end_matches(['\n', '\r']);
        let ending = &line.text[body.len()..];
        if let Some(clipped) = clip_from(path, offset + i + 1, body, column, max) {
            line.text = format!("{clipped}{ending}");
            line.chars = line.text.chars().count();
        }
    }
}

/// Clips the `{label}:{n}:{text}` hits of one file in place ([`clip_around`]), the match
/// found again with `pattern`; `label` is also the path the notice names.
pub fn clip_hits(hits: &mut [String], label: &str, pattern: &Pattern, max: usize) {
    for hit in hits.iter_mut() {
        let Some(rest) = hit.strip_prefix(label).and_then(|r| r.strip_prefix(':')) else {
            continue;
        };
        let Some((number, line)) = rest.split_once(':') else {
            continue;
        };
        let Ok(n) = number.parse::<usize>() else {
            continue;
        };
        if let Some(clipped) = clip_around(label, n, line, find(pattern, line), max) {
            *hit = format!("{label}:{n}:{clipped}");
        }
    }
}

/// `grep`'s clipping: lines over `max` chars, a matched one around its first match.
#[derive(Debug, Clone)]
pub struct GrepClip {
    max: usize,
    /// The pattern again (ripgrep's syntax is the `regex` crate's), to place the window;
    /// `None` if it does not compile as a plain regex (the window then starts the line).
    finder: Option<regex::Regex>,
}

impl GrepClip {
    /// Clipping at `max` chars for `grep(pattern, literal=..., ignore_case=...)`.
    pub fn new(max: usize, pattern: &str, literal: bool, ignore_case: bool) -> Self {
        let source = if literal {
            regex::escape(pattern)
        } else {
            pattern.to_string()
        };
        let finder = regex::RegexBuilder::new(&source)
            .case_insensitive(ignore_case)
            .size_limit(64 << 20)
            .build()
            .ok();
        GrepClip { max, finder }
    }

    /// The text of record `number` of `display` (`matched`: a match line, else context)
    /// when it is longer than `max` chars; `None` to show it as usual.
    pub fn render(
        &self,
        display: &str,
        number: u64,
        matched: bool,
        bytes: &[u8],
    ) -> Option<String> {
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if bytes.len() <= self.max {
            return None; // chars <= bytes
        }
        let line = String::from_utf8_lossy(bytes);
        let found = if matched {
            self.finder
                .as_ref()
                .and_then(|f| f.find(&line))
                .map(|m| (m.start(), m.end()))
        } else {
            None
        };
        clip_around(display, number as usize, &line, found, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipped_lines() {
        let line = "abcdefghij";
        assert_eq!(clip_from("f", 3, line, 0, 20), None);
        assert_eq!(
            clip_from("f", 3, line, 0, 4).unwrap(),
            "abcd [line 3 clipped: chars 1-4 of 10 shown; to read on: read_file('f', offset=2, limit=1, column=4)]"
        );
        assert_eq!(
            clip_from("f", 3, line, 8, 4).unwrap(),
            "ij [line 3 clipped: chars 9-10 of 10 shown; to read the start: read_file('f', offset=2, limit=1, column=0)]"
        );
        let p = Pattern::new("x+").unwrap();
        let long = format!("{}xx{}", "a".repeat(100), "b".repeat(100));
        assert_eq!(
            clip_around("f", 1, &long, find(&p, &long), 6).unwrap(),
            "…aaxxbb… [line 1 clipped: chars 99-104 of 202 shown; to read on: read_file('f', offset=0, limit=1, column=104)]"
        );
        let mut hits = vec![format!("d/f:1:{long}"), "d/f:2:short".to_string()];
        clip_hits(&mut hits, "d/f", &p, 6);
        assert!(hits[0].starts_with("d/f:1:…aaxxbb… [line 1 clipped"));
        assert_eq!(hits[1], "d/f:2:short");
    }
}
