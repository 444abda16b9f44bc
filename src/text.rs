//! Python text semantics the model-facing strings depend on: `repr()` of a `str`,
//! `str.isprintable()`, `str.splitlines()` boundaries, `PurePosixPath` normalization and
//! `format(n, ',')`. Kept in one place so every message renders exactly as the reference's.

/// Whether `c` is printable in the sense of Python's `str.isprintable()`.
///
/// Python calls a character non-printable when its Unicode category is `Cc`, `Cf`, `Cs`,
/// `Co`, `Cn`, `Zl`, `Zp` or `Zs` other than the ASCII space. This approximation covers the
/// control characters, the separators and the common format characters; unassigned code
/// points (`Cn`) are treated as printable.
pub fn is_printable_char(c: char) -> bool {
    let cp = c as u32;
    if c == ' ' {
        return true;
    }
    if c.is_control() {
        return false;
    }
    !matches!(
        cp,
        0xA0 | 0xAD
            | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x1680
            | 0x180E
            | 0x2000..=0x200F
            | 0x2028..=0x202F
            | 0x205F..=0x2064
            | 0x2066..=0x206F
            | 0x3000
            | 0xD800..=0xDFFF
            | 0xE000..=0xF8FF
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
            | 0xF0000..=0x10FFFF
    )
}

/// Python's `str.isprintable()`.
pub fn is_printable(s: &str) -> bool {
    s.chars().all(is_printable_char)
}

/// Python's `repr(s)` for a `str`: single quotes unless the text holds a `'` and no `"`,
/// backslash escapes for `\\`, `\n`, `\r`, `\t` and non-printable characters.
pub fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable_char(c) => out.push(c),
            c => out.push_str(&escape_code_point(c)),
        }
    }
    out.push(quote);
    out
}

fn escape_code_point(c: char) -> String {
    let cp = c as u32;
    if cp < 0x100 {
        format!("\\x{cp:02x}")
    } else if cp < 0x10000 {
        format!("\\u{cp:04x}")
    } else {
        format!("\\U{cp:08x}")
    }
}

/// Python's `s.encode('unicode_escape').decode('ascii')`: every non-ASCII or
/// non-printable-ASCII character escaped, backslashes doubled, quotes kept.
pub fn unicode_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            c => out.push_str(&escape_code_point(c)),
        }
    }
    out
}

/// `format(n, ',')`: decimal digits grouped by threes with commas.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `str(PurePosixPath(s))`: repeated slashes collapsed, `.` components dropped, trailing
/// slash removed, `''` becomes `'.'`; `..` is kept (no filesystem access).
pub fn pure_posix(s: &str) -> String {
    let absolute = s.starts_with('/');
    // POSIX keeps exactly two leading slashes; anything else collapses to one.
    let double = s.starts_with("//") && !s.starts_with("///");
    let parts: Vec<&str> = s
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let body = parts.join("/");
    match (absolute, double) {
        (true, true) => format!("//{body}"),
        (true, false) => format!("/{body}"),
        _ if body.is_empty() => ".".to_string(),
        _ => body,
    }
}

/// Length in bytes of the `str.splitlines()` line terminator starting at `s[i]`, if any.
///
/// `s` must be valid UTF-8. Terminators: `\n`, `\r\n`, `\r`, `\x0b`, `\x0c`, `\x1c`,
/// `\x1d`, `\x1e`, `\x85`, `\u2028`, `\u2029`.
#[inline]
pub fn terminator_at(s: &[u8], i: usize) -> Option<usize> {
    match s[i] {
        b'\n' | 0x0b | 0x0c | 0x1c..=0x1e => Some(1),
        b'\r' => Some(if s.get(i + 1) == Some(&b'\n') { 2 } else { 1 }),
        0xC2 if s.get(i + 1) == Some(&0x85) => Some(2),
        0xE2 if s.get(i + 1) == Some(&0x80) && matches!(s.get(i + 2), Some(0xA8 | 0xA9)) => Some(3),
        _ => None,
    }
}

/// Whether byte `b` can start a `str.splitlines()` terminator other than `\n`.
#[inline]
pub fn is_rare_terminator_start(b: u8) -> bool {
    matches!(b, b'\r' | 0x0b | 0x0c | 0x1c..=0x1e | 0xC2 | 0xE2)
}

/// Whether any byte of `s` can start a terminator other than `\n` (vectorizable scan).
pub fn has_rare_terminator(s: &[u8]) -> bool {
    let mut acc = 0u8;
    for chunk in s.chunks(64) {
        for &b in chunk {
            acc |= (b == b'\r') as u8
                | (b == 0x0b) as u8
                | (b == 0x0c) as u8
                | (b.wrapping_sub(0x1c) < 3) as u8
                | (b == 0xC2) as u8
                | (b == 0xE2) as u8;
        }
        if acc != 0 {
            return true;
        }
    }
    false
}

/// Python's `str.splitlines(keepends=True)` over `s`.
pub fn split_lines_keepends(s: &str) -> Vec<&str> {
    let bytes = s.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(n) = terminator_at(bytes, i) {
            lines.push(&s[start..i + n]);
            i += n;
            start = i;
        } else {
            i += 1;
        }
    }
    if start < bytes.len() {
        lines.push(&s[start..]);
    }
    lines
}

/// Python's `str.splitlines()` (terminators dropped).
pub fn split_lines(s: &str) -> Vec<&str> {
    split_lines_keepends(s)
        .into_iter()
        .map(strip_terminator)
        .collect()
}

/// `line` without its trailing `str.splitlines()` terminator.
pub fn strip_terminator(line: &str) -> &str {
    let b = line.as_bytes();
    let n = b.len();
    if n >= 2 && &b[n - 2..] == b"\r\n" {
        return &line[..n - 2];
    }
    if n >= 3 && b[n - 3] == 0xE2 && b[n - 2] == 0x80 && matches!(b[n - 1], 0xA8 | 0xA9) {
        return &line[..n - 3];
    }
    if n >= 2 && b[n - 2] == 0xC2 && b[n - 1] == 0x85 {
        return &line[..n - 2];
    }
    if n >= 1 && matches!(b[n - 1], b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1e) {
        return &line[..n - 1];
    }
    line
}

/// Python `len()` of UTF-8 text: its number of code points.
#[inline]
pub fn char_len(s: &[u8]) -> usize {
    s.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_matches_python() {
        let cases = [
            ("a.txt", "'a.txt'"),
            ("it's", "\"it's\""),
            ("a'b\"c", "'a\\'b\"c'"),
            ("a\nb\t\\", "'a\\nb\\t\\\\'"),
            ("\x00\x7f", "'\\x00\\x7f'"),
            ("é\u{2028}", "'é\\u2028'"),
            ("\u{a0}", "'\\xa0'"),
        ];
        for (input, expected) in cases {
            assert_eq!(py_repr(input), expected, "{input:?}");
        }
    }

    #[test]
    fn splitlines_matches_python() {
        let cases: [(&str, &[&str]); 7] = [
            ("", &[]),
            ("a", &["a"]),
            ("a\n", &["a\n"]),
            ("a\r\nb\rc\n\nd", &["a\r\n", "b\r", "c\n", "\n", "d"]),
            (
                "a\x0bb\x0cc\x1cd\x1de\x1ef",
                &["a\x0b", "b\x0c", "c\x1c", "d\x1d", "e\x1e", "f"],
            ),
            (
                "a\u{85}b\u{2028}c\u{2029}",
                &["a\u{85}", "b\u{2028}", "c\u{2029}"],
            ),
            ("\r\r\n\n", &["\r", "\r\n", "\n"]),
        ];
        for (input, expected) in cases {
            assert_eq!(split_lines_keepends(input), expected, "{input:?}");
        }
        assert_eq!(split_lines("a\r\nb\u{2028}"), ["a", "b"]);
    }

    #[test]
    fn small_helpers() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(100), "100");
        assert_eq!(pure_posix("./a//b/./c/"), "a/b/c");
        assert_eq!(pure_posix(""), ".");
        assert_eq!(pure_posix("/x/../y"), "/x/../y");
        assert_eq!(unicode_escape("a\né"), "a\\n\\xe9");
        assert!(has_rare_terminator(b"abc\r"));
        assert!(!has_rare_terminator(b"abc\ndef"));
    }
}
