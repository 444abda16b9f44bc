//! Matching lines: a pattern's hits in a text, as `{label}:{n}:{line}`, by `str.splitlines()`
//! lines or (the workspace contract) by `\n` lines, with the literal prefilter applied first.

use crate::fs::search::hits::Hits;
use crate::fs::text::pattern::Pattern;
use crate::fs::text::{count_terminators, ends_terminator, next_terminator};

/// `_matching_lines`: the first `limit` matching lines of `text` as `{label}:{n}:{line}`,
/// and whether a further one was dropped.
pub fn matching_lines(
    text: &str,
    pattern: &Pattern,
    pre: Option<&regex::bytes::Regex>,
    label: &str,
    limit: usize,
) -> (Vec<String>, bool) {
    let mut out = Hits::default();
    let dropped = splitlines_hits(text, pattern, pre, label, limit, 1, &mut out);
    (out.into_lines(), dropped)
}

/// The search of [`matching_lines`] in a part of a file starting at line `first` (a line
/// start), pushing into `out` while it holds fewer than `limit` lines; returns whether a
/// further match was dropped.
pub(crate) fn splitlines_hits(
    text: &str,
    pattern: &Pattern,
    pre: Option<&regex::bytes::Regex>,
    label: &str,
    limit: usize,
    first: usize,
    out: &mut Hits,
) -> bool {
    let s = text.as_bytes();
    let mut push = |line_no: usize, start: usize, end: usize| -> bool {
        let line = &text[start..end];
        if pattern.is_match(line) {
            if out.len() >= limit {
                return false;
            }
            out.push(label, line_no, line);
        }
        true
    };
    match pre {
        None => {
            let mut start = 0;
            let mut line_no = first;
            while start < s.len() {
                let (end, next) = match next_terminator(s, start) {
                    Some((p, n)) => (p, p + n),
                    None => (s.len(), s.len()),
                };
                if !push(line_no, start, end) {
                    return true;
                }
                line_no += 1;
                start = next;
            }
        }
        Some(pre) => {
            // Counted up to `cursor` (a line start) so far.
            let mut cursor = 0;
            let mut line_no = first;
            let mut from = 0;
            while from < s.len() {
                let Some(hit) = pre.find_at(s, from) else {
                    break;
                };
                let mut start = hit.start();
                while start > cursor && !ends_terminator(s, start - 1) {
                    start -= 1;
                }
                let (end, next) = match next_terminator(s, hit.start().max(start)) {
                    Some((p, n)) => (p, p + n),
                    None => (s.len(), s.len()),
                };
                line_no += count_terminators(&s[cursor..start]);
                cursor = start;
                if end >= start
                    && text.is_char_boundary(start)
                    && text.is_char_boundary(end)
                    && !push(line_no, start, end)
                {
                    return true;
                }
                from = next.max(hit.start() + 1);
                // Keep `cursor` at a line start at or before `from`.
                if next > cursor {
                    line_no += 1;
                    cursor = next;
                }
            }
        }
    }
    false
}

/// `matching_lines` under the workspace contract (0.62.0's `matching_lines`): lines end at
/// `\n` only, and a line is matched and shown without its `\n` and one `\r` before it.
pub fn matching_newline_lines(
    text: &str,
    pattern: &Pattern,
    pre: Option<&regex::bytes::Regex>,
    label: &str,
    limit: usize,
) -> (Vec<String>, bool) {
    let mut out = Hits::default();
    let dropped = newline_hits(text, pattern, pre, label, limit, 1, &mut out).is_none();
    (out.into_lines(), dropped)
}

/// The search of [`matching_newline_lines`] in a part of a file starting at line `first`
/// (a line start), pushing into `out` while it holds fewer than `limit` results: `None`
/// once a further match is dropped, else the number of `\n` in `text` (the lines it held,
/// when it ends with one).
pub(crate) fn newline_hits(
    text: &str,
    pattern: &Pattern,
    pre: Option<&regex::bytes::Regex>,
    label: &str,
    limit: usize,
    first: usize,
    out: &mut Hits,
) -> Option<usize> {
    let s = text.as_bytes();
    // Line `line_no` starts at `start`.
    let (mut start, mut line_no) = (0, first);
    while start < s.len() {
        if let Some(pre) = pre {
            let Some(hit) = pre.find_at(s, start) else {
                break;
            };
            let line_start =
                memchr::memrchr(b'\n', &s[start..hit.start()]).map_or(start, |p| start + p + 1);
            line_no += memchr::memchr_iter(b'\n', &s[start..line_start]).count();
            start = line_start;
        }
        let end = memchr::memchr(b'\n', &s[start..]).map(|p| start + p);
        let mut line = &text[start..end.unwrap_or(s.len())];
        line = line.strip_suffix('\r').unwrap_or(line);
        if pattern.is_match(line) {
            if out.len() >= limit {
                return None;
            }
            out.push(label, line_no, line);
        }
        let Some(end) = end else {
            return Some(line_no - first);
        };
        start = end + 1;
        line_no += 1;
    }
    Some(line_no - first + memchr::memchr_iter(b'\n', &s[start.min(s.len())..]).count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::text::pattern::prefilter;
    use crate::fs::text::split_lines;

    fn naive(text: &str, p: &Pattern, limit: usize) -> (Vec<String>, bool) {
        let mut out = Vec::new();
        for (i, line) in split_lines(text).into_iter().enumerate() {
            if p.is_match(line) {
                if out.len() >= limit {
                    return (out, true);
                }
                out.push(format!("f:{}:{line}", i + 1));
            }
        }
        (out, false)
    }

    #[test]
    fn prefiltered_equals_naive() {
        let texts = [
            "alpha\nbeta TODO\r\ngamma\rTODO delta\x0bTODO\u{2028}x TODO y\n\nTODO",
            "no match here\n",
            "TODO",
            "\r\nTODO\r\n\r\nTODO TODO\n",
            "a\u{85}TODOb\u{2029}TODO",
        ];
        for pat in [
            "TODO",
            "TO+DO",
            "^TODO",
            "TODO$",
            "(?i)todo",
            "x TODO|gamma",
            "D[eE]lta|TODO",
        ] {
            let p = Pattern::new(pat).unwrap();
            let pre = prefilter(pat);
            assert!(pre.is_some(), "{pat}");
            for text in texts {
                for limit in [0, 1, 2, 100] {
                    assert_eq!(
                        matching_lines(text, &p, pre.as_ref(), "f", limit),
                        naive(text, &p, limit),
                        "{pat} {text:?} {limit}"
                    );
                    assert_eq!(
                        matching_lines(text, &p, None, "f", limit),
                        naive(text, &p, limit)
                    );
                }
            }
        }
    }

    /// 0.62.0's `matching_lines`: `\n` lines, each without its `\n` and one `\r`.
    fn naive_newline(text: &str, p: &Pattern, limit: usize) -> (Vec<String>, bool) {
        let mut out = Vec::new();
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let line = line.strip_suffix('\n').unwrap_or(line);
            let line = line.strip_suffix('\r').unwrap_or(line);
            if p.is_match(line) {
                if out.len() >= limit {
                    return (out, true);
                }
                out.push(format!("f:{}:{line}", i + 1));
            }
        }
        (out, false)
    }

    #[test]
    fn newline_lines_equal_naive_with_and_without_prefilter() {
        let texts = [
            "alpha\nbeta TODO\r\ngamma\rTODO delta\x0bTODO\u{2028}x TODO y\n\nTODO",
            "no match here\n",
            "TODO",
            "\r\nTODO\r\n\r\nTODO TODO\n",
            "a\u{85}TODOb\u{2029}TODO\r",
        ];
        for pat in [
            "TODO",
            "TO+DO",
            "^TODO",
            "TODO$",
            "(?i)todo",
            "x TODO|gamma",
        ] {
            let p = Pattern::new(pat).unwrap();
            let pre = prefilter(pat);
            for text in texts {
                for limit in [0, 1, 2, 100] {
                    let expected = naive_newline(text, &p, limit);
                    assert_eq!(
                        matching_newline_lines(text, &p, pre.as_ref(), "f", limit),
                        expected,
                        "{pat} {text:?} {limit}"
                    );
                    assert_eq!(matching_newline_lines(text, &p, None, "f", limit), expected);
                }
            }
        }
        // A lone CR does not end a line: one line, numbered 1.
        let p = Pattern::new("c").unwrap();
        assert_eq!(
            matching_newline_lines("a\rb\rc", &p, None, "f", 9).0,
            ["f:1:a\rb\rc"]
        );
    }
}
