//! `--max-columns 4096 --max-columns-preview`: how `rg` prints a line longer than 4096
//! bytes.
//!
//! With colours off `rg` records no match positions, so a long matching line and a long
//! context line print alike: the first 4096 extended grapheme clusters of the line (its
//! terminator included in the count, then trimmed), followed by
//! ` [... omitted end of long line]`. The length test counts bytes *including* the line
//! terminator, so a 4096-byte line followed by `\n` is already "long".
//!
//! Grapheme clusters follow UAX #29 table 1c, as `bstr`'s segmenter (which `rg` uses)
//! does, built here on the `regex` crate's `Grapheme_Cluster_Break` classes; invalid UTF-8
//! counts one cluster per maximal invalid subpart, as `bstr` does.
//!
//! Source: `StandardImpl::write_line` and `write_exceeded_line` in ripgrep's
//! `crates/printer/src/standard.rs`; `decode_grapheme` in `bstr`.

use std::sync::LazyLock;

use regex::bytes::Regex;

/// `_MAX_MATCH_COLUMNS` in the reference: `rg --max-columns 4096`.
pub(crate) const MAX_COLUMNS: usize = 4096;

/// What `rg` appends to a cut line when it knows no match positions.
const OMITTED: &str = " [... omitted end of long line]";

/// One extended grapheme cluster at the start of the haystack (leftmost-first).
static GRAPHEME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?x)^(?:
            \p{gcb=CR}\p{gcb=LF}
            | \p{gcb=Control}
            | \p{gcb=Prepend}*
              (?:
                  (?: \p{gcb=L}* (?: \p{gcb=V}+ | \p{gcb=LV}\p{gcb=V}* | \p{gcb=LVT}) \p{gcb=T}*
                    | \p{gcb=L}+
                    | \p{gcb=T}+ )
                | \p{gcb=RI}\p{gcb=RI}
                | \p{Extended_Pictographic} (?: \p{gcb=Extend}* \p{gcb=ZWJ} \p{Extended_Pictographic} )*
                | [^\p{gcb=Control}\p{gcb=CR}\p{gcb=LF}]
              )
              [\p{gcb=Extend}\p{gcb=ZWJ}\p{gcb=SpacingMark}]*
            | \p{any}
        )",
    )
    .expect("grapheme regex compiles")
});

/// Renders one line as `rg` prints it: `line` holds the line's bytes with its terminator
/// (`\n`, absent on a last line without one); the result has no terminator.
pub(crate) fn render_line(line: &[u8]) -> String {
    if line.len() <= MAX_COLUMNS {
        return String::from_utf8_lossy(trim_terminator(line)).into_owned();
    }
    let end = grapheme_prefix_len(line, MAX_COLUMNS);
    let mut text = String::from_utf8_lossy(trim_terminator(&line[..end])).into_owned();
    text.push_str(OMITTED);
    text
}

fn trim_terminator(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

/// Byte length of the first `n` grapheme clusters of `bytes` (all of it if it has fewer).
pub(crate) fn grapheme_prefix_len(bytes: &[u8], n: usize) -> usize {
    let mut pos = 0;
    for _ in 0..n {
        if pos >= bytes.len() {
            break;
        }
        pos += grapheme_len(&bytes[pos..]);
    }
    pos
}

/// Length of the grapheme cluster (or invalid UTF-8 subpart) that starts `bytes`.
fn grapheme_len(bytes: &[u8]) -> usize {
    // An ASCII byte that is not whitespace, followed by ASCII, is a cluster of its own.
    if bytes.len() >= 2
        && bytes[0].is_ascii()
        && bytes[1].is_ascii()
        && !bytes[0].is_ascii_whitespace()
    {
        return 1;
    }
    // Anchored at the start: the search ends where the cluster does.
    match GRAPHEME.find(bytes) {
        Some(m) if m.end() > 0 => m.end(),
        _ => invalid_len(bytes),
    }
}

/// Length of the maximal invalid UTF-8 subpart starting `bytes` (at least 1).
fn invalid_len(bytes: &[u8]) -> usize {
    let head = &bytes[..bytes.len().min(4)];
    match std::str::from_utf8(head) {
        Ok(_) => 1,
        Err(e) if e.valid_up_to() > 0 => 1,
        Err(e) => e.error_len().unwrap_or(head.len()).max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_print_whole() {
        assert_eq!(render_line(b"abc\n"), "abc");
        assert_eq!(render_line(b"abc"), "abc");
        assert_eq!(render_line(b"a\r\n"), "a\r");
        let exact = [b'x'; 4095];
        let mut line = exact.to_vec();
        line.push(b'\n');
        assert_eq!(render_line(&line), "x".repeat(4095));
        // 4096 bytes without a terminator is not long.
        assert_eq!(render_line(&[b'x'; 4096]), "x".repeat(4096));
    }

    #[test]
    fn long_lines_are_previewed() {
        let mut line = vec![b'x'; 4096];
        line.push(b'\n');
        assert_eq!(render_line(&line), format!("{}{OMITTED}", "x".repeat(4096)));
        let long = vec![b'y'; 5000];
        assert_eq!(render_line(&long), format!("{}{OMITTED}", "y".repeat(4096)));
        // 3000 two-byte clusters: 6001 bytes, fewer than 4096 clusters: all shown.
        let mut e = "é".repeat(3000).into_bytes();
        e.push(b'\n');
        assert_eq!(render_line(&e), format!("{}{OMITTED}", "é".repeat(3000)));
    }

    #[test]
    fn clusters() {
        let cases: &[(&[u8], usize)] = &[
            (b"ab", 1),
            (b"\r\nx", 2),
            (b"\r", 1),
            (b" a", 1),
            ("e\u{301}x".as_bytes(), 3),
            ("\u{1F1EB}\u{1F1F7}x".as_bytes(), 8),
            ("\u{1F468}\u{200D}\u{1F469}x".as_bytes(), 11),
            ("\u{1100}\u{1161}\u{11A8}x".as_bytes(), 9),
            (b"\xff\xfe", 1),
            (b"\xe2\x82", 2),
            (b"\xe2\x82x", 2),
            (b"\xf0\x80\x80", 1),
        ];
        for (bytes, expected) in cases {
            assert_eq!(grapheme_len(bytes), *expected, "{bytes:?}");
        }
    }
}
