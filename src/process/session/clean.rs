//! A session's transcript as the model reads it: `clean_output`'s rules and a terminal's
//! treatment of control characters, applied as the bytes arrive, in bounded memory.
//!
//! Fed a window's bytes in chunks of any size, [`Cleaner`] produces for the whole window what
//! Python's `clean_text` (`shell/_modes.py`, `clean_output`) gives, then what a terminal shows of
//! the control characters left (the expected texts of the tests are Python's):
//! - bytes that are not UTF-8 as `\xNN` (each byte of an invalid or cut-off sequence);
//! - escape sequences removed: OSC (`ESC ]` ... `BEL` or `ESC \`), CSI (`ESC [` ...), DCS, PM
//!   and APC strings (`ESC P`/`^`/`_` ... `ESC \`), two-character escapes, 8-bit CSI (U+009B);
//! - each line's carriage-return frames collapsed to its last non-empty frame (`\r\n` ends a line);
//! - C0 controls other than tab and newline, and DEL, removed; a backspace takes back the
//!   character before it on its line.
//!
//! Memory stays bounded: an escape sequence still open after [`ESCAPE_LIMIT`] bytes is judged
//! as if the window ended there (an unterminated OSC or DCS loses its two introducing characters
//! only), and a line frame longer than [`FRAME_LIMIT`] bytes is passed on as it stands (a later
//! carriage return on that line no longer takes it back).

/// Bytes an unfinished escape sequence may hold before it is judged without its end.
pub const ESCAPE_LIMIT: usize = 64 * 1024;

/// Bytes of one line frame kept before they are passed on.
pub const FRAME_LIMIT: usize = 1 << 20;

/// The streaming cleaner of one window (see the module's rules).
#[derive(Debug, Default)]
pub struct Cleaner {
    /// The first bytes of a UTF-8 sequence cut by the end of the last chunk (at most 3).
    undecoded: Vec<u8>,
    /// Decoded text from an escape sequence's start, waiting for the rest of it.
    escape: Vec<u8>,
    /// The current carriage-return frame of the line.
    frame: Vec<u8>,
    /// The line's last non-empty frame before `frame`.
    last: Vec<u8>,
    /// Decoded text of the chunk being fed.
    text: Vec<u8>,
}

/// What stands at an escape character.
enum Escape {
    /// A sequence of this many bytes, removed.
    Strip(usize),
    /// No sequence: the first this many bytes are text.
    Keep(usize),
    /// Cannot tell before more text arrives.
    More,
}

impl Cleaner {
    /// A cleaner at the start of a window.
    pub fn new() -> Cleaner {
        Cleaner::default()
    }

    /// Cleans `raw` (the next bytes of the window), appending finished text to `out`; the end of
    /// an unfinished line stays here until its newline or [`Cleaner::finish`].
    pub fn feed(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        text.append(&mut self.escape);
        if self.undecoded.is_empty() {
            decode(raw, &mut text, &mut self.undecoded);
        } else {
            let mut joined = std::mem::take(&mut self.undecoded);
            joined.extend_from_slice(raw);
            decode(&joined, &mut text, &mut self.undecoded);
        }
        self.scan(&text, false, out);
        self.text = text;
    }

    /// Ends the window: what is left (a cut-off UTF-8 sequence, an unfinished escape, the last
    /// line without its newline) is cleaned and appended to `out`, and the cleaner starts anew.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let mut text = std::mem::take(&mut self.escape);
        for b in std::mem::take(&mut self.undecoded) {
            push_hex(&mut text, b);
        }
        self.scan(&text, true, out);
        let line = if self.frame.is_empty() {
            &self.last
        } else {
            &self.frame
        };
        push_line(line, out);
        self.frame.clear();
        self.last.clear();
    }

    /// Runs decoded `text` through the escape, frame and control rules. Without `at_end`, an
    /// escape sequence reaching the end of `text` waits in `self.escape` for more.
    fn scan(&mut self, text: &[u8], at_end: bool, out: &mut Vec<u8>) {
        let mut i = 0;
        let mut plain = 0; // start of the run of ordinary bytes not yet in `frame`
        while i < text.len() {
            let b = text[i];
            let special =
                matches!(b, b'\r' | b'\n' | 0x1b) || (b == 0xc2 && text.get(i + 1) == Some(&0x9b));
            if !special {
                i += 1;
                continue;
            }
            self.push_frame(&text[plain..i], out);
            match b {
                b'\r' => {
                    if !self.frame.is_empty() {
                        std::mem::swap(&mut self.last, &mut self.frame);
                        self.frame.clear();
                    }
                    i += 1;
                }
                b'\n' => {
                    let line = if self.frame.is_empty() {
                        &self.last
                    } else {
                        &self.frame
                    };
                    push_line(line, out);
                    out.push(b'\n');
                    self.frame.clear();
                    self.last.clear();
                    i += 1;
                }
                _ => {
                    let rest = &text[i..];
                    let judged = escape_at(rest, at_end || rest.len() > ESCAPE_LIMIT);
                    match judged {
                        Escape::Strip(n) => i += n,
                        Escape::Keep(n) => {
                            self.push_frame(&text[i..i + n], out);
                            i += n;
                        }
                        Escape::More => {
                            self.escape.extend_from_slice(rest);
                            return;
                        }
                    }
                }
            }
            plain = i;
        }
        self.push_frame(&text[plain..], out);
    }

    /// Adds ordinary text to the current frame; a frame past [`FRAME_LIMIT`] is passed on.
    fn push_frame(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        self.frame.extend_from_slice(bytes);
        if self.frame.len() > FRAME_LIMIT {
            push_line(&self.frame, out);
            self.frame.clear();
            self.last.clear();
        }
    }
}

/// Appends `raw` decoded to `text`: valid UTF-8 as is, each byte of an invalid sequence as
/// `\xNN`; a sequence cut by the end of `raw` goes to `undecoded`.
fn decode(raw: &[u8], text: &mut Vec<u8>, undecoded: &mut Vec<u8>) {
    let mut rest = raw;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                text.extend_from_slice(valid.as_bytes());
                return;
            }
            Err(e) => {
                let good = e.valid_up_to();
                text.extend_from_slice(&rest[..good]);
                match e.error_len() {
                    Some(bad) => {
                        for &b in &rest[good..good + bad] {
                            push_hex(text, b);
                        }
                        rest = &rest[good + bad..];
                    }
                    None => {
                        undecoded.extend_from_slice(&rest[good..]);
                        return;
                    }
                }
            }
        }
    }
}

fn push_hex(text: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    text.extend_from_slice(&[
        b'\\',
        b'x',
        HEX[usize::from(b >> 4)],
        HEX[usize::from(b & 15)],
    ]);
}

/// Appends a line's chosen frame without the controls a terminal does not show, each backspace
/// taking back the character before it on the line.
fn push_line(line: &[u8], out: &mut Vec<u8>) {
    let is_control = |b: u8| (b < 0x20 && b != b'\t') || b == 0x7f;
    if !line.iter().any(|&b| is_control(b)) {
        out.extend_from_slice(line);
        return;
    }
    let start = out.len();
    for &b in line {
        if b == 0x08 {
            // Take back one character: its continuation bytes, then its first byte.
            while out.len() > start && out[out.len() - 1] & 0xc0 == 0x80 {
                out.pop();
            }
            if out.len() > start {
                out.pop();
            }
        } else if !is_control(b) {
            out.push(b);
        }
    }
}

/// What `s` (starting with `ESC` or U+009B) begins with, as Python's `_ANSI` pattern reads it
/// (its alternatives in order); with `at_end`, no more text follows `s`.
fn escape_at(s: &[u8], at_end: bool) -> Escape {
    let more_or = |judged: Escape| if at_end { judged } else { Escape::More };
    if s[0] == 0xc2 {
        // 8-bit CSI: params, intermediates, a final byte.
        return match csi_end(s, 2) {
            Some(Some(end)) => Escape::Strip(end),
            Some(None) => Escape::Keep(2),
            None => more_or(Escape::Keep(2)),
        };
    }
    if s.len() < 2 {
        return more_or(Escape::Keep(1));
    }
    let string_end = |from: usize, stops: &[u8]| -> Option<Option<usize>> {
        // Some(Some(end)): terminated; Some(None): a stop that does not end it; None: no stop yet.
        let found = s[from..].iter().position(|b| stops.contains(b))? + from;
        if s[found] == 0x07 {
            return Some(Some(found + 1));
        }
        match s.get(found + 1) {
            Some(b'\\') => Some(Some(found + 2)),
            Some(_) => Some(None),
            None => None,
        }
    };
    let judged = match s[1] {
        b']' => string_end(2, &[0x07, 0x1b]),
        b'[' => csi_end(s, 2),
        b'P' | b'^' | b'_' => string_end(2, &[0x1b]),
        _ => Some(None),
    };
    match judged {
        Some(Some(end)) => Escape::Strip(end),
        None if !at_end => Escape::More,
        _ => two_char(s, at_end),
    }
}

/// `ESC [ -/]* [0-~]`: the two-character escape (with intermediates), the last alternative.
fn two_char(s: &[u8], at_end: bool) -> Escape {
    let mut j = 1;
    while j < s.len() && (0x20..=0x2f).contains(&s[j]) {
        j += 1;
    }
    match s.get(j) {
        Some(b) if (0x30..=0x7e).contains(b) => Escape::Strip(j + 1),
        Some(_) => Escape::Keep(1),
        None if at_end => Escape::Keep(1),
        None => Escape::More,
    }
}

/// The end of `[0-?]* [ -/]* [@-~]` from `from`: `Some(Some(end))` when it matches,
/// `Some(None)` when it cannot, `None` when `s` ends first.
fn csi_end(s: &[u8], from: usize) -> Option<Option<usize>> {
    let mut j = from;
    while j < s.len() && (0x30..=0x3f).contains(&s[j]) {
        j += 1;
    }
    while j < s.len() && (0x20..=0x2f).contains(&s[j]) {
        j += 1;
    }
    let b = *s.get(j)?;
    Some((0x40..=0x7e).contains(&b).then_some(j + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean_in(chunks: &[&[u8]]) -> String {
        let mut c = Cleaner::new();
        let mut out = Vec::new();
        for chunk in chunks {
            c.feed(chunk, &mut out);
        }
        c.finish(&mut out);
        String::from_utf8(out).unwrap()
    }

    /// Every split of `raw` into two chunks, and byte by byte, gives `expected`.
    fn check(raw: &[u8], expected: &str) {
        assert_eq!(clean_in(&[raw]), expected, "whole {raw:?}");
        for cut in 0..=raw.len() {
            assert_eq!(
                clean_in(&[&raw[..cut], &raw[cut..]]),
                expected,
                "cut at {cut} of {raw:?}"
            );
        }
        let bytes: Vec<&[u8]> = raw.chunks(1).collect();
        assert_eq!(clean_in(&bytes), expected, "bytewise {raw:?}");
    }

    #[test]
    fn follows_the_python_rules() {
        // (raw window, what `terminal_text(clean_text(raw))` gives)
        let cases: &[(&[u8], &str)] = &[
            (b"hello\r\nworld\r\n", "hello\nworld\n"),
            (b"\x1b[1;31mred\x1b[0m plain", "red plain"),
            (
                b"\x1b]0;title\x07text\x1b]8;;http://x\x1b\\link",
                "textlink",
            ),
            (b"\x1b]unterminated", "unterminated"),
            (b"\x1b[12", "12"),
            (b"\x1bPdata\x1b\\after", "after"),
            (b"\x1bPdata\x1bxafter", "dataafter"),
            (b"\x1b(Bx\x1b=y", "xy"),
            (b"a\x1b\nb", "a\nb"),
            (b"10%\r20%\r100%\r\ndone\n", "100%\ndone\n"),
            (b"abc\r\x1b[K\n", "abc\n"),
            (b"abc\r\x07\n", "\n"),
            (b"ab\x08 \x08c\x1d\x18\x04d\tx\n", "acd\tx\n"),
            (b"\x08\x08x\n\x08y", "x\ny"),
            ("caf\u{e9}\u{8}!".as_bytes(), "caf!"),
            (b"bad \xff\xfe ok \xe2\x82", "bad \\xff\\xfe ok \\xe2\\x82"),
            (b"\xe2\x82a", "\\xe2\\x82a"),
            ("\u{9b}1mx\u{9b}".as_bytes(), "x\u{9b}"),
            (b"\x1b", ""),
            (b"\r\r\n\rx\r\r", "\nx"),
        ];
        for (raw, expected) in cases {
            check(raw, expected);
        }
    }

    #[test]
    fn windows_are_cleaned_apart() {
        let mut c = Cleaner::new();
        let mut out = Vec::new();
        c.feed(b">>> ", &mut out);
        assert!(out.is_empty());
        c.finish(&mut out);
        c.feed(b"\r\n1\r\n", &mut out);
        c.finish(&mut out);
        assert_eq!(out, b">>> \n1\n");
    }

    #[test]
    fn an_endless_escape_or_frame_is_passed_on() {
        let mut c = Cleaner::new();
        let mut out = Vec::new();
        c.feed(b"\x1b]", &mut out);
        c.feed(&vec![b'x'; ESCAPE_LIMIT + 10], &mut out);
        assert!(c.escape.is_empty());
        c.feed(&vec![b'y'; FRAME_LIMIT], &mut out);
        assert!(c.frame.len() <= FRAME_LIMIT);
        c.finish(&mut out);
        assert_eq!(out.len(), ESCAPE_LIMIT + 10 + FRAME_LIMIT);
    }
}
