//! Reading a file for the model in one streaming pass: binary sniff (NUL in the first 8192
//! bytes), content hash, lossy UTF-8 decode, line count, and only the requested window of
//! numbered lines kept in memory; then the reference's rendering with header,
//! `max_read_chars` budget, oversized-line notice and continuation hint.
//!
//! The two contracts differ in three places, chosen by [`WindowSpec::contract`]: lines end at
//! every `str.splitlines()` terminator (document, 0.36.0) or at `\n` only (workspace,
//! 0.62.0 `split_lines`); the hash is of the lossy decode or of the raw bytes; and the
//! workspace contract also sniffs images and PDFs by their magic bytes, keeps the first
//! [`HEX_PREVIEW_BYTES`] for a binary file's hex preview and the whole file (up to
//! [`MAX_MEDIA_BYTES`]) for an image or PDF. The pass never holds more than that: a file of
//! any size is read by window (0.62.0 refuses files over 64 MiB).

pub mod body;
pub mod cache;
pub mod clip;
pub mod encoding;
pub mod gate;
pub mod hash;

use std::io::Read;

use crate::cancel::CancelFlag;
use crate::error::{Error, ErrorKind, Result};
use crate::fs::contract::Contract;
use crate::fs::read::body::Body;
use crate::fs::read::encoding::{InvalidUtf8, Utf16};
use crate::fs::read::hash::{is_binary, HashSink, BINARY_SAMPLE};
use crate::fs::text::{
    char_len, has_rare_terminator, has_terminator_besides_crlf, terminator_at, thousands,
};

/// Largest image or PDF `read_file` returns as file content (bytes); a larger one is
/// described in text. Source: `MAX_MEDIA_BYTES`, filesystem/_content.py (0.62.0).
pub const MAX_MEDIA_BYTES: u64 = 5_000_000;

/// Leading bytes of a non-media binary file shown as hex. Source: `_HEX_PREVIEW_BYTES`.
pub const HEX_PREVIEW_BYTES: usize = 64;

/// Characters of one full hex row: 8-digit offset, two spaces, 16 bytes, newline.
const HEX_ROW_CHARS: usize = 58;

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
/// upper bound `cap` (chars) on the rendered lines kept (`None`: no bound); the contract
/// whose line ends and hash apply, and whether to keep an image or PDF's bytes.
#[derive(Debug, Clone, Copy)]
pub struct WindowSpec {
    /// First line kept (0-based).
    pub offset: usize,
    /// Lines kept at most.
    pub limit: usize,
    /// Upper bound on the rendered chars kept.
    pub cap: Option<usize>,
    /// Document: `str.splitlines()` lines, hash of the lossy decode. Workspace: `\n` lines,
    /// hash of the raw bytes, media sniffed.
    pub contract: Contract,
    /// Workspace contract: keep the bytes of an image or PDF up to [`MAX_MEDIA_BYTES`].
    pub keep_media: bool,
    /// Keep the lines already rendered, in [`Scan::body`] ([`crate::fs::read::body`]), instead of
    /// one [`WindowLine`] each in [`Scan::lines`] (what clipping long lines needs).
    pub rendered: bool,
}

impl WindowSpec {
    /// A window that keeps no lines: for the line count and hash alone (`file_info`).
    pub fn count_only(contract: Contract) -> Self {
        WindowSpec {
            offset: 0,
            limit: 0,
            cap: None,
            contract,
            keep_media: false,
            rendered: false,
        }
    }
}

/// What one pass over a file found.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Bytes read.
    pub size: u64,
    /// NUL in the first 8192 bytes (`is_binary`).
    pub binary: bool,
    /// Workspace contract: the image or PDF media type its leading bytes name.
    pub media_type: Option<&'static str>,
    /// Workspace contract: the first [`HEX_PREVIEW_BYTES`] bytes.
    pub head: Vec<u8>,
    /// Workspace contract, `keep_media`: the whole image or PDF when it is at most
    /// [`MAX_MEDIA_BYTES`].
    pub media: Option<Vec<u8>>,
    /// The content hash (12 hex chars) the contract defines.
    pub hash: String,
    /// The line count (0 for a binary file): `len(text.splitlines())` (document) or the
    /// `\n`-split count (workspace).
    pub total_lines: usize,
    /// The kept window lines.
    pub lines: Vec<WindowLine>,
    /// The kept window lines, rendered ([`WindowSpec::rendered`]).
    pub body: Body,
    /// Length in chars of the first window line, even when it was not kept.
    pub first_len: Option<usize>,
    /// The bytes that are not UTF-8 (each shown as U+FFFD), when there are any.
    pub invalid_utf8: Option<InvalidUtf8>,
    /// UTF-16 recognised in the first bytes ([`encoding::sniff_utf16`]): the caller decodes
    /// the file and scans the text instead ([`encoding::rescan_utf16`]).
    pub utf16: Option<Utf16>,
    /// The encoding the scanned text was decoded from, when not UTF-8.
    pub decoded_from: Option<Utf16>,
}

impl Scan {
    /// Whether `read_file` shows this file as binary: a NUL in the sample, or (workspace
    /// contract) an image or PDF. Source: `_read_file`, _toolset.py (0.62.0).
    pub fn is_binary_read(&self) -> bool {
        self.binary || self.media_type.is_some()
    }
}

/// The media type of an image or PDF, from its leading bytes (at least 12 of them when the
/// file has that many): PNG, JPEG, GIF, WebP, PDF; `None` for anything else. The bytes
/// decide, never the name. Source: `sniff_media_type`, filesystem/_content.py (0.62.0).
pub fn sniff_media_type(data: &[u8]) -> Option<&'static str> {
    if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if data.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if data.starts_with(b"RIFF") && data.get(8..12) == Some(b"WEBP") {
        Some("image/webp")
    } else if data.starts_with(b"%PDF-") {
        Some("application/pdf")
    } else {
        None
    }
}

/// Up to the first [`HEX_PREVIEW_BYTES`] of a file as offset-prefixed rows of 16 bytes
/// (`00000000  00 01 ...\n`), then `... (N more bytes)\n` when the file is longer; with
/// `max_chars`, only the rows that fit (58 chars each). `head` holds the file's first bytes,
/// `size` is its length. Source: `hex_preview`, filesystem/_content.py (0.62.0).
pub fn hex_preview(head: &[u8], size: u64, max_chars: Option<usize>) -> String {
    let limit = match max_chars {
        None => HEX_PREVIEW_BYTES,
        Some(m) => HEX_PREVIEW_BYTES.min(m / HEX_ROW_CHARS * 16),
    };
    let shown = &head[..head.len().min(limit)];
    let mut out = String::with_capacity(shown.len().div_ceil(16) * HEX_ROW_CHARS + 32);
    for (row, bytes) in shown.chunks(16).enumerate() {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        out.push_str(&format!("{:08x}  {}\n", row * 16, hex.join(" ")));
    }
    if size > shown.len() as u64 {
        out.push_str(&format!("... ({} more bytes)\n", size - shown.len() as u64));
    }
    out
}

fn number_width(n: usize) -> usize {
    let digits = n.checked_ilog10().map_or(1, |d| d as usize + 1);
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
    /// `spec.rendered`: the kept lines, and where the line in progress starts in it once begun.
    body: Body,
    cur_mark: Option<usize>,
    first_len: Option<usize>,
    /// A kept line could not grow: memory ran out (the read is refused, [`too_big_to_read`]).
    out_of_room: bool,
}

/// The retry for a read whose window does not fit in memory (issue 19): a Rust allocation
/// failure would abort the interpreter.
pub fn too_big_to_read() -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        "The file is too big to read in memory at once. Read it in parts with offset and \
         limit, or inspect a byte range with a shell command."
            .to_string(),
    )
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
            body: Body::default(),
            cur_mark: None,
            first_len: None,
            out_of_room: false,
        }
    }

    /// Picks up counting at `from` (a checkpoint of an earlier pass over the same bytes).
    fn resume(spec: WindowSpec, from: Checkpoint) -> Self {
        let mut lines = Lines::new(spec);
        lines.line_idx = from.line;
        lines.cur_nonempty = from.nonempty;
        lines.pending_cr = from.pending_cr;
        lines
    }

    /// The counting state at byte `offset`, where the bytes fed so far end.
    fn checkpoint(&self, offset: u64) -> Checkpoint {
        Checkpoint {
            offset,
            line: self.line_idx,
            nonempty: self.cur_nonempty,
            pending_cr: self.pending_cr,
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
                let kept = if self.spec.rendered {
                    if self.cur_mark.is_none() {
                        self.body.start_line(number);
                    }
                    self.body.finish_line(self.cur_chars);
                    self.body.len()
                } else {
                    let text =
                        String::from_utf8(std::mem::take(&mut self.cur_buf)).unwrap_or_default();
                    self.lines.push(WindowLine {
                        text,
                        chars: self.cur_chars,
                    });
                    self.lines.len()
                };
                self.used += rendered;
                if kept >= self.spec.limit {
                    self.done = true;
                }
            } else {
                if let Some(mark) = self.cur_mark {
                    self.body.truncate(mark);
                }
                self.done = true;
            }
        }
        self.cur_mark = None;
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
                    if let Some(mark) = self.cur_mark.take() {
                        self.body.truncate(mark);
                    }
                    return;
                }
            }
            if self.spec.rendered {
                if self.cur_mark.is_none() {
                    self.cur_mark = Some(self.body.mark());
                    self.out_of_room |= !self.body.start_line(number);
                }
                self.out_of_room |= !self.body.push(seg);
            } else if self.cur_buf.try_reserve(seg.len()).is_ok() {
                self.cur_buf.extend_from_slice(seg);
            } else {
                self.out_of_room = true;
            }
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
            let rare = !self.newline_only() && has_rare_terminator(block);
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

    /// The workspace contract ends lines at `\n` only (`split_lines`, 0.62.0).
    fn newline_only(&self) -> bool {
        self.spec.contract.is_workspace()
    }

    fn past_window(&self) -> bool {
        self.done || self.line_idx >= self.spec.offset.saturating_add(self.spec.limit)
    }

    /// Counts the lines of `s` without keeping any.
    fn bulk(&mut self, s: &[u8]) {
        if self.newline_only() {
            self.line_idx += memchr::memchr_iter(b'\n', s).count();
            self.cur_nonempty = match memchr::memrchr(b'\n', s) {
                Some(last) => last + 1 < s.len(),
                None => true,
            };
            return;
        }
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

/// Where a pass may pick up counting lines: the byte offset of a UTF-8 sequence boundary and
/// the line state there. A sparse list of them (one every few hundred KiB) is the line-offset
/// index a re-read of an unchanged file starts from ([`crate::fs::read::cache`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Checkpoint {
    /// Byte offset in the file.
    pub offset: u64,
    /// Lines finished before it.
    pub line: usize,
    /// Whether the line in progress there already holds text.
    pub nonempty: bool,
    /// Document contract: the line in progress ends with a `\r` a `\n` may still join.
    pub pending_cr: bool,
}

impl Checkpoint {
    /// Whether a window starting at line `offset` can be read from here: the line in
    /// progress there is before the window, or the window's first line starts here.
    pub fn precedes(&self, offset: usize) -> bool {
        self.line < offset || (self.line == offset && !self.nonempty && !self.pending_cr)
    }
}

/// Most checkpoints a pass keeps: past it, every other one is dropped and the stride doubles.
pub const MAX_CHECKPOINTS: usize = 1024;

/// The length of a trailing UTF-8 sequence `b` ends inside of (0 to 3 bytes): carried to the
/// next chunk, so every chunk decodes on its own exactly as the whole stream would. Decoding
/// restarts at every byte that is not a continuation byte, so chunks split there agree with a
/// whole-stream decode.
fn incomplete_tail(b: &[u8]) -> usize {
    let n = b.len();
    for back in 1..=n.min(3) {
        let c = b[n - back];
        if c & 0xC0 == 0x80 {
            continue;
        }
        return match std::str::from_utf8(&b[n - back..]) {
            Err(e) if e.valid_up_to() == 0 && e.error_len().is_none() => back,
            _ => 0,
        };
    }
    0
}

/// What a full pass found beyond [`Scan`]: the line-offset index.
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// Checkpoints in file order, the first at offset 0, at most [`MAX_CHECKPOINTS`].
    pub checkpoints: Vec<Checkpoint>,
}

impl Index {
    fn new() -> Self {
        Index {
            checkpoints: vec![Checkpoint::default()],
        }
    }

    /// The last checkpoint a window starting at line `offset` can be read from.
    pub fn start_for(&self, offset: usize) -> Checkpoint {
        self.checkpoints
            .iter()
            .rev()
            .find(|c| c.precedes(offset))
            .copied()
            .unwrap_or_default()
    }
}

/// Records one checkpoint every `stride` chunk boundaries, thinning to stay under
/// [`MAX_CHECKPOINTS`].
struct Recorder {
    index: Index,
    stride: usize,
    seen: usize,
}

impl Recorder {
    fn record(&mut self, at: Checkpoint) {
        self.seen += 1;
        if !self.seen.is_multiple_of(self.stride) {
            return;
        }
        if self.index.checkpoints.len() >= MAX_CHECKPOINTS {
            let mut k = 0;
            self.index.checkpoints.retain(|_| {
                k += 1;
                k % 2 == 1
            });
            self.stride *= 2;
            if !self.seen.is_multiple_of(self.stride) {
                return;
            }
        }
        self.index.checkpoints.push(at);
    }
}

/// How [`scan_with`] runs: hash on a second thread (`piped`, for a big file), keep the
/// line-offset index (`index`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanOptions {
    /// Hash on a second thread while reading and counting on this one.
    pub piped: bool,
    /// Record the [`Index`].
    pub index: bool,
}

/// Scans everything `reader` yields: size, binary, hash, line count and the window; under
/// the workspace contract also the media type, the hex-preview head and an image's bytes.
///
/// Memory: the window lines plus one chunk (plus an image or PDF up to [`MAX_MEDIA_BYTES`]
/// with `keep_media`). Polls `cancel` per chunk.
/// Errors: I/O errors as `Err(io)` in the outer result; `Cancelled` in the inner one.
pub fn scan(
    reader: &mut impl Read,
    window: WindowSpec,
    cancel: &CancelFlag,
) -> std::io::Result<Result<Scan>> {
    Ok(scan_with(reader, window, cancel, ScanOptions::default())?.map(|(scan, _)| scan))
}

/// [`scan`] with [`ScanOptions`]: also returns the line-offset [`Index`] (only its start
/// without `index`). Chunks are cut on UTF-8 sequence boundaries (an incomplete sequence at a
/// chunk's end is carried to the next), so each decodes on its own; a valid chunk is hashed and
/// counted in place, only an invalid one is decoded into a copy.
pub fn scan_with(
    reader: &mut impl Read,
    window: WindowSpec,
    cancel: &CancelFlag,
    options: ScanOptions,
) -> std::io::Result<Result<(Scan, Index)>> {
    let workspace = window.contract.is_workspace();
    let mut sink = if options.piped {
        HashSink::piped()
    } else {
        HashSink::inline(READ_CHUNK)
    };
    let mut buf = sink.buffer();
    let mut lines = Lines::new(window);
    let mut recorder = Recorder {
        index: Index::new(),
        stride: 1,
        seen: 0,
    };
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
    let utf16 = encoding::sniff_utf16(&buf[..filled]);
    let mut invalid: Option<InvalidUtf8> = None;
    let (media_type, head) = if workspace {
        let head = &buf[..filled];
        (
            sniff_media_type(head),
            head[..filled.min(HEX_PREVIEW_BYTES)].to_vec(),
        )
    } else {
        (None, Vec::new())
    };
    let mut media = (window.keep_media && media_type.is_some()).then(Vec::new);
    // `buf[..carry]` is the incomplete sequence the previous chunk ended in; `buf[..len]` the
    // chunk; `at` the file offset of `buf[0]`.
    let mut carry = 0usize;
    let mut len = filled;
    let mut at = 0u64;
    loop {
        if cancel.is_cancelled() {
            return Ok(Err(Error::cancelled()));
        }
        if len == carry {
            // End of file: an incomplete last sequence decodes as U+FFFD.
            if carry > 0 {
                let tail = decode_marked(&buf[..carry], &mut lines, &mut invalid);
                if !workspace {
                    sink.hash_owned(tail);
                }
            }
            sink.recycle(buf);
            break;
        }
        size += (len - carry) as u64;
        if let Some(kept) = media.as_mut() {
            if size <= MAX_MEDIA_BYTES {
                kept.extend_from_slice(&buf[carry..len]);
            } else {
                media = None;
            }
        }
        let mut next_carry = [0u8; 3];
        let mut next_len = 0;
        if binary {
            sink.hash_range(buf, 0, len);
        } else {
            let cut = len - incomplete_tail(&buf[..len]);
            next_len = len - cut;
            next_carry[..next_len].copy_from_slice(&buf[cut..len]);
            let valid = std::str::from_utf8(&buf[..cut]).is_ok();
            let decoded = if valid {
                lines.feed(&buf[..cut]);
                None
            } else {
                Some(decode_marked(&buf[..cut], &mut lines, &mut invalid))
            };
            if lines.out_of_room {
                return Ok(Err(too_big_to_read()));
            }
            if options.index {
                recorder.record(lines.checkpoint(at + cut as u64));
            }
            at += cut as u64;
            match (workspace, decoded) {
                (true, _) => sink.hash_range(buf, carry, len),
                (false, None) => sink.hash_range(buf, 0, cut),
                (false, Some(text)) => {
                    sink.hash_owned(text);
                    sink.recycle(buf);
                }
            }
        }
        buf = sink.buffer();
        buf[..next_len].copy_from_slice(&next_carry[..next_len]);
        carry = next_len;
        len = carry + read_some(reader, &mut buf[carry..])?;
    }
    let total_lines = if binary { 0 } else { lines.finish() };
    let index = recorder.index;
    Ok(Ok((
        Scan {
            size,
            binary,
            media_type,
            head,
            media,
            hash: sink.finish(),
            total_lines,
            lines: lines.lines,
            body: lines.body,
            first_len: lines.first_len,
            invalid_utf8: invalid,
            utf16,
            decoded_from: None,
        },
        index,
    )))
}

/// `bytes` decoded as `String::from_utf8_lossy` does (each undecodable sequence one U+FFFD),
/// fed to `lines` piece by piece so each such sequence is counted with its line
/// ([`note_invalid`]); returns the decoded bytes.
fn decode_marked(bytes: &[u8], lines: &mut Lines, invalid: &mut Option<InvalidUtf8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 16);
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid().as_bytes();
        if !valid.is_empty() {
            lines.feed(valid);
            out.extend_from_slice(valid);
        }
        if !chunk.invalid().is_empty() {
            let piece = note_invalid(invalid, lines, chunk.invalid());
            lines.feed(piece);
            out.extend_from_slice(piece);
        }
    }
    out
}

/// Counts an undecodable sequence (its first byte and line kept for the first one) and
/// returns the U+FFFD that stands for it.
fn note_invalid(invalid: &mut Option<InvalidUtf8>, lines: &Lines, bytes: &[u8]) -> &'static [u8] {
    match invalid {
        Some(i) => i.count += 1,
        None => {
            *invalid = Some(InvalidUtf8 {
                byte: bytes[0],
                line: lines.line_idx + 1 + usize::from(lines.pending_cr),
                count: 1,
            })
        }
    }
    "\u{FFFD}".as_bytes()
}

/// What [`scan_window`] keeps: the window lines (one each, or rendered in a [`Body`], as
/// [`WindowSpec::rendered`] says) and the first line's length.
pub type KeptWindow = (Vec<WindowLine>, Body, Option<usize>);

/// The window of a text file already counted, read from `from` (where `reader` is
/// positioned): the kept lines and the first line's length, stopping once past the window
/// (or at the end). No hash, no count past the window.
///
/// Errors: I/O errors as `Err(io)` in the outer result; `Cancelled` in the inner one.
pub fn scan_window(
    reader: &mut impl Read,
    window: WindowSpec,
    from: Checkpoint,
    cancel: &CancelFlag,
) -> std::io::Result<Result<KeptWindow>> {
    let mut lines = Lines::resume(window, from);
    let mut buf = vec![0u8; READ_CHUNK];
    let mut carry = 0usize;
    loop {
        if cancel.is_cancelled() {
            return Ok(Err(Error::cancelled()));
        }
        if lines.past_window() {
            break;
        }
        let len = carry + read_some(reader, &mut buf[carry..])?;
        if len == carry {
            if carry > 0 {
                lines.feed(String::from_utf8_lossy(&buf[..carry]).as_bytes());
            }
            lines.finish();
            break;
        }
        let cut = len - incomplete_tail(&buf[..len]);
        match std::str::from_utf8(&buf[..cut]) {
            Ok(_) => lines.feed(&buf[..cut]),
            Err(_) => lines.feed(String::from_utf8_lossy(&buf[..cut]).as_bytes()),
        }
        buf.copy_within(cut..len, 0);
        carry = len - cut;
    }
    Ok(Ok((lines.lines, lines.body, lines.first_len)))
}

fn read_some(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match reader.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// The number of lines in `text` under `contract`: `len(text.splitlines())` (document) or
/// the `\n`-split count (workspace, `split_lines` in 0.62.0): `\n`s plus an unterminated
/// last line.
pub fn line_count(text: &str, contract: Contract) -> usize {
    match contract {
        Contract::Document => crate::fs::text::split_lines(text).len(),
        Contract::Workspace => {
            let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
            newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
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
    /// Whose line ends, hash and binary results apply.
    pub contract: Contract,
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
            contract: self.contract,
            keep_media: true,
            rendered: true,
        }
    }

    /// Chars left for the body after `header` and the longest notice, or none without
    /// `max_read_chars`. Source: `_body_budget`, _toolset.py.
    fn body_budget(&self, header: &str) -> Option<usize> {
        self.max_read_chars
            .map(|m| m.saturating_sub(header.chars().count() + NOTICE_CHARS))
    }
}

/// An image or PDF `read_file` returns as file content: its media type and bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    /// `image/png`, `image/jpeg`, `image/gif`, `image/webp` or `application/pdf`.
    pub media_type: &'static str,
    /// The whole file.
    pub data: Vec<u8>,
}

/// The workspace contract's `read_file` result for a binary file (`scan.is_binary_read()`):
/// the header `[<label> | <type> | N bytes | hash:H]\n`, then for an image or PDF up to
/// [`MAX_MEDIA_BYTES`] the file itself as [`Media`] (the text is the header alone), for a
/// larger one `Too large to view: the limit is 5000000 bytes.\n`, and for any other binary
/// `Binary file; the first bytes in hex:\n` with the [`hex_preview`] in the budget left.
/// `<type>` is the sniffed media type, else `guessed_type` (Python's
/// `mimetypes.guess_type(path)[0]`, which the caller supplies), else
/// `application/octet-stream`. Source: `_read_binary`, _toolset.py (0.62.0).
pub fn render_binary(
    path: &str,
    scan: &mut Scan,
    spec: &ReadSpec,
    guessed_type: Option<&str>,
) -> (String, Option<Media>) {
    let label = label_of(path, spec.max_read_chars);
    let shown_type = scan
        .media_type
        .or(guessed_type)
        .unwrap_or("application/octet-stream");
    let hash = if spec.content_hashes {
        format!(" | hash:{}", scan.hash)
    } else {
        String::new()
    };
    let header = format!("[{label} | {shown_type} | {} bytes{hash}]\n", scan.size);
    let Some(media_type) = scan.media_type else {
        let text = header + "Binary file; the first bytes in hex:\n";
        let preview = hex_preview(&scan.head, scan.size, spec.body_budget(&text));
        return (text + &preview, None);
    };
    match scan.media.take() {
        Some(data) if scan.size <= MAX_MEDIA_BYTES => (header, Some(Media { media_type, data })),
        _ => (
            format!("{header}Too large to view: the limit is {MAX_MEDIA_BYTES} bytes.\n"),
            None,
        ),
    }
}

pub(crate) fn label_of(path: &str, max_read_chars: Option<usize>) -> String {
    let path = &*crate::fs::text::names::shown_path(path);
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
    render_with(path, scan, spec, None)
}

/// [`render`], the result built in the scan's rendered window itself ([`Body::into_text`]):
/// no copy of the lines, no second buffer. Leaves `scan.body` empty.
pub fn render_owned(path: &str, scan: &mut Scan, spec: &ReadSpec) -> Result<String> {
    let body = std::mem::take(&mut scan.body);
    render_with(path, scan, spec, Some(body))
}

fn render_with(path: &str, scan: &Scan, spec: &ReadSpec, owned: Option<Body>) -> Result<String> {
    let head = header(
        path,
        scan.total_lines,
        &scan.hash,
        spec.content_hashes,
        spec.max_read_chars,
    );
    let note = encoding::read_note(scan);
    let budget = spec
        .body_budget(&head)
        .map(|b| b.saturating_sub(note.chars().count()));
    let total = scan.total_lines;
    if total == 0 {
        return Ok(head + "(empty file)\n" + &note);
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
    let body = owned.as_ref().unwrap_or(&scan.body);
    let from_body = !body.is_empty();
    let kept_chars = |i: usize| {
        if from_body {
            body.chars(i)
        } else {
            scan.lines.get(i).map(|l| l.chars)
        }
    };
    let mut shown = 0usize;
    let mut left = budget;
    let wanted = spec.limit.min(total - spec.offset);
    for i in 0..wanted {
        let number = spec.offset + i + 1;
        let kept = kept_chars(i);
        let chars = match kept {
            Some(c) => c,
            None if i == 0 => scan.first_len.unwrap_or(usize::MAX),
            None => usize::MAX,
        };
        let rendered = number_width(number).saturating_add(1).saturating_add(chars);
        let fits = match left {
            Some(b) => rendered <= b && kept.is_some(),
            None => kept.is_some(),
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
                    )
                    + &note);
            }
            break;
        }
        shown += 1;
        if let Some(b) = left.as_mut() {
            *b -= rendered;
        }
    }
    let mut text = if from_body {
        match owned {
            Some(body) => body.into_text(&head, shown).ok_or_else(too_big_to_read)?,
            None => head.clone() + body.rendered(shown),
        }
    } else {
        // One buffer for the whole result, sized up front: no regrowth, no header + body copy.
        let kept: usize = scan.lines[..shown].iter().map(|l| l.text.len() + 8).sum();
        let mut text = String::with_capacity(head.len() + kept + NOTICE_CHARS);
        text.push_str(&head);
        for (i, line) in scan.lines[..shown].iter().enumerate() {
            use std::fmt::Write as _;
            let _ = write!(text, "{:>6}\t", spec.offset + i + 1);
            text.push_str(&line.text);
        }
        text
    };
    if text.len() == head.len() || !text.ends_with('\n') {
        text.push('\n');
    }
    let remaining = total - (spec.offset + shown);
    if remaining > 0 {
        let next = spec.offset + shown;
        text.push_str(&format!(
            "... ({remaining} more lines. Use offset={next} to continue reading.)\n"
        ));
    }
    text.push_str(&note);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::read::hash::short_hex;
    use crate::fs::text::split_lines_keepends;
    use sha2::{Digest, Sha256};

    fn spec(offset: usize, limit: usize, max_read_chars: Option<usize>) -> ReadSpec {
        ReadSpec {
            offset,
            limit,
            max_read_chars,
            content_hashes: true,
            contract: Contract::Document,
        }
    }

    fn workspace(offset: usize, limit: usize, max_read_chars: Option<usize>) -> ReadSpec {
        ReadSpec {
            contract: Contract::Workspace,
            ..spec(offset, limit, max_read_chars)
        }
    }

    /// 0.62.0's `split_lines`: split on `\n` only, keeping each one.
    fn split_newlines(text: &str) -> Vec<&str> {
        text.split_inclusive('\n').collect()
    }

    /// The reference algorithm over a whole in-memory text, for cross-checking.
    fn reference(path: &str, data: &[u8], s: &ReadSpec) -> Result<String> {
        let text = String::from_utf8_lossy(data).into_owned();
        let (lines, hash) = match s.contract {
            Contract::Document => (
                split_lines_keepends(&text),
                crate::fs::read::hash::content_hash(data),
            ),
            Contract::Workspace => (
                split_newlines(&text),
                crate::fs::read::hash::bytes_hash(data),
            ),
        };
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

    /// A reader of `data` that returns at most `.1` bytes a call, as a pipe may.
    struct Chunked<'a>(&'a [u8], usize);

    impl Read for Chunked<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn ours(path: &str, data: &[u8], s: &ReadSpec, chunk: usize) -> Result<String> {
        let scan_as = |rendered: bool| {
            let mut window = s.window(path);
            window.rendered = rendered;
            scan(&mut Chunked(data, chunk), window, &CancelFlag::new()).unwrap()
        };
        let mut scan = scan_as(true)?;
        assert!(!scan.binary);
        // Kept per line (as for clipping) or rendered as read: the same result.
        let per_line = render(path, &scan_as(false)?, s);
        let copied = render(path, &scan, s);
        let owned = render_owned(path, &mut scan, s);
        let key = |r: &Result<String>| r.as_ref().map_err(|e| e.message.clone()).cloned();
        assert_eq!(key(&per_line), key(&copied));
        assert_eq!(key(&copied), key(&owned));
        owned
    }

    /// The bytes of `line(0) + line(1) + ... + line(n - 1)`.
    fn lines(n: usize, line: impl Fn(usize) -> String) -> Vec<u8> {
        (0..n).map(line).collect::<String>().into_bytes()
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
            lines(15000, |i| match i % 5 {
                0 => format!("crlf {i}\r"),
                _ => format!("crlf {i}\r\n"),
            }),
            lines(20000, |i| format!("row {i}\n")),
            lines(20000, |i| match i % 997 {
                0 => format!("r\r{i}\u{2028}"),
                _ => format!("row {i}\n"),
            }),
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
        let both = specs.iter().flat_map(|s| {
            [
                *s,
                ReadSpec {
                    contract: Contract::Workspace,
                    ..*s
                },
            ]
        });
        let specs: Vec<ReadSpec> = both.collect();
        for text in &texts {
            for s in &specs {
                let expected = reference("f.txt", text, s);
                for chunk in [1, 2, 3, 7, 8192, 1 << 20] {
                    let got = ours("f.txt", text, s, chunk);
                    match (&expected, &got) {
                        // Not UTF-8: the same result and a note, which takes its room from
                        // the window under max_read_chars.
                        (Ok(e), Ok(g)) if std::str::from_utf8(text).is_err() => {
                            let at = g.find("[Not valid UTF-8: ");
                            assert!(at.is_some() || is_binary(text), "{g:?}");
                            if s.max_read_chars.is_none() {
                                assert_eq!(&g[..at.unwrap_or(g.len())], e);
                            }
                        }
                        (Ok(e), Ok(g)) => assert_eq!(g, e, "{text:?} {s:?} chunk {chunk}"),
                        (Err(_), Err(g)) => assert_eq!(g.kind, ErrorKind::OffsetPastEnd),
                        _ => panic!("{text:?} {s:?} {expected:?} {got:?}"),
                    }
                }
            }
        }
    }

    /// A piped pass finds what an inline one does, and a window read from any checkpoint that
    /// precedes it (the re-read of a cached file) holds the lines a full pass keeps.
    #[test]
    fn piped_and_resumed_scans_agree() {
        let texts: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"a\r\nb\rc\r\r\nd\x0be\x0cf\x1cg\x1dh\x1ei".to_vec(),
            "uni\u{85}code\u{2028}sep\u{2029}end\n\u{e9}\u{20ac}\u{1F600}\r\n"
                .repeat(40)
                .into_bytes(),
            b"bad \xff\xfe bytes\n\xe2\x82\nlast\xf0\x9f".repeat(30),
            (0..3000)
                .map(|i| match i % 7 {
                    0 => format!("cr {i}\r"),
                    1 => format!("crlf {i}\r\n"),
                    2 => format!("u {i}\u{2028}"),
                    _ => format!("row {i} \u{e9}\n"),
                })
                .collect::<String>()
                .into_bytes(),
        ];
        let cancel = CancelFlag::new();
        for text in &texts {
            for contract in [Contract::Document, Contract::Workspace] {
                for (offset, limit, chars) in [
                    (0, 2000, None),
                    (1, 3, None),
                    (57, 40, None),
                    (57, 40, Some(400)),
                    (1500, 2000, Some(3000)),
                    (2999, 5, None),
                ] {
                    let s = ReadSpec {
                        contract,
                        ..spec(offset, limit, chars)
                    };
                    let window = s.window("f");
                    let whole = scan(&mut &text[..], window, &cancel).unwrap().unwrap();
                    for chunk in [1, 5, 64, 1 << 20] {
                        let options = ScanOptions {
                            piped: chunk == 64,
                            index: true,
                        };
                        let (got, index) =
                            scan_with(&mut Chunked(text, chunk), window, &cancel, options)
                                .unwrap()
                                .unwrap();
                        assert_eq!(
                            (
                                &got.hash,
                                got.total_lines,
                                &got.lines,
                                &got.body,
                                got.first_len
                            ),
                            (
                                &whole.hash,
                                whole.total_lines,
                                &whole.lines,
                                &whole.body,
                                whole.first_len
                            ),
                            "{text:?} {s:?} chunk {chunk}"
                        );
                        assert!(index.checkpoints.len() <= MAX_CHECKPOINTS);
                        if offset >= whole.total_lines {
                            continue;
                        }
                        let usable: Vec<_> = index
                            .checkpoints
                            .iter()
                            .filter(|c| c.precedes(offset))
                            .collect();
                        let step = usable.len() / 8 + 1;
                        // The last one (what a re-read uses) and a spread of earlier ones.
                        let picked = usable.iter().rev().step_by(step);
                        for from in picked {
                            let rest = &text[from.offset as usize..];
                            let (lines, body, first_len) =
                                scan_window(&mut Chunked(rest, chunk), window, **from, &cancel)
                                    .unwrap()
                                    .unwrap();
                            assert_eq!(
                                (&lines, &body, first_len),
                                (&whole.lines, &whole.body, whole.first_len),
                                "{text:?} {s:?} chunk {chunk} from {from:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn incomplete_tails() {
        assert_eq!(incomplete_tail(b"abc"), 0);
        assert_eq!(incomplete_tail(b"ab\xe2\x82"), 2);
        assert_eq!(incomplete_tail(b"ab\xe2"), 1);
        assert_eq!(incomplete_tail(b"\xf0\x9f\x98"), 3);
        assert_eq!(incomplete_tail(b"\xf0\x9f\x98\x80"), 0);
        // Not a sequence's valid start: decoded (as U+FFFD) where it stands, never carried.
        assert_eq!(incomplete_tail(b"a\xff"), 0);
        assert_eq!(incomplete_tail(b"a\xe2\x41"), 0);
        assert_eq!(incomplete_tail(b"\xed\xa0"), 0);
        assert_eq!(incomplete_tail(b"\x80\x80\x80"), 0);
    }

    #[test]
    fn index_stays_bounded_and_even() {
        let text: String = (0..200_000).map(|i| format!("{i}\n")).collect();
        let cancel = CancelFlag::new();
        let options = ScanOptions {
            piped: false,
            index: true,
        };
        struct Chunked<'a>(&'a [u8]);
        impl Read for Chunked<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(100).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let window = WindowSpec::count_only(Contract::Workspace);
        let (scan, index) = scan_with(&mut Chunked(text.as_bytes()), window, &cancel, options)
            .unwrap()
            .unwrap();
        assert_eq!(scan.total_lines, 200_000);
        let c = &index.checkpoints;
        assert!(
            c.len() <= MAX_CHECKPOINTS && c.len() > MAX_CHECKPOINTS / 2,
            "{}",
            c.len()
        );
        assert_eq!(c[0], Checkpoint::default());
        // After the first chunk (the 8192-byte binary sample), evenly spaced.
        let gap = c[2].offset - c[1].offset;
        assert!(c[1..].windows(2).all(|w| w[1].offset - w[0].offset == gap));
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

    /// Scans `data` with `spec`'s window and renders it as `read_file` does for that contract.
    fn read_as(
        path: &str,
        data: &[u8],
        s: &ReadSpec,
        guessed: Option<&str>,
    ) -> (String, Option<Media>) {
        let mut scan = scan(&mut &data[..], s.window(path), &CancelFlag::new())
            .unwrap()
            .unwrap();
        if scan.is_binary_read() {
            render_binary(path, &mut scan, s, guessed)
        } else {
            (render(path, &scan, s).unwrap(), None)
        }
    }

    /// Expected strings produced with pydantic-ai-harness 0.62.0 (`toolset.read_file` on a
    /// `LocalWorkspaceBackend`) on the same bytes.
    #[test]
    fn workspace_contract_matches_062() {
        let w = workspace(0, 2000, None);
        let text = |path: &str, data: &[u8]| read_as(path, data, &w, None).0;
        assert_eq!(
            text("cr.txt", b"a\rb\rc"),
            "[cr.txt | 1 lines | hash:d6979e20541e]\n     1\ta\rb\rc\n"
        );
        assert_eq!(
            text("crlf.txt", b"x\r\ny\n\x0cz\n"),
            "[crlf.txt | 3 lines | hash:b12233669e4f]\n     1\tx\r\n     2\ty\n     3\t\x0cz\n"
        );
        assert_eq!(
            text("bad.txt", b"bad \xff\xfe\nok\n"),
            "[bad.txt | 2 lines | hash:164842486aa6]\n     1\tbad \u{FFFD}\u{FFFD}\n     2\tok\n\
             [Not valid UTF-8: 2 byte sequences shown as \u{FFFD}, the first (0xff) on line 1; \
             edit_file keeps such bytes as they are.]\n"
        );
        let bin: Vec<u8> = (0..11).collect();
        assert_eq!(
            text("bin.dat", &bin),
            "[bin.dat | application/octet-stream | 11 bytes | hash:78a6273103d1]\n\
             Binary file; the first bytes in hex:\n00000000  00 01 02 03 04 05 06 07 08 09 0a\n"
        );
        let long: Vec<u8> = (0..100).collect();
        assert_eq!(
            text("long.bin", &long),
            "[long.bin | application/octet-stream | 100 bytes | hash:bce0aff19cf5]\n\
             Binary file; the first bytes in hex:\n\
             00000000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f\n\
             00000010  10 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f\n\
             00000020  20 21 22 23 24 25 26 27 28 29 2a 2b 2c 2d 2e 2f\n\
             00000030  30 31 32 33 34 35 36 37 38 39 3a 3b 3c 3d 3e 3f\n\
             ... (36 more bytes)\n"
        );
        // The name's `mimetypes` type is the caller's; the bytes alone decide image or not.
        assert_eq!(
            read_as("a.zip", b"PK\x00\x03", &w, Some("application/zip")).0,
            "[a.zip | application/zip | 4 bytes | hash:65f383897f64]\n\
             Binary file; the first bytes in hex:\n00000000  50 4b 00 03\n"
        );
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend([0u8; 61]);
        assert_eq!(
            read_as("pic.png", &png, &w, Some("image/png")),
            (
                "[pic.png | image/png | 69 bytes | hash:909babfeef10]\n".to_string(),
                Some(Media {
                    media_type: "image/png",
                    data: png.clone()
                })
            )
        );
        // A PDF with no NUL is still sent as a file, and a misnamed image by its bytes.
        let pdf = b"%PDF-1.4\nhello\n";
        assert_eq!(
            read_as("doc.pdf", pdf, &w, None),
            (
                "[doc.pdf | application/pdf | 15 bytes | hash:76b4a08e9ce9]\n".to_string(),
                Some(Media {
                    media_type: "application/pdf",
                    data: pdf.to_vec()
                })
            )
        );
        assert_eq!(
            read_as("notes.txt", &png, &w, Some("text/plain")).0,
            "[notes.txt | image/png | 69 bytes | hash:909babfeef10]\n"
        );
        // `max_read_chars=300` leaves no room for a hex row.
        let tight = workspace(0, 2000, Some(300));
        assert_eq!(
            read_as("long.bin", &long, &tight, None).0,
            "[long.bin | application/octet-stream | 100 bytes | hash:bce0aff19cf5]\n\
             Binary file; the first bytes in hex:\n... (100 more bytes)\n"
        );
        // The document's contract is unchanged.
        assert_eq!(
            read_as("cr.txt", b"a\rb\rc", &spec(0, 2000, None), None).0,
            "[cr.txt | 3 lines | hash:d6979e20541e]\n     1\ta\r     2\tb\r     3\tc\n"
        );
        let doc = scan(
            &mut &png[..],
            spec(0, 2000, None).window("p"),
            &CancelFlag::new(),
        )
        .unwrap()
        .unwrap();
        assert!(doc.binary && doc.media_type.is_none() && doc.media.is_none());
    }

    /// A file over 0.62.0's 64 MiB read limit still reads by window in one streaming pass:
    /// the header counts every line and hashes every byte, and only the window is kept.
    #[test]
    fn reads_past_64_mib_by_window() {
        struct Lines(u64, u64);
        impl Read for Lines {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                // 16-byte lines `line 0000000001\n` until `self.1` lines were produced.
                let mut n = 0;
                while n + 16 <= buf.len() && self.0 < self.1 {
                    buf[n..n + 16].copy_from_slice(format!("line {:010}\n", self.0).as_bytes());
                    self.0 += 1;
                    n += 16;
                }
                Ok(n)
            }
        }
        let total = (64u64 << 20) / 16 + 1000;
        let mut digest = Sha256::new();
        let mut all = Lines(0, total);
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = all.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            digest.update(&buf[..n]);
        }
        let s = workspace(total as usize - 2, 5, None);
        let scan = scan(
            &mut Lines(0, total),
            s.window("big.log"),
            &CancelFlag::new(),
        )
        .unwrap()
        .unwrap();
        assert!(scan.size > 64 << 20);
        assert_eq!(scan.body.len(), 2);
        assert_eq!(
            render("big.log", &scan, &s).unwrap(),
            format!(
                "[big.log | {total} lines | hash:{}]\n{:>6}\tline {:010}\n{:>6}\tline {:010}\n",
                short_hex(digest.finalize().as_slice()),
                total - 1,
                total - 2,
                total,
                total - 1
            )
        );
    }

    #[test]
    fn line_counts_per_contract() {
        for (text, document, workspace) in [
            ("", 0, 0),
            ("a", 1, 1),
            ("a\n", 1, 1),
            ("a\rb\rc", 3, 1),
            ("x\r\ny\n\x0cz", 4, 3),
            ("\n\n", 2, 2),
            ("a\u{2028}b\n", 2, 1),
        ] {
            assert_eq!(line_count(text, Contract::Document), document, "{text:?}");
            assert_eq!(line_count(text, Contract::Workspace), workspace, "{text:?}");
            assert_eq!(split_newlines(text).len(), workspace, "{text:?}");
        }
    }

    #[test]
    fn media_sniffing_and_limits() {
        assert_eq!(sniff_media_type(b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
        assert_eq!(sniff_media_type(b"GIF87a.."), Some("image/gif"));
        assert_eq!(sniff_media_type(b"GIF89a"), Some("image/gif"));
        assert_eq!(sniff_media_type(b"RIFF\0\0\0\0WEBP"), Some("image/webp"));
        assert_eq!(sniff_media_type(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(sniff_media_type(b"\x89PNG\r\n"), None);
        assert_eq!(sniff_media_type(b"%PDF"), None);
        // Over 5 MB: described, not sent; the hash still covers every byte.
        let mut big = b"%PDF-1.7\n".to_vec();
        big.resize(MAX_MEDIA_BYTES as usize + 1, b'x');
        let w = workspace(0, 2000, None);
        let (text, media) = read_as("big.pdf", &big, &w, None);
        assert_eq!(media, None);
        assert_eq!(
            text,
            format!(
                "[big.pdf | application/pdf | 5000001 bytes | hash:{}]\n\
                 Too large to view: the limit is 5000000 bytes.\n",
                crate::fs::read::hash::bytes_hash(&big)
            )
        );
        big.truncate(MAX_MEDIA_BYTES as usize);
        assert_eq!(read_as("big.pdf", &big, &w, None).1.unwrap().data, big);
        // Hashes off: no hash in the header.
        let unhashed = ReadSpec {
            content_hashes: false,
            ..w
        };
        assert_eq!(
            read_as("b", b"\0", &unhashed, None).0,
            "[b | application/octet-stream | 1 bytes]\nBinary file; the first bytes in hex:\n00000000  00\n"
        );
    }
}
