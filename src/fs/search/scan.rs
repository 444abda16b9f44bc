//! One file of `search_files`, streamed: the file is read in steps cut at line ends, each
//! step decoded and matched with the line numbers it starts at, so memory stays bounded
//! whatever the file's size and the results equal one pass over the whole decoded text.
//! A step whose only `str.splitlines()` terminator is `\n` (most text) is cut into lines
//! with `memchr`, as the `\n`-only rule does; a file over 64 KiB is
//! sampled for the binary check before a whole step is read.
//! Files that are not regular, or live on a pseudo-filesystem (`/proc`, `/sys`, ...), are
//! not read at all.

use std::borrow::Cow;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::cancel::CancelFlag;
use crate::fs::read::hash::{is_binary, BINARY_SAMPLE};
use crate::fs::root::path::{fstat, is_reg};
use crate::fs::search::hits::Hits;
use crate::fs::search::lines::{newline_hits, splitlines_hits};
use crate::fs::text::pattern::Pattern;
use crate::fs::text::{count_terminators, ends_terminator, has_rare_terminator, terminator_at};

/// Bytes read per step (a step ends at the last line end it holds).
pub const STEP: usize = 256 << 10;

/// Steps above this size start with a read of the binary sample alone (a smaller file is
/// read whole at once, its sample with it).
const SAMPLE_FIRST: usize = 64 << 10;

/// Longest line held whole (bytes): holding a longer one would make memory follow the file.
/// A longer line is searched in windows of this size overlapping by the longest match the
/// pattern can make, and shown by its first [`LONG_LINE_CHARS`] chars (as `rg --max-columns
/// 4096 --max-columns-preview` shows a long line); with a pattern whose matches have no bound
/// on their length, or that looks around, it is passed over and counted (`long_lines`).
pub const MAX_LINE_BYTES: usize = 32 << 20;

/// Chars of an over-long matching line shown, before [`LONG_LINE_MARK`].
pub const LONG_LINE_CHARS: usize = 4096;

/// What follows the shown start of an over-long matching line.
pub const LONG_LINE_MARK: &str = " [... omitted end of long line]";

/// An over-long line being passed: its shown start, and whether it matched yet.
struct LongLine {
    head: String,
    matched: bool,
    /// Bytes kept between windows (the longest match and a split char); `None`: the
    /// pattern cannot be searched in windows.
    overlap: Option<usize>,
}

impl LongLine {
    fn new(buf: &[u8], pattern: &Pattern) -> Self {
        let start = &buf[..buf.len().min(LONG_LINE_CHARS * 4)];
        let head: String = String::from_utf8_lossy(start)
            .chars()
            .take(LONG_LINE_CHARS)
            .collect();
        LongLine {
            head,
            matched: false,
            overlap: pattern.max_match_bytes().map(|n| n.saturating_add(4)),
        }
    }

    /// Searches the window `text` (part of the line, no terminator) unless matched already.
    fn search(&mut self, window: &[u8], ls: &LineSearch<'_>) {
        if self.matched || self.overlap.is_none() {
            return;
        }
        if ls.pre.is_some_and(|p| !p.is_match(window)) {
            return;
        }
        self.matched = ls.pattern.is_match(&String::from_utf8_lossy(window));
    }
}

/// `buf[..end]` without the line terminator it ends with.
fn without_terminator(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    for n in [3, 2, 1] {
        if end >= n && crate::fs::text::terminator_at(line, end - n) == Some(n) {
            end -= n;
            break;
        }
    }
    &line[..end]
}

/// The read sizes of one file's search.
#[derive(Clone, Copy)]
struct Steps {
    /// Bytes read per step (at least [`BINARY_SAMPLE`]).
    step: usize,
    /// Longest line searched.
    max_line: usize,
}

impl Steps {
    /// A file of about `size` bytes: a small one is read whole in one step (`size + 1`:
    /// the read that sees its end).
    fn sized(size: usize) -> Self {
        Steps {
            step: size.saturating_add(1).clamp(BINARY_SAMPLE, STEP),
            max_line: MAX_LINE_BYTES,
        }
    }
}

/// How one file's lines are matched: the pattern, its literal prefilter and the contract's
/// line rule (`newline_only`: lines end at `\n` only, the workspace contract).
#[derive(Clone, Copy)]
pub struct LineSearch<'a> {
    /// The compiled pattern.
    pub pattern: &'a Pattern,
    /// Literals every match holds, scanned for first.
    pub pre: Option<&'a regex::bytes::Regex>,
    /// Lines end at `\n` only (one `\r` before it dropped); else `str.splitlines()` lines.
    pub newline_only: bool,
    /// Polled per step: a cancelled search stops reading a long file.
    pub cancel: Option<&'a CancelFlag>,
    /// Counts the files passed over as binary (`FileSystem(report_skipped=True)`).
    pub binary: Option<&'a AtomicUsize>,
    /// Counts the lines longer than [`MAX_LINE_BYTES`] that could not be searched (the
    /// pattern's matches have no bound on their length, or it looks around).
    pub long_lines: Option<&'a AtomicUsize>,
}

/// Filesystems whose files are generated on read (sizes lie, reads may never end).
const PSEUDO_MAGICS: [u32; 9] = [
    0x9fa0,      // proc
    0x6265_6572, // sysfs
    0x6462_6720, // debugfs
    0x7472_6163, // tracefs
    0x7363_6673, // securityfs
    0x6367_7270, // cgroup2
    0x0027_e0eb, // cgroup
    0xcafe_4a11, // bpf
    0x6165_676c, // pstore
];

/// Whether the open file `fd` lives on a pseudo-filesystem (by `fstatfs` magic).
pub fn is_pseudo_fs(fd: RawFd) -> bool {
    crate::fs::root::pseudo::fs_magic(fd).is_some_and(|m| PSEUDO_MAGICS.contains(&m))
}

/// Remembers the last device's answer, so a walk asks `fstatfs` once per filesystem met.
#[derive(Default)]
pub struct PseudoCache {
    last: Option<(libc::dev_t, bool)>,
}

impl PseudoCache {
    /// Whether `fd` (whose `fstat` gave `dev`) is on a pseudo-filesystem.
    pub fn is_pseudo(&mut self, fd: RawFd, dev: libc::dev_t) -> bool {
        match self.last {
            Some((d, answer)) if d == dev => answer,
            _ => {
                let answer = is_pseudo_fs(fd);
                self.last = Some((dev, answer));
                answer
            }
        }
    }
}

/// Per-thread state of one search: the read buffer, the pseudo-filesystem cache and this
/// thread's copies of the search's pattern and prefilter (made on first use; the engines'
/// match scratch space is contended when threads share one copy).
#[derive(Default)]
pub struct Scratch {
    buf: Vec<u8>,
    pseudo: PseudoCache,
    own: Option<(Pattern, Option<regex::bytes::Regex>)>,
}

/// Reads once into `buf`'s spare capacity (at least `want` bytes of room; no more than
/// `want` bytes when `exact`); 0 at end of file.
fn read_some(fd: RawFd, buf: &mut Vec<u8>, want: usize, exact: bool) -> io::Result<usize> {
    buf.reserve(want);
    loop {
        let spare = buf.spare_capacity_mut();
        let room = if exact { want } else { spare.len() };
        // SAFETY: reading into uninitialized capacity; only the bytes read are exposed.
        let n = unsafe { libc::read(fd, spare.as_mut_ptr().cast(), room) };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        // SAFETY: the kernel initialized n bytes past len.
        unsafe { buf.set_len(buf.len() + n as usize) };
        return Ok(n as usize);
    }
}

/// Reads until `buf` holds `target` bytes or the file ends (no further when `exact`, else
/// as far as the buffer's room allows); returns whether it ended.
fn fill(fd: RawFd, buf: &mut Vec<u8>, target: usize, exact: bool) -> io::Result<bool> {
    while buf.len() < target {
        if read_some(fd, buf, target - buf.len(), exact)? == 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The end of the last whole line in `s[from..]` (a cut that splits no line and no
/// terminator), when the file goes on past `s`.
fn last_cut(s: &[u8], from: usize, newline_only: bool) -> Option<usize> {
    if let Some(p) = memchr::memrchr(b'\n', &s[from..]) {
        return Some(from + p + 1);
    }
    if newline_only || !crate::fs::text::has_rare_terminator(&s[from..]) {
        return None;
    }
    // A `\r` last could be the first half of `\r\n`.
    let end = s.len() - usize::from(s.last() == Some(&b'\r'));
    (from..end)
        .rev()
        .find(|&k| ends_terminator(s, k))
        .map(|k| k + 1)
}

/// The end of the first line end in `s` (its terminator included), when it is known whole.
fn first_line_end(s: &[u8], eof: bool, newline_only: bool) -> Option<usize> {
    if newline_only {
        return memchr::memchr(b'\n', s).map(|p| p + 1);
    }
    let (p, n) = crate::fs::text::next_terminator(s, 0)?;
    // `\r` last: whether `\n` follows is not known yet.
    (eof || p + n < s.len() || s[p] != b'\r').then_some(p + n)
}

/// Whether `\n` is the only `str.splitlines()` terminator in `s` (valid UTF-8).
fn only_newlines(s: &[u8]) -> bool {
    let mut at = 0;
    s.chunks(4096).all(|block| {
        let base = at;
        at += block.len();
        // Bytes that could start another terminator are checked one by one.
        !has_rare_terminator(block)
            || (base..at).all(|j| s[j] == b'\n' || terminator_at(s, j).is_none())
    })
}

impl LineSearch<'_> {
    /// Matches `text` (whole lines), numbering its first line `first`; pushes results into
    /// `out` while it holds fewer than `limit`. Returns `None` once a further match was
    /// dropped, else the number of lines `text` held (when `count`; else 0).
    fn lines(
        &self,
        text: &str,
        label: &str,
        first: usize,
        limit: usize,
        out: &mut Hits,
        count: bool,
    ) -> Option<usize> {
        // With `\n` the only terminator, `\n` lines are the `str.splitlines()` lines (and
        // hold no `\r` to drop): found with `memchr`, counted on the way.
        if self.newline_only || only_newlines(text.as_bytes()) {
            return newline_hits(text, self.pattern, self.pre, label, limit, first, out);
        }
        let dropped = splitlines_hits(text, self.pattern, self.pre, label, limit, first, out);
        match (dropped, count) {
            (true, _) => None,
            (false, true) => Some(count_terminators(text.as_bytes())),
            (false, false) => Some(0),
        }
    }

    /// Matches a step of raw bytes (whole lines) starting at line `first`; returns `None`
    /// once the cap was passed, else the number of lines it held (when `count`).
    fn step(
        &self,
        raw: &[u8],
        label: &str,
        first: usize,
        limit: usize,
        out: &mut Hits,
        count: bool,
    ) -> Option<usize> {
        // No literal in the raw bytes: no line can match (the decode only adds U+FFFD).
        let may_match = self.pre.is_none_or(|p| p.is_match(raw));
        // Nothing to match: no decode for the count of `\n` (a decode neither adds nor
        // drops one) or for no count at all (a file's last step).
        match (may_match, count, self.newline_only) {
            (false, false, _) => return Some(0),
            (false, true, true) => return Some(memchr::memchr_iter(b'\n', raw).count()),
            _ => {}
        }
        let text = match std::str::from_utf8(raw) {
            Ok(text) => Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(raw),
        };
        if may_match {
            self.lines(&text, label, first, limit, out, count)
        } else {
            Some(count_terminators(text.as_bytes()))
        }
    }

    /// Searches the open file `fd` (named `label` in results): its first `limit + 1`
    /// matching lines (the extra one tells the caller the cap was passed). A file that is
    /// not regular, lives on a pseudo-filesystem, cannot be read or looks binary (a NUL in
    /// its first [`BINARY_SAMPLE`] bytes) gives nothing.
    pub fn file(&self, fd: RawFd, label: &str, limit: usize, scratch: &mut Scratch) -> Hits {
        let mut out = Hits::default();
        let Ok(st) = fstat(fd) else { return out };
        if !is_reg(st.st_mode) || scratch.pseudo.is_pseudo(fd, st.st_dev) {
            return out;
        }
        let (pattern, pre) = scratch
            .own
            .get_or_insert_with(|| (self.pattern.clone(), self.pre.cloned()));
        let own = LineSearch {
            pattern,
            pre: pre.as_ref(),
            ..*self
        };
        let buf = &mut scratch.buf;
        buf.clear();
        let size = st.st_size.max(0) as usize;
        let _ = own.stream(fd, Steps::sized(size), label, limit + 1, buf, &mut out);
        if buf.capacity() > 4 * STEP {
            *buf = Vec::new();
        }
        out
    }

    fn stream(
        &self,
        fd: RawFd,
        steps: Steps,
        label: &str,
        limit: usize,
        buf: &mut Vec<u8>,
        out: &mut Hits,
    ) -> io::Result<()> {
        let Steps { step, max_line } = steps;
        buf.reserve(step);
        // A file bigger than a few samples is sampled first: a binary one is then left after
        // one sample's read, not a whole step's.
        let mut eof = fill(fd, buf, BINARY_SAMPLE, step > SAMPLE_FIRST)?;
        if is_binary(buf) {
            if let Some(binary) = self.binary {
                binary.fetch_add(1, Ordering::Relaxed);
            }
            return Ok(());
        }
        // `first`: the number of the line at `buf[0]`; `clean`: `buf[..clean]` holds no cut.
        let (mut first, mut clean) = (1usize, 0usize);
        let mut skipping: Option<LongLine> = None;
        loop {
            if self.cancel.is_some_and(CancelFlag::is_cancelled) {
                return Ok(());
            }
            if !eof {
                // Whole steps: a line longer than a step grows the buffer a step at a time.
                let target = if buf.len() < step {
                    step
                } else {
                    buf.len() + step
                };
                eof = fill(fd, buf, target, false)?;
            }
            if let Some(long) = skipping.as_mut() {
                // Inside an over-long line: searched in windows, dropped up to its end.
                let end = first_line_end(buf, eof, self.newline_only);
                let last = end.is_some() || eof;
                let window = end.unwrap_or(buf.len());
                let overlap = long.overlap.unwrap_or(0);
                long.search(without_terminator(&buf[..window]), self);
                if last {
                    if long.matched {
                        let mut text = std::mem::take(&mut long.head);
                        text.push_str(LONG_LINE_MARK);
                        out.push(label, first, &text);
                    } else if long.overlap.is_none() {
                        if let Some(count) = self.long_lines {
                            count.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    skipping = None;
                    if out.len() >= limit {
                        return Ok(());
                    }
                }
                match end {
                    Some(end) => {
                        buf.drain(..end);
                        first += 1;
                        clean = 0;
                    }
                    None if eof => return Ok(()),
                    None => {
                        // Keep a tail that could start a terminator, or hold a match.
                        let keep = buf.len().min(overlap.max(2));
                        buf.drain(..buf.len() - keep);
                    }
                }
                continue;
            }
            if eof {
                self.step(buf, label, first, limit, out, false);
                return Ok(());
            }
            match last_cut(buf, clean.saturating_sub(2), self.newline_only) {
                Some(cut) => {
                    let Some(lines) = self.step(&buf[..cut], label, first, limit, out, true) else {
                        return Ok(());
                    };
                    first += lines;
                    buf.drain(..cut);
                    clean = 0;
                }
                None if buf.len() >= max_line => {
                    // Searched as the first window once the loop comes back to it.
                    skipping = Some(LongLine::new(buf, self.pattern));
                }
                None => clean = buf.len(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::search::lines::{matching_lines, matching_newline_lines};
    use crate::fs::text::pattern::prefilter;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    /// The stream's matches of `data` read in `step`-byte steps.
    fn streamed(data: &[u8], ls: &LineSearch<'_>, step: usize, max_line: usize) -> Vec<String> {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(data).unwrap();
        let fd = std::fs::File::open(f.path()).unwrap();
        let (mut buf, mut out) = (Vec::new(), Hits::default());
        ls.stream(
            fd.as_raw_fd(),
            Steps { step, max_line },
            "f",
            1000,
            &mut buf,
            &mut out,
        )
        .unwrap();
        out.into_lines()
    }

    /// `pieces` picked at random until about 200 KB; `rare` (if any) once in `every` picks.
    fn random_text(pieces: &[&[u8]], rare: Option<(&[u8], u64)>) -> Vec<u8> {
        let mut out = Vec::new();
        let mut seed = 7u64;
        while out.len() < 200_000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            match rare {
                Some((piece, every)) if (seed >> 20).is_multiple_of(every) => {
                    out.extend_from_slice(piece)
                }
                _ => out.extend_from_slice(pieces[(seed >> 33) as usize % pieces.len()]),
            }
        }
        out
    }

    /// Lines of every terminator kind, some straddling step boundaries, and invalid UTF-8.
    fn corpus() -> Vec<u8> {
        random_text(
            &[
                b"TODO a\n",
                b"b TODO\r\n",
                b"c\rTODO d",
                b"\x0bTODO\x0c",
                "x\u{2028}TODO y\u{2029}".as_bytes(),
                "\u{85}TODO z".as_bytes(),
                b"\xff\xfeTODO \xc2\n",
                b"\x1c\x1d\x1eTODO",
                b"\r",
                b"\n",
                b"no match at all here ",
                b"\xe2\x80TODO\xe2\x80\xa8",
            ],
            None,
        )
    }

    /// `\n` lines only, with bytes that start other terminators elsewhere (`\xc2`, `\xe2`)
    /// in characters that are not terminators, and invalid UTF-8; with `rare`, a `\r\n`
    /// line now and then, so some steps hold another terminator and others do not.
    fn newline_corpus(rare: bool) -> Vec<u8> {
        random_text(
            &[
                b"TODO a\n",
                b"end TODO\n",
                "b TODO \u{a9}\n".as_bytes(),
                "\u{2014}TODO\u{2027} y\n".as_bytes(),
                b"\xff\xfeTODO \xc2\n",
                b"\xe2\x80TODO z",
                b"\n",
                b"no match at all here ",
            ],
            rare.then_some((b"TODO crlf\r\n".as_slice(), 3000)),
        )
    }

    /// Streaming in any step size gives exactly the one-pass result, both line rules,
    /// with and without the literal prefilter, whether or not the text holds terminators
    /// besides `\n` (`\n`-only steps take the `memchr` lines).
    #[test]
    fn streamed_equals_one_pass() {
        for data in [corpus(), newline_corpus(false), newline_corpus(true)] {
            let text = String::from_utf8_lossy(&data);
            for pat in ["TODO", "^TODO", "TODO$", "z$|^b", "(?<=TODO) [ay]"] {
                let p = Pattern::new(pat).unwrap();
                let pre = prefilter(pat);
                for (newline_only, pre) in [
                    (false, pre.as_ref()),
                    (false, None),
                    (true, pre.as_ref()),
                    (true, None),
                ] {
                    let ls = LineSearch {
                        pattern: &p,
                        pre,
                        newline_only,
                        cancel: None,
                        binary: None,
                        long_lines: None,
                    };
                    let whole = if newline_only {
                        matching_newline_lines(&text, &p, pre, "f", 1000).0
                    } else {
                        matching_lines(&text, &p, pre, "f", 1000).0
                    };
                    assert!(whole.len() > 100, "{pat}");
                    for step in [BINARY_SAMPLE, BINARY_SAMPLE + 1, 10_007, STEP] {
                        let got = streamed(&data, &ls, step, MAX_LINE_BYTES);
                        assert_eq!(got, whole, "{pat} {step} {newline_only}");
                    }
                }
            }
        }
    }

    #[test]
    fn only_newlines_sees_every_other_terminator() {
        assert!(only_newlines(b""));
        assert!(only_newlines(
            "a\n\u{a9}\u{2014}\u{2027}\u{e9}\n".as_bytes()
        ));
        for t in [
            "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\u{85}", "\u{2028}", "\u{2029}",
        ] {
            // Past the first block too.
            for pad in [0, 5000] {
                let text = format!("{}a{t}b\n", "x".repeat(pad));
                assert!(!only_newlines(text.as_bytes()), "{t:?} {pad}");
            }
        }
    }

    /// A line longer than the line bound is searched in windows and shown by its start (as
    /// `rg --max-columns-preview`), or, for a pattern that cannot be searched in windows,
    /// passed over and counted; the lines after it keep their numbers.
    #[test]
    fn over_long_line_is_searched_in_windows_or_counted() {
        let mut data = b"TODO one\r".to_vec();
        data.extend(std::iter::repeat_n(b'x', 100_000));
        data.extend_from_slice(b"TODO long\r\nTODO three\n");
        let xs = "x".repeat(LONG_LINE_CHARS);
        for (pattern, windowed) in [("TODO", true), ("TO(D|DD)O", true), ("TODO.*", false)] {
            let p = Pattern::new(pattern).unwrap();
            for newline_only in [false, true] {
                let long = AtomicUsize::new(0);
                let ls = LineSearch {
                    pattern: &p,
                    pre: None,
                    newline_only,
                    cancel: None,
                    binary: None,
                    long_lines: Some(&long),
                };
                let got = streamed(&data, &ls, BINARY_SAMPLE, 50_000);
                let expected: Vec<String> = match (newline_only, windowed) {
                    // One `\n` line holds the `\r` and the long run.
                    (true, true) => vec![
                        format!(
                            "f:1:TODO one\r{}{LONG_LINE_MARK}",
                            &xs[..LONG_LINE_CHARS - 9]
                        ),
                        "f:2:TODO three".into(),
                    ],
                    (true, false) => vec!["f:2:TODO three".into()],
                    (false, true) => vec![
                        "f:1:TODO one".into(),
                        format!("f:2:{xs}{LONG_LINE_MARK}"),
                        "f:3:TODO three".into(),
                    ],
                    (false, false) => vec!["f:1:TODO one".into(), "f:3:TODO three".into()],
                };
                assert_eq!(got, expected, "{pattern} {newline_only}");
                assert_eq!(long.into_inner(), usize::from(!windowed), "{pattern}");
            }
        }
        // A match cut by a window's end is found in the next window (the overlap).
        for at in [49_990, 50_000, 50_003, 306_140, 306_150] {
            let mut data = vec![b'y'; 400_000];
            data[at..at + 6].copy_from_slice(b"needle");
            data.push(b'\n');
            let p = Pattern::new("needle").unwrap();
            let ls = LineSearch {
                pattern: &p,
                pre: None,
                newline_only: true,
                cancel: None,
                binary: None,
                long_lines: None,
            };
            let got = streamed(&data, &ls, BINARY_SAMPLE, 50_000);
            assert_eq!(got.len(), 1, "{at}");
        }
    }
}
