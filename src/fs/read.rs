//! Reading a file for the model in one streaming pass: binary sniff (NUL in the first 8192
//! bytes), content hash, lossy UTF-8 decode, `str.splitlines()` line count, and only the
//! requested window of numbered lines kept in memory; then the reference's rendering with
//! header, `max_read_chars` budget, oversized-line notice and continuation hint.

use std::io::Read;

use sha2::{Digest, Sha256};

use crate::cancel::CancelFlag;
use crate::error::{Error, ErrorKind, Result};
use crate::fs::hash::{is_binary, LossyDecoder, BINARY_SAMPLE};
use crate::fs::text::{
    char_len, has_rare_terminator, has_terminator_besides_crlf, terminator_at, thousands,
};

/// Chunk size of the streaming read (bytes): small enough to stay in cache while hashed and scanned.
pub const READ_CHUNK: usize = 256 * 1024;

/// Room reserved for the longest notice appended after the numbered lines (chars).
/// Source: `_NOTICE_CHARS`, _toolset.py.
pub const NOTICE_CHARS: usize = 200;

/// Block size of the bulk line count (bytes).
const BLOCK: usize = 64 * 1024;

/// A captured window line: its text (terminator kept) and its length in chars.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowLine {
    /// The line as decoded, with its own terminator.
    pub text: String,
    /// Python `len(line)`.
    pub chars: usize,
}

/// The line window to keep while scanning: 0-based `offset`, at most `limit` lines, and an
/// upper bound `cap` (chars) on the rendered lines kept (`None`: no bound).
#[derive(Debug, Clone, Copy)]
pub struct WindowSpec {
    /// First line kept (0-based).
    pub offset: usize,
    /// Lines kept at most.
    pub limit: usize,
    /// Upper bound on the rendered chars kept.
    pub cap: Option<usize>,
}

/// What one pass over a file found.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Bytes read.
    pub size: u64,
    /// NUL in the first 8192 bytes.
    pub binary: bool,
    /// The `_disk_hash` (12 hex chars).
    pub hash: String,
    /// `len(text.splitlines())` (0 for a binary file).
    pub total_lines: usize,
    /// The kept window lines.
    pub lines: Vec<WindowLine>,
    /// Length in chars of the first window line, even when it was not kept.
    pub first_len: Option<usize>,
}

fn number_width(n: usize) -> usize {
    let digits = n.to_string().len();
    digits.max(6)
}

/// The `str.splitlines(keepends=True)` state machine with a kept window.
#[derive(Debug)]
struct Lines {
    spec: WindowSpec,
    line_idx: usize,
    cur_nonempty: bool,
    pending_cr: bool,
    cur_buf: Vec<u8>,
    cur_chars: usize,
    cur_keep: bool,
    used: usize,
    done: bool,
    lines: Vec<WindowLine>,
    first_len: Option<usize>,
}

impl Lines {
    fn new(spec: WindowSpec) -> Self {
        Lines {
            spec,
            line_idx: 0,
            cur_nonempty: false,
            pending_cr: false,
            cur_buf: Vec::new(),
            cur_chars: 0,
            cur_keep: true,
            used: 0,
            done: spec.limit == 0,
            lines: Vec::new(),
            first_len: None,
        }
    }

    fn in_window(&self) -> bool {
        !self.done
            && self.line_idx >= self.spec.offset
            && self.line_idx - self.spec.offset < self.spec.limit
    }

    fn finish_line(&mut self) {
        if self.in_window() {
            let number = self.line_idx + 1;
            let rendered = number_width(number) + 1 + self.cur_chars;
            if self.line_idx == self.spec.offset {
                self.first_len = Some(self.cur_chars);
            }
            let fits = self.cur_keep && self.spec.cap.is_none_or(|cap| self.used + rendered <= cap);
            if fits {
                let text = String::from_utf8(std::mem::take(&mut self.cur_buf)).unwrap_or_default();
                self.lines.push(WindowLine {
                    text,
                    chars: self.cur_chars,
                });
                self.used += rendered;
                if self.lines.len() >= self.spec.limit {
                    self.done = true;
                }
            } else {
                self.done = true;
            }
        }
        self.line_idx += 1;
        self.cur_nonempty = false;
        self.cur_buf.clear();
        self.cur_chars = 0;
        self.cur_keep = true;
    }

    /// Appends `seg` (no terminator inside, except possibly its end) to the current line.
    fn append(&mut self, seg: &[u8]) {
        if seg.is_empty() {
            return;
        }
        self.cur_nonempty = true;
        if !self.in_window() {
            return;
        }
        self.cur_chars += char_len(seg);
        if self.cur_keep {
            let number = self.line_idx + 1;
            if let Some(cap) = self.spec.cap {
                if self.used + number_width(number) + 1 + self.cur_chars > cap {
                    // It cannot fit: stop keeping its text, only count it.
                    self.cur_keep = false;
                    self.cur_buf = Vec::new();
                    return;
                }
            }
            self.cur_buf.extend_from_slice(seg);
        }
    }

    /// Feeds a piece of valid UTF-8 that ends on a char boundary.
    fn feed(&mut self, mut s: &[u8]) {
        if s.is_empty() {
            return;
        }
        if self.pending_cr {
            self.pending_cr = false;
            if s[0] == b'\n' {
                self.append(b"\n");
                s = &s[1..];
            }
            self.finish_line();
        }
        let mut pos = 0;
        while pos < s.len() {
            if self.past_window() {
                self.bulk(&s[pos..]);
                return;
            }
            let block_end = (pos + BLOCK).min(s.len());
            let block = &s[pos..block_end];
            let rare = has_rare_terminator(block);
            if !rare && self.line_idx < self.spec.offset {
                // Lines before the window: count a whole block when the window starts after it.
                let count = memchr::memchr_iter(b'\n', block).count();
                if self.line_idx + count < self.spec.offset {
                    self.line_idx += count;
                    self.cur_nonempty = match memchr::memrchr(b'\n', block) {
                        Some(last) => last + 1 < block.len(),
                        None => true,
                    };
                    pos = block_end;
                    continue;
                }
            }
            // Line by line within this block (a terminator may end just past it).
            let mut p = pos;
            while p < block_end {
                if self.past_window() {
                    break;
                }
                let found = if rare {
                    (p..block_end).find_map(|j| terminator_at(s, j).map(|n| (j, n)))
                } else {
                    memchr::memchr(b'\n', &s[p..block_end]).map(|q| (p + q, 1))
                };
                match found {
                    Some((at, n)) => {
                        let end = at + n;
                        self.append(&s[p..end]);
                        if n == 1 && s[at] == b'\r' && end == s.len() {
                            self.pending_cr = true;
                            return;
                        }
                        self.finish_line();
                        p = end;
                    }
                    None => {
                        self.append(&s[p..block_end]);
                        p = block_end;
                    }
                }
            }
            pos = p;
        }
    }

    fn past_window(&self) -> bool {
        self.done || self.line_idx >= self.spec.offset.saturating_add(self.spec.limit)
    }

    /// Counts the lines of `s` without keeping any.
    fn bulk(&mut self, s: &[u8]) {
        let mut i = 0;
        let mut last_end = 0;
        let mut count = 0usize;
        // Position before which a `\n` was already counted with its `\r`.
        let mut skip_until = 0;
        while i < s.len() {
            let end = (i + BLOCK).min(s.len());
            let block = &s[i..end];
            if !has_rare_terminator(block) {
                let mut c = 0;
                let mut last = None;
                for p in memchr::memchr_iter(b'\n', block) {
                    if i + p >= skip_until {
                        c += 1;
                    }
                    last = Some(p);
                }
                if let Some(p) = last {
                    last_end = i + p + 1;
                }
                count += c;
                i = end;
            } else if !has_terminator_besides_crlf(block) {
                // Only `\r` and `\n`: count each `\n`, each lone `\r`, each `\r\n` once.
                for p in memchr::memchr2_iter(b'\n', b'\r', block) {
                    let j = i + p;
                    if j < skip_until {
                        continue;
                    }
                    if s[j] == b'\r' {
                        if j + 1 == s.len() {
                            // A final `\r` may pair with a `\n` in the next piece.
                            self.line_idx += count;
                            self.cur_nonempty = true;
                            self.pending_cr = true;
                            return;
                        }
                        if s[j + 1] == b'\n' {
                            skip_until = j + 2;
                            last_end = j + 2;
                            count += 1;
                            continue;
                        }
                    }
                    count += 1;
                    last_end = j + 1;
                }
                i = end;
            } else {
                let mut j = i.max(skip_until);
                while j < end {
                    if let Some(n) = terminator_at(s, j) {
                        if n == 1 && s[j] == b'\r' && j + 1 == s.len() {
                            // A final `\r` may pair with a `\n` in the next piece.
                            self.line_idx += count;
                            self.cur_nonempty = true;
                            self.pending_cr = true;
                            return;
                        }
                        count += 1;
                        j += n;
                        last_end = j;
                    } else {
                        j += 1;
                    }
                }
                skip_until = j;
                i = end.max(j);
            }
        }
        self.line_idx += count;
        if count > 0 {
            self.cur_nonempty = last_end < s.len();
        } else {
            self.cur_nonempty = true;
        }
    }

    fn finish(&mut self) -> usize {
        if self.pending_cr {
            self.pending_cr = false;
            self.finish_line();
        } else if self.cur_nonempty {
            self.finish_line();
        }
        self.line_idx
    }
}

/// Scans everything `reader` yields: size, binary, hash, line count and the window.
///
/// Memory: the window lines plus one chunk. Polls `cancel` per chunk.
/// Errors: I/O errors as `Err(io)` in the outer result; `Cancelled` in the inner one.
pub fn scan(
    reader: &mut impl Read,
    window: WindowSpec,
    cancel: &CancelFlag,
) -> std::io::Result<Result<Scan>> {
    let mut buf = vec![0u8; READ_CHUNK];
    let mut digest = Sha256::new();
    let mut decoder = LossyDecoder::new();
    let mut lines = Lines::new(window);
    let mut size = 0u64;
    // Fill the binary sample first.
    let mut filled = 0;
    while filled < BINARY_SAMPLE {
        let n = read_some(reader, &mut buf[filled..])?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    let binary = is_binary(&buf[..filled]);
    let mut chunk_len = filled;
    loop {
        if cancel.is_cancelled() {
            return Ok(Err(Error::cancelled()));
        }
        if chunk_len == 0 {
            break;
        }
        let chunk = &buf[..chunk_len];
        size += chunk_len as u64;
        if binary {
            digest.update(chunk);
        } else {
            decoder.feed(chunk, &mut |piece| {
                digest.update(piece);
                lines.feed(piece);
            });
        }
        chunk_len = read_some(reader, &mut buf)?;
    }
    if !binary {
        decoder.finish(&mut |piece| {
            digest.update(piece);
            lines.feed(piece);
        });
    }
    let total_lines = if binary { 0 } else { lines.finish() };
    let d = digest.finalize();
    let hash: String = d[..6].iter().map(|b| format!("{b:02x}")).collect();
    Ok(Ok(Scan {
        size,
        binary,
        hash,
        total_lines,
        lines: lines.lines,
        first_len: lines.first_len,
    }))
}

fn read_some(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match reader.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// The options of one `read_file` rendering.
#[derive(Debug, Clone, Copy)]
pub struct ReadSpec {
    /// 0-based first line.
    pub offset: usize,
    /// Lines at most (already capped at `max_read_lines`).
    pub limit: usize,
    /// Cap on the whole result (chars), header and notice included.
    pub max_read_chars: Option<usize>,
    /// Whether the header shows the hash.
    pub content_hashes: bool,
}

impl ReadSpec {
    /// The window to keep while scanning: the budget bound assumes the shortest header.
    pub fn window(&self, label: &str) -> WindowSpec {
        let cap = self.max_read_chars.map(|m| {
            let header = header(label, 0, "", self.content_hashes, Some(m));
            m.saturating_sub(header.chars().count() + NOTICE_CHARS)
        });
        WindowSpec {
            offset: self.offset,
            limit: self.limit,
            cap,
        }
    }
}

pub(crate) fn label_of(path: &str, max_read_chars: Option<usize>) -> String {
    if let Some(m) = max_read_chars {
        let keep = m / 4;
        let n = path.chars().count();
        if n > keep {
            // `path[-0:]` is the whole path in Python.
            let tail: String = if keep == 0 {
                path.to_string()
            } else {
                path.chars().skip(n - keep).collect()
            };
            return format!("...{tail}");
        }
    }
    path.to_string()
}

/// The header `[<label> | N lines | hash:H]\n`. Source: `_read_header`, _toolset.py.
pub fn header(
    path: &str,
    total: usize,
    hash: &str,
    content_hashes: bool,
    max_read_chars: Option<usize>,
) -> String {
    let label = label_of(path, max_read_chars);
    if content_hashes {
        format!("[{label} | {total} lines | hash:{hash}]\n")
    } else {
        format!("[{label} | {total} lines]\n")
    }
}

/// The binary placeholder. Source: `_read_file`, _toolset.py.
pub fn binary_placeholder(size: u64) -> String {
    format!("[Binary file: {size} bytes. Use a binary-aware tool to inspect.]")
}

/// Renders a finished text scan as the reference's `read_file` result.
///
/// Errors: `ErrorKind::OffsetPastEnd` `Offset K exceeds file length (N lines).`.
/// Source: `_read_file`, `_format_lines`, `_body_budget`, _toolset.py.
pub fn render(path: &str, scan: &Scan, spec: &ReadSpec) -> Result<String> {
    let head = header(
        path,
        scan.total_lines,
        &scan.hash,
        spec.content_hashes,
        spec.max_read_chars,
    );
    let budget = spec
        .max_read_chars
        .map(|m| m.saturating_sub(head.chars().count() + NOTICE_CHARS));
    let total = scan.total_lines;
    if total == 0 {
        return Ok(head + "(empty file)\n");
    }
    if spec.offset >= total {
        return Err(Error::new(
            ErrorKind::OffsetPastEnd,
            format!(
                "Offset {} exceeds file length ({} lines).",
                spec.offset, total
            ),
        ));
    }
    let mut body = String::new();
    let mut shown = 0usize;
    let mut left = budget;
    let wanted = spec.limit.min(total - spec.offset);
    for i in 0..wanted {
        let number = spec.offset + i + 1;
        let (chars, line) = match scan.lines.get(i) {
            Some(l) => (l.chars, Some(l)),
            None => (
                if i == 0 {
                    scan.first_len.unwrap_or(usize::MAX)
                } else {
                    usize::MAX
                },
                None,
            ),
        };
        let rendered = number_width(number).saturating_add(1).saturating_add(chars);
        let fits = match left {
            Some(b) => rendered <= b && line.is_some(),
            None => line.is_some(),
        };
        if !fits {
            if shown == 0 {
                let len = if i == 0 {
                    scan.first_len.unwrap_or(chars)
                } else {
                    chars
                };
                return Ok(head
                    + &format!(
                        "... (Line {number} is {} characters and does not fit the read window. \
                         Use offset={number} to skip it, or a shell byte range to inspect it.)\n",
                        thousands(len as u64)
                    ));
            }
            break;
        }
        let line = line.expect("checked above");
        body.push_str(&format!("{number:>6}\t"));
        body.push_str(&line.text);
        shown += 1;
        if let Some(b) = left.as_mut() {
            *b -= rendered;
        }
    }
    if !body.ends_with('\n') {
        body.push('\n');
    }
    let remaining = total - (spec.offset + shown);
    if remaining > 0 {
        let next = spec.offset + shown;
        body.push_str(&format!(
            "... ({remaining} more lines. Use offset={next} to continue reading.)\n"
        ));
    }
    Ok(head + &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::text::split_lines_keepends;

    fn spec(offset: usize, limit: usize, max_read_chars: Option<usize>) -> ReadSpec {
        ReadSpec {
            offset,
            limit,
            max_read_chars,
            content_hashes: true,
        }
    }

    /// The reference algorithm over a whole in-memory text, for cross-checking.
    fn reference(path: &str, data: &[u8], s: &ReadSpec) -> Result<String> {
        let text = String::from_utf8_lossy(data).into_owned();
        let lines = split_lines_keepends(&text);
        let hash = crate::fs::hash::content_hash(data);
        let head = header(path, lines.len(), &hash, s.content_hashes, s.max_read_chars);
        if lines.is_empty() {
            return Ok(head + "(empty file)\n");
        }
        if s.offset >= lines.len() {
            return Err(Error::new(ErrorKind::OffsetPastEnd, "past"));
        }
        let mut budget = s
            .max_read_chars
            .map(|m| m.saturating_sub(head.chars().count() + NOTICE_CHARS));
        let mut out = Vec::new();
        for (k, line) in lines.iter().enumerate().skip(s.offset).take(s.limit) {
            let number = k + 1;
            let rendered = format!("{number:>6}\t{line}");
            let n = rendered.chars().count();
            if let Some(b) = budget {
                if n > b {
                    if out.is_empty() {
                        return Ok(head
                            + &format!(
                                "... (Line {number} is {} characters and does not fit the read window. \
                                 Use offset={number} to skip it, or a shell byte range to inspect it.)\n",
                                thousands(line.chars().count() as u64)
                            ));
                    }
                    break;
                }
                budget = Some(b - n);
            }
            out.push(rendered);
        }
        let mut result = out.concat();
        if !result.ends_with('\n') {
            result.push('\n');
        }
        let remaining = lines.len() - (s.offset + out.len());
        if remaining > 0 {
            result += &format!(
                "... ({remaining} more lines. Use offset={} to continue reading.)\n",
                s.offset + out.len()
            );
        }
        Ok(head + &result)
    }

    fn ours(path: &str, data: &[u8], s: &ReadSpec, chunk: usize) -> Result<String> {
        struct Chunked<'a>(&'a [u8], usize);
        impl Read for Chunked<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(self.1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let scan = scan(
            &mut Chunked(data, chunk),
            s.window(path),
            &CancelFlag::new(),
        )
        .unwrap()?;
        assert!(!scan.binary);
        render(path, &scan, s)
    }

    #[test]
    fn matches_reference_algorithm() {
        let texts: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"x\ny\n".to_vec(),
            b"no newline".to_vec(),
            b"a\r\nb\rc\r\r\nd\x0be\x0cf\x1cg\x1dh\x1ei".to_vec(),
            "uni\u{85}code\u{2028}sep\u{2029}end\n".as_bytes().to_vec(),
            b"bad \xff\xfe bytes\n\xe2\x82\nlast".to_vec(),
            (0..50)
                .map(|i| format!("line {i} {}\n", "w".repeat(i * 3)))
                .collect::<String>()
                .into_bytes(),
            format!("short\n{}\nafter\n", "L".repeat(500)).into_bytes(),
            b"\r\n\r\n\n\r".to_vec(),
            (0..15000)
                .map(|i| {
                    if i % 5 == 0 {
                        format!("crlf {i}\r")
                    } else {
                        format!("crlf {i}\r\n")
                    }
                })
                .collect::<String>()
                .into_bytes(),
            (0..20000)
                .map(|i| format!("row {i}\n"))
                .collect::<String>()
                .into_bytes(),
            (0..20000)
                .map(|i| {
                    if i % 997 == 0 {
                        format!("r\r{i}\u{2028}")
                    } else {
                        format!("row {i}\n")
                    }
                })
                .collect::<String>()
                .into_bytes(),
        ];
        let specs = [
            spec(0, 2000, None),
            spec(1, 2, None),
            spec(0, 0, None),
            spec(3, 5, None),
            spec(0, 2000, Some(300)),
            spec(1, 2000, Some(260)),
            spec(0, 10, Some(3)),
            spec(2, 2000, Some(700)),
            spec(15000, 3, None),
            spec(19990, 2000, Some(400)),
        ];
        for text in &texts {
            for s in &specs {
                let expected = reference("f.txt", text, s);
                for chunk in [1, 2, 3, 7, 8192, 1 << 20] {
                    let got = ours("f.txt", text, s, chunk);
                    match (&expected, &got) {
                        (Ok(e), Ok(g)) => assert_eq!(g, e, "{text:?} {s:?} chunk {chunk}"),
                        (Err(_), Err(g)) => assert_eq!(g.kind, ErrorKind::OffsetPastEnd),
                        _ => panic!("{text:?} {s:?} {expected:?} {got:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn exact_strings() {
        let s = spec(0, 2000, None);
        assert_eq!(
            ours("a.txt", b"x\ny\n", &s, 100).unwrap(),
            "[a.txt | 2 lines | hash:09834d488008]\n     1\tx\n     2\ty\n"
        );
        let s = spec(0, 1, None);
        assert_eq!(
            ours("a.txt", b"x\ny\n", &s, 100).unwrap(),
            "[a.txt | 2 lines | hash:09834d488008]\n     1\tx\n... (1 more lines. Use offset=1 to continue reading.)\n"
        );
        let e = ours("a.txt", b"x\ny\n", &spec(5, 10, None), 100).unwrap_err();
        assert_eq!(e.message, "Offset 5 exceeds file length (2 lines).");
        assert_eq!(label_of("abcdefgh", Some(8)), "...gh");
        assert_eq!(label_of("abc", Some(3)), "...abc");
        assert_eq!(
            binary_placeholder(3),
            "[Binary file: 3 bytes. Use a binary-aware tool to inspect.]"
        );
    }
}
