//! A session's transcript between two reads: the cleaned text ([`clean`](super::clean)), its two
//! ends kept in memory, and, once it is longer than a result shows, the whole of it in a spill
//! file beside the shell tools' (`output-<32 hex>-stdout.log`), bounded by `max_log_bytes` as a
//! job's log is (emptied to the notice, then what follows), keeping the output's end (at least
//! half of what fits under the cap).
//!
//! The file is written as the text arrives (by whichever thread reads the terminal), so memory
//! stays bounded however much the program prints. A read ([`Transcript::take`]) keeps the file
//! when the result cannot show all of the text, and removes it otherwise; text that outgrew the
//! result but not the threshold is written then. Kept files stay until
//! [`Transcript::remove_files`].

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use super::clean::Cleaner;
use crate::process::logcap;
use crate::process::tail::HeadTail;

/// Where and when a transcript spills.
#[derive(Debug, Clone)]
pub struct SpillSpec {
    /// The directory of the spill files (the shell's `.pydantic-ai-harness/shell`).
    pub dir: PathBuf,
    /// Bytes of cleaned text after which the window is written to a file as it arrives (at
    /// most the head kept in memory, so nothing is lost before the file starts).
    pub after: u64,
    /// `max_log_bytes`: a file that would grow past it is emptied to the notice.
    pub limit: Option<u64>,
}

/// A spill file a read kept.
#[derive(Debug, Clone)]
pub struct Spilled {
    /// The file.
    pub path: PathBuf,
    /// Whether `max_log_bytes` emptied it (it then starts with the notice).
    pub cleared: bool,
    /// Bytes of the output it holds (after the notice when `cleared`): its end.
    pub held: u64,
}

/// The text of one window, as a read hands it over.
#[derive(Debug)]
pub struct Taken {
    /// The first bytes (all of the text unless `truncated`).
    pub head: Vec<u8>,
    /// The last bytes (empty unless `truncated`).
    pub tail: Vec<u8>,
    /// Bytes of cleaned text in total.
    pub total: u64,
    /// Newlines in total.
    pub lines: u64,
    /// Whether bytes between `head` and `tail` were dropped.
    pub truncated: bool,
    /// The file holding all of the text, when the result cannot show it all.
    pub spill: Option<Spilled>,
}

struct SpillFile {
    path: PathBuf,
    file: File,
    size: u64,
    cleared: bool,
    /// Bytes of output it holds (`size` less the notice).
    body: u64,
}

impl SpillFile {
    /// A new file with a fresh name in `dir`; `None` when it cannot be created.
    fn create(dir: &std::path::Path) -> Option<SpillFile> {
        let mut id = [0u8; 16];
        // SAFETY: getrandom into our own buffer.
        let got = unsafe { libc::getrandom(id.as_mut_ptr().cast(), id.len(), 0) };
        if got != id.len() as isize {
            return None;
        }
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let path = dir.join(format!("output-{hex}-stdout.log"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(&path)
            .ok()?;
        Some(SpillFile {
            path,
            file,
            size: 0,
            cleared: false,
            body: 0,
        })
    }

    /// Appends `chunk`, or, when that would take the file past `limit`, empties it to the notice
    /// followed by the output's end: about the last `want = max(chunk, room / 2)` bytes of what
    /// the file held and `chunk` (`room` being what fits under `limit` after the notice),
    /// starting at a line's start where one lies within them: the latest one keeping at least
    /// `want` bytes and at most `1.5 * want` (and `room`), else the first one after, else a
    /// character's start. As a job's log is emptied and then holds what follows, except that
    /// the read which passed the cap is not dropped whole, so the file always ends with the
    /// latest output and holds about half of what fits; each clear rewrites at most three times
    /// what the next one's input will be, so the cost stays linear in the output.
    fn append(&mut self, chunk: &[u8], limit: Option<u64>) -> std::io::Result<()> {
        let after = self.size + chunk.len() as u64;
        let Some(limit) = limit.filter(|&l| after > l) else {
            self.file.write_all(chunk)?;
            self.size = after;
            self.body += chunk.len() as u64;
            return Ok(());
        };
        let notice = format!("{}\n", logcap::notice(limit));
        let room = limit.saturating_sub(notice.len() as u64) as usize;
        let want = chunk.len().max(room / 2).min(room);
        let most = (want + want / 2).min(room);
        // What the file holds after its notice (if any), the end of which may precede `chunk`,
        // with the byte before it when there is one (to tell whether it starts a line).
        let body_start = if self.cleared { notice.len() as u64 } else { 0 };
        let earlier = most.saturating_sub(chunk.len()) as u64;
        let from = self.size.saturating_sub(earlier).max(body_start);
        let look = u64::from(from > body_start);
        let mut kept = vec![0u8; (self.size - from + look) as usize];
        {
            use std::os::unix::fs::FileExt;
            self.file.read_exact_at(&mut kept, from - look)?;
        }
        kept.extend_from_slice(chunk);
        // The file's first byte starts a line when nothing was cleared yet.
        let at_line = if look == 1 {
            kept[0] == b'\n'
        } else {
            !self.cleared
        };
        let text = &kept[look as usize..];
        let kept = &text[end_start(text, want, most, at_line)..];
        self.file.set_len(0)?;
        self.file.write_all(notice.as_bytes())?;
        self.file.write_all(kept)?;
        self.size = (notice.len() + kept.len()) as u64;
        self.body = kept.len() as u64;
        self.cleared = true;
        Ok(())
    }
}

/// Where the kept end of `text` starts: the latest line start leaving between `want` and
/// `most` bytes, else the first line start after that leaves some text, else the start of the
/// last `want` bytes moved to a character's first byte. `at_line`: whether `text[0]` starts a
/// line.
fn end_start(text: &[u8], want: usize, most: usize, at_line: bool) -> usize {
    let len = text.len();
    let (lo, hi) = (len.saturating_sub(most), len.saturating_sub(want));
    // A line starts at `s > 0` when `text[s - 1]` is a newline.
    if let Some(i) = memchr::memrchr(b'\n', &text[lo.saturating_sub(1)..hi]) {
        return lo.saturating_sub(1) + i + 1;
    }
    if lo == 0 && at_line {
        return 0;
    }
    if hi + 1 < len {
        if let Some(i) = memchr::memchr(b'\n', &text[hi..len - 1]) {
            return hi + i + 1;
        }
    }
    len - fitting_end(text, want).len()
}

/// The last `room` bytes of `text` at most, starting at a character's first byte.
fn fitting_end(text: &[u8], room: usize) -> &[u8] {
    let mut start = text.len().saturating_sub(room);
    while start < text.len() && text[start] & 0xc0 == 0x80 {
        start += 1;
    }
    &text[start..]
}

/// The transcript of the current window and the spill files kept so far.
pub struct Transcript {
    cleaner: Cleaner,
    kept: HeadTail,
    head_bytes: usize,
    tail_bytes: usize,
    spill: Option<SpillSpec>,
    file: Option<SpillFile>,
    /// A spill file of this window could not be created or written: the result names none.
    failed: bool,
    /// Files reads kept, for [`Transcript::remove_files`].
    files: Vec<PathBuf>,
    scratch: Vec<u8>,
}

impl Transcript {
    /// Keeps the first `head_bytes` and last `tail_bytes` of each window in memory; with
    /// `spill`, writes long windows to files (`spill.after` is lowered to `head_bytes`).
    pub fn new(head_bytes: usize, tail_bytes: usize, spill: Option<SpillSpec>) -> Transcript {
        let spill = spill.map(|s| SpillSpec {
            after: s.after.min(head_bytes as u64),
            ..s
        });
        Transcript {
            cleaner: Cleaner::new(),
            kept: HeadTail::new(head_bytes, tail_bytes, None),
            head_bytes,
            tail_bytes,
            spill,
            file: None,
            failed: false,
            files: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Adds raw terminal output to the window.
    pub fn push(&mut self, raw: &[u8]) {
        let mut text = std::mem::take(&mut self.scratch);
        text.clear();
        self.cleaner.feed(raw, &mut text);
        self.push_text(&text);
        self.scratch = text;
    }

    fn push_text(&mut self, text: &[u8]) {
        if text.is_empty() {
            return;
        }
        if let Some((after, limit)) = self.spill.as_ref().map(|s| (s.after, s.limit)) {
            if self.file.is_none() && !self.failed && self.kept.total() + text.len() as u64 > after
            {
                // Everything so far is in the head (the threshold is at most its size).
                let head = self.kept.head().to_vec();
                self.open_with(&head);
            }
            if let Some(file) = &mut self.file {
                if file.append(text, limit).is_err() {
                    self.drop_file();
                }
            }
        }
        self.kept.push(text);
    }

    /// Starts this window's file holding `text`; on failure, the window names no file.
    fn open_with(&mut self, text: &[u8]) {
        let Some(spec) = &self.spill else { return };
        let Some(mut file) = SpillFile::create(&spec.dir) else {
            self.failed = true;
            return;
        };
        let written = file.append(text, spec.limit);
        self.file = Some(file);
        if written.is_err() {
            self.drop_file();
        }
    }

    fn drop_file(&mut self) {
        if let Some(file) = self.file.take() {
            let _ = std::fs::remove_file(&file.path);
        }
        self.failed = true;
    }

    /// Ends the window and starts a new one. The file is kept (and named) when the text is
    /// longer than `room` chars (`None`: any length fits) or was cut in memory, else removed.
    pub fn take(&mut self, room: Option<usize>) -> Taken {
        let mut text = std::mem::take(&mut self.scratch);
        text.clear();
        self.cleaner.finish(&mut text);
        self.push_text(&text);
        self.scratch = text;
        let kept = std::mem::replace(
            &mut self.kept,
            HeadTail::new(self.head_bytes, self.tail_bytes, None),
        );
        let (total, lines, truncated) = (kept.total(), kept.lines(), kept.is_truncated());
        let (mut head, mut tail) = kept.into_parts();
        if truncated {
            trim_cut_chars(&mut head, &mut tail);
        } else {
            head.append(&mut tail);
        }
        let longer = |room: usize| {
            let chars = head.iter().filter(|&&b| b & 0xc0 != 0x80).count();
            chars > room
        };
        let needed = truncated || room.is_some_and(longer);
        if needed && self.file.is_none() && !self.failed && !truncated {
            self.open_with(&head);
        }
        let spill = match self.file.take() {
            Some(file) if needed => {
                self.files.push(file.path.clone());
                Some(Spilled {
                    path: file.path,
                    cleared: file.cleared,
                    held: file.body,
                })
            }
            Some(file) => {
                let _ = std::fs::remove_file(&file.path);
                None
            }
            None => None,
        };
        self.failed = false;
        Taken {
            head,
            tail,
            total,
            lines,
            truncated,
            spill,
        }
    }

    /// Removes the spill files reads kept (and this window's), returning how many were removed.
    pub fn remove_files(&mut self) -> usize {
        if let Some(file) = self.file.take() {
            self.files.push(file.path);
        }
        self.files
            .drain(..)
            .filter(|p| std::fs::remove_file(p).is_ok())
            .count()
    }
}

/// Drops the bytes of a character the cut split: the end of `head`, the start of `tail`.
fn trim_cut_chars(head: &mut Vec<u8>, tail: &mut Vec<u8>) {
    if let Some(start) = head.iter().rposition(|&b| b & 0xc0 != 0x80) {
        let width = match head[start] {
            b if b < 0x80 => 1,
            b if b >= 0xf0 => 4,
            b if b >= 0xe0 => 3,
            _ => 2,
        };
        if head.len() - start < width {
            head.truncate(start);
        }
    }
    let lead = tail.iter().take_while(|&&b| b & 0xc0 == 0x80).count();
    tail.drain(..lead);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spilling(dir: &std::path::Path, after: u64, limit: Option<u64>) -> Transcript {
        Transcript::new(
            64,
            64,
            Some(SpillSpec {
                dir: dir.to_path_buf(),
                after,
                limit,
            }),
        )
    }

    fn files(dir: &std::path::Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    }

    #[test]
    fn a_long_window_is_spilled_whole_and_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = spilling(dir.path(), 32, None);
        let mut expected = String::new();
        for i in 0..100 {
            t.push(format!("\x1b[1mline {i}\x1b[0m\r\n").as_bytes());
            expected.push_str(&format!("line {i}\n"));
        }
        let taken = t.take(Some(40));
        assert!(taken.truncated);
        assert_eq!(taken.total, expected.len() as u64);
        assert_eq!(taken.lines, 100);
        let spilled = taken.spill.unwrap();
        assert!(!spilled.cleared);
        let name = spilled.path.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("output-") && name.ends_with("-stdout.log") && name.len() == 50,
            "{name}"
        );
        assert_eq!(std::fs::read_to_string(&spilled.path).unwrap(), expected);
        // The next window starts anew, with no file while it is short.
        t.push(b"short\r\n");
        let taken = t.take(Some(40));
        assert_eq!(
            (taken.head, taken.spill.is_none()),
            (b"short\n".to_vec(), true)
        );
        assert_eq!(t.remove_files(), 1);
        assert!(files(dir.path()).is_empty());
    }

    #[test]
    fn a_window_the_result_shows_whole_keeps_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = spilling(dir.path(), 8, None);
        t.push("ééééééééééé\r\n".as_bytes()); // 23 bytes, 12 chars: past the threshold, within the room
        let taken = t.take(Some(12));
        assert!(taken.spill.is_none() && !taken.truncated);
        assert!(files(dir.path()).is_empty());
        // Under the threshold but longer than the room: written at the read.
        t.push(b"0123456\r\n");
        let taken = t.take(Some(4));
        let path = taken.spill.unwrap().path;
        assert_eq!(std::fs::read(path).unwrap(), b"0123456\n");
    }

    #[test]
    fn max_log_bytes_empties_the_file_to_the_notice() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = spilling(dir.path(), 32, Some(100));
        for i in 0..50 {
            t.push(format!("line {i}\n").as_bytes());
        }
        t.push(b"end\n");
        let spilled = t.take(Some(40)).spill.unwrap();
        assert!(spilled.cleared);
        let notice = format!("{}\n", logcap::notice(100));
        let text = std::fs::read_to_string(&spilled.path).unwrap();
        assert!(text.len() <= 100, "{text}");
        // The notice, then the output's end: the line that passed the cap and what followed.
        let body = text.strip_prefix(&notice).unwrap();
        assert!(body.ends_with("line 49\nend\n"), "{text}");
        // Small reads past the cap: the file still holds at least half of what fits.
        assert!(body.len() >= (100 - notice.len()) / 2, "{text}");
        let all: String = (0..50).map(|i| format!("line {i}\n")).collect::<String>() + "end\n";
        assert!(all.ends_with(body), "{text}");
        // It starts at a line's start, and the result says how much of the end it holds.
        assert!(all[..all.len() - body.len()].ends_with('\n'), "{text}");
        assert!(body.starts_with("line "), "{text}");
        assert_eq!(spilled.held, body.len() as u64);
    }

    #[test]
    fn a_read_past_the_cap_keeps_what_fits_of_its_end() {
        // One read far past the cap (the program printed a burst): the file holds the notice and
        // as much of the read's end as fits from a line's start, never the notice alone.
        let dir = tempfile::tempdir().unwrap();
        let mut t = spilling(dir.path(), 32, Some(200));
        let text: String = (0..100).map(|i| format!("row {i:03}\n")).collect();
        t.push(text.as_bytes());
        let notice = format!("{}\n", logcap::notice(200));
        let spilled = t.take(Some(40)).spill.unwrap();
        let data = std::fs::read_to_string(&spilled.path).unwrap();
        let start = (text.len() - (200 - notice.len())).next_multiple_of(8);
        assert_eq!(data, format!("{notice}{}", &text[start..]));
        // A character the cap would split is left out whole.
        let mut t = spilling(dir.path(), 32, Some(200));
        let wide = "\u{e9}".repeat(150);
        t.push(wide.as_bytes());
        let data = std::fs::read(t.take(Some(40)).spill.unwrap().path).unwrap();
        let body = &data[notice.len()..];
        assert_eq!(body, "\u{e9}".repeat((200 - notice.len()) / 2).as_bytes());
    }

    #[test]
    fn the_kept_end_starts_at_a_line_start_where_one_exists() {
        // A line start within the window the cap keeps: the latest keeping at least `want`.
        assert_eq!(end_start(b"aaaa\nbbbb\ncccc\n", 6, 9, false), 10);
        assert_eq!(end_start(b"aaaa\nbbbb\ncccc\n", 11, 15, false), 5);
        // None within it: the first one after it, leaving some text.
        assert_eq!(end_start(b"aaaaaaaaaa\nbc", 10, 12, false), 11);
        // The text's own start, when it starts a line.
        assert_eq!(end_start(b"aaaaaaaaaaaaaa", 10, 14, true), 0);
        // No line start at all (or only at the very end): the last `want` bytes, whole characters.
        assert_eq!(end_start(b"aaaaaaaaaaaaa\n", 4, 6, false), 10);
        assert_eq!(end_start("a\u{e9}\u{e9}".as_bytes(), 2, 2, false), 3);
    }

    #[test]
    fn a_cut_character_is_dropped_from_both_ends() {
        let mut t = Transcript::new(5, 5, None);
        t.push("aaaaéxxxxxxxxé".as_bytes());
        let taken = t.take(None);
        assert!(taken.truncated);
        assert_eq!(taken.head, b"aaaa");
        assert!(std::str::from_utf8(&taken.tail).is_ok());
    }
}

#[cfg(test)]
mod speed {
    /// `cargo test --release --lib transcript_speed -- --ignored --nocapture`: cleaning and
    /// spilling cost per 64 MiB of terminal lines.
    #[test]
    #[ignore]
    fn transcript_speed() {
        let line = b"\x1b[32mline of forty characters\x1b[0m, over and over\r\n";
        let chunk: Vec<u8> = line.iter().copied().cycle().take(256 * 1024).collect();
        let dir = tempfile::tempdir().unwrap();
        for (name, spill) in [
            ("kept in memory", None),
            (
                "spilled",
                Some(super::SpillSpec {
                    dir: dir.path().to_path_buf(),
                    after: 1000,
                    limit: None,
                }),
            ),
        ] {
            let mut t = super::Transcript::new(200_000, 200_000, spill);
            let start = std::time::Instant::now();
            for _ in 0..(64 << 20) / chunk.len() {
                t.push(&chunk);
            }
            let taken = t.take(Some(1000));
            eprintln!(
                "{name}: 64 MiB in {:?} ({} bytes of text)",
                start.elapsed(),
                taken.total
            );
            t.remove_files();
        }
    }
}
